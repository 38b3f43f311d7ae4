package monitoring

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// completer writes the workers' results in batches: while one batch is being
// written the next one gathers, so a busy replica commits once per batch
// instead of once per check, and an idle one writes each result at once —
// no timer holds a result back.
type completer struct {
	store    *Store
	in       chan completeRequest
	maxBatch int
	timeout  time.Duration
}

type completeRequest struct {
	p     CompleteParams
	reply chan CompletionOutcome
}

func newCompleter(store *Store, maxBatch int) *completer {
	return &completer{store: store, in: make(chan completeRequest, maxBatch), maxBatch: maxBatch, timeout: 10 * time.Second}
}

// complete hands one result to the writer and waits for its outcome.
func (c *completer) complete(ctx context.Context, p CompleteParams) (Completion, error) {
	req := completeRequest{p: p, reply: make(chan CompletionOutcome, 1)}
	select {
	case c.in <- req:
	case <-ctx.Done():
		return Completion{}, ctx.Err()
	}
	select {
	case o := <-req.reply:
		return o.Completion, o.Err
	case <-ctx.Done():
		// The batch may still commit; if it does, the retry that follows
		// finds the job DONE and is discarded as stale.
		return Completion{}, ctx.Err()
	}
}

// run writes batches until close(c.in), then returns once the last is written.
func (c *completer) run() {
	batch := make([]completeRequest, 0, c.maxBatch)
	for first := range c.in {
		batch = append(batch[:0], first)
	gather:
		for len(batch) < c.maxBatch {
			select {
			case req, ok := <-c.in:
				if !ok {
					break gather
				}
				batch = append(batch, req)
			default:
				break gather
			}
		}
		c.write(batch)
	}
}

func (c *completer) write(batch []completeRequest) {
	ps := make([]CompleteParams, len(batch))
	for i, req := range batch {
		ps[i] = req.p
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	out, err := c.store.CompleteBatch(ctx, ps)
	cancel()
	if err == nil {
		for i, req := range batch {
			req.reply <- out[i]
		}
		return
	}
	// PostgreSQL refused the batch (a constraint, a deadlock): nothing was
	// written, so write the jobs one by one and let only the one at fault
	// fail. A lost connection would fail each of them too: report it to all.
	var pgErr *pgconn.PgError
	if len(batch) == 1 || !errors.As(err, &pgErr) {
		for _, req := range batch {
			req.reply <- CompletionOutcome{Err: err}
		}
		return
	}
	for _, req := range batch {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		comp, err := c.store.Complete(ctx, req.p)
		cancel()
		req.reply <- CompletionOutcome{Completion: comp, Err: err}
	}
}
