package monitoring

import "context"

// BatchWriter exposes the scheduler's result writer to the tests.
type BatchWriter struct{ c *completer }

func NewBatchWriter(s *Store, maxBatch int) BatchWriter {
	return BatchWriter{newCompleter(s, maxBatch)}
}

func (w BatchWriter) Complete(ctx context.Context, p CompleteParams) (Completion, error) {
	return w.c.complete(ctx, p)
}

// Run writes batches until Close.
func (w BatchWriter) Run()   { w.c.run() }
func (w BatchWriter) Close() { close(w.c.in) }

// Queued is how many results wait for the writer.
func (w BatchWriter) Queued() int { return len(w.c.in) }

// The hot path's statements, for the plan test.
const (
	EnqueueDueSQL    = enqueueDueSQL
	ClaimSQL         = claimSQL
	CompleteRoundSQL = completeRoundSQL
	RenewSQL         = renewSQL
	RetrySQL         = retrySQL
	ReleaseSQL       = releaseSQL
	FailExhaustedSQL = failExhaustedSQL
)
