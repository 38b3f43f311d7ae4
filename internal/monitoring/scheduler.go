package monitoring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// SchedulerConfig is one replica's share of the scheduler settings.
type SchedulerConfig struct {
	Instance    Instance
	Workers     int
	Lease       time.Duration
	Poll        time.Duration // idle claim polling
	MaxAttempts int
	RetryBase   time.Duration
	RetryCap    time.Duration
	// Spread places each service's check at a fixed offset within its slot,
	// below min(Spread, 80% of the interval); 0 makes every job due at the
	// slot's start (Store.EnqueueDue).
	Spread           time.Duration
	FailureThreshold int
	SuccessThreshold int
	// AlertBeforeFirstUp announces DOWN for a service never seen UP.
	AlertBeforeFirstUp bool
	ProducerEvery      time.Duration // default 1s
	HeartbeatEvery     time.Duration // default 5s
	ShutdownGrace      time.Duration // how long in-flight probes may finish at shutdown; default 5s
}

func (c *SchedulerConfig) setDefaults() {
	if c.Workers <= 0 {
		c.Workers = 8
	}
	if c.Lease <= 0 {
		c.Lease = 30 * time.Second
	}
	if c.Poll <= 0 {
		c.Poll = time.Second
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 3
	}
	if c.RetryBase <= 0 {
		c.RetryBase = 5 * time.Second
	}
	if c.RetryCap <= 0 {
		c.RetryCap = 60 * time.Second
	}
	if c.ProducerEvery <= 0 {
		c.ProducerEvery = time.Second
	}
	if c.HeartbeatEvery <= 0 {
		c.HeartbeatEvery = 5 * time.Second
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = 5 * time.Second
	}
}

// Scheduler runs one replica's loops: the producer (enqueue the current slot,
// fail exhausted jobs, heartbeat) and the claimer feeding a worker pool.
type Scheduler struct {
	store   *Store
	prober  Prober
	cfg     SchedulerConfig
	metrics *Metrics
	log     *slog.Logger
	outage  *outageLog
	results *completer
	wake    chan struct{}
	stale   atomic.Int64 // stale completions since start, reported with each heartbeat
}

// NewScheduler wires a scheduler; Run starts it.
func NewScheduler(store *Store, prober Prober, cfg SchedulerConfig, metrics *Metrics, log *slog.Logger) *Scheduler {
	cfg.setDefaults()
	return &Scheduler{
		store: store, prober: prober, cfg: cfg, metrics: metrics, log: log,
		outage:  &outageLog{log: log},
		results: newCompleter(store, cfg.Workers),
		wake:    make(chan struct{}, 1),
	}
}

// Run works until ctx is cancelled, then shuts down: it stops claiming, lets
// in-flight probes finish for ShutdownGrace, releases the jobs still held so
// another replica takes them at once, and marks this instance stopped.
func (s *Scheduler) Run(ctx context.Context) error {
	if err := s.store.RegisterInstance(ctx, s.cfg.Instance); err != nil {
		s.outage.failed("register instance", err)
	}
	// Probes run under hardCtx, which outlives ctx by the shutdown grace.
	hardCtx, hardCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hardCancel()

	var loops sync.WaitGroup
	loops.Add(1)
	go func() {
		defer loops.Done()
		s.produce(ctx)
	}()
	written := make(chan struct{})
	go func() {
		defer close(written)
		s.results.run()
	}()

	var workers sync.WaitGroup
	s.claimLoop(ctx, hardCtx, &workers)
	loops.Wait()

	done := make(chan struct{})
	go func() {
		workers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(s.cfg.ShutdownGrace):
		s.log.Info("shutdown grace over, interrupting probes and releasing their jobs")
		hardCancel()
		<-done
	}
	close(s.results.in) // every worker has finished: write what they left
	<-written
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.store.MarkInstanceStopped(stopCtx, s.cfg.Instance.Name, s.stale.Load()); err != nil {
		s.log.Warn("could not mark instance stopped", "err", err)
	}
	return nil
}

// produce creates the current slot's jobs every tick, fails jobs whose last
// lease expired, and keeps the heartbeat.
func (s *Scheduler) produce(ctx context.Context) {
	lastBeat := time.Now()
	for {
		n, err := s.store.EnqueueDue(ctx, s.cfg.MaxAttempts, s.cfg.Spread)
		if err == nil {
			recovered := s.outage.ok()
			s.metrics.JobsEnqueued.Add(float64(n))
			// The producer ticks through an outage and so is the first to see
			// the database back: it wakes a claim loop still in its backoff.
			if n > 0 || recovered {
				s.nudge()
			}
			var failed int64
			failed, err = s.store.FailExhausted(ctx)
			if failed > 0 {
				s.metrics.Failures.Add(float64(failed))
				s.log.Warn("jobs failed: lease expired on their last attempt", "count", failed)
			}
		}
		if err == nil && time.Since(lastBeat) >= s.cfg.HeartbeatEvery {
			err = s.store.Heartbeat(ctx, s.cfg.Instance, s.stale.Load())
			lastBeat = time.Now()
		}
		if err != nil && ctx.Err() == nil {
			s.metrics.DatabaseErrors.Inc()
			s.outage.failed("produce", err)
		}
		if !sleep(ctx, jitter(s.cfg.ProducerEvery)) {
			return
		}
	}
}

// jitter spreads d by ±25%. Replicas that tick in lockstep would always let
// the same one enqueue a slot first and claim the whole batch; with jitter the
// first one differs from slot to slot, so the checks are shared.
func jitter(d time.Duration) time.Duration {
	return d*3/4 + rand.N(d/2+1)
}

func (s *Scheduler) nudge() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// claimLoop claims as many jobs as there are free workers, again at once while
// due work keeps coming, and waits for Poll (or a nudge) when the queue is dry.
// There is no per-tick ceiling: throughput is bounded by workers and the
// database, not by the poll interval.
func (s *Scheduler) claimLoop(ctx, hardCtx context.Context, workers *sync.WaitGroup) {
	idle := newWorkerSlots(s.cfg.Workers)
	backoff := s.cfg.Poll
	for {
		n := idle.takeIdle(ctx)
		if n == 0 {
			return
		}
		// The claim is not cancelled by shutdown: cancelled halfway, it may
		// commit on the server while its rows never reach us, and those jobs
		// would sit RUNNING under nobody until their leases expire. What it
		// returns is worked on (and released if the grace runs out).
		claimCtx, cancelClaim := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		jobs, err := s.store.Claim(claimCtx, ClaimParams{Instance: s.cfg.Instance.Name, Limit: n, Lease: s.cfg.Lease})
		cancelClaim()
		idle.give(n - len(jobs))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.metrics.DatabaseErrors.Inc()
			s.outage.failed("claim", err)
			backoff = min(backoff*2, 30*time.Second)
			if !s.sleepOrWake(ctx, jitter(backoff)) {
				return
			}
			continue
		}
		s.outage.ok()
		backoff = s.cfg.Poll
		s.metrics.Claims.Add(float64(len(jobs)))
		for _, job := range jobs {
			workers.Add(1)
			go func() {
				defer workers.Done()
				defer idle.give(1)
				s.work(hardCtx, job)
			}()
		}
		if len(jobs) == n {
			continue // every worker got a job: more may be due
		}
		timer := time.NewTimer(jitter(s.cfg.Poll))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-s.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// work probes one job outside any transaction and writes the outcome under
// the owner guard.
func (s *Scheduler) work(hardCtx context.Context, job Job) {
	log := jobLog{base: s.log, job: job}
	probeCtx, cancelProbe := context.WithCancel(hardCtx)
	defer cancelProbe()
	stopRenew := s.keepLease(probeCtx, cancelProbe, job, log)

	result, perr := s.probe(probeCtx, job)
	stopRenew()

	// Writes use their own deadline: a shutdown must not abort a completion
	// that is already on its way to the database.
	writeCtx, cancel := context.WithTimeout(context.WithoutCancel(hardCtx), 10*time.Second)
	defer cancel()
	if hardCtx.Err() != nil {
		// Interrupted by shutdown: the result is not trustworthy; hand the job on.
		if err := s.store.Release(writeCtx, job.ID, job.Token); err == nil {
			s.metrics.Releases.Inc()
			log.Info("released job at shutdown")
		} else if !errors.Is(err, ErrStaleOwner) {
			log.Warn("could not release job; it returns when its lease expires", "err", err)
		}
		return
	}
	if perr != nil {
		s.retry(writeCtx, job, perr.Error(), log)
		return
	}
	s.metrics.Probes.WithLabelValues(result.Status).Inc()
	s.metrics.ProbeDuration.Observe(result.Latency.Seconds())
	log.Debug("probed", "status", result.Status, "latency", result.Latency, "degraded", result.Degraded,
		"reason", result.Error)
	c, err := s.results.complete(writeCtx, CompleteParams{
		JobID: job.ID, Token: job.Token, ServiceID: job.ServiceID, Slot: job.Slot,
		Instance: s.cfg.Instance.Name, Result: result,
		FailureThreshold: s.cfg.FailureThreshold, SuccessThreshold: s.cfg.SuccessThreshold,
		AlertBeforeFirstUp: s.cfg.AlertBeforeFirstUp,
	})
	switch {
	case errors.Is(err, ErrStaleOwner):
		s.metrics.StaleCompletions.Inc()
		s.stale.Add(1)
		log.Warn("stale completion discarded: lease expired or job taken over", "status", result.Status)
	case err != nil:
		s.metrics.DatabaseErrors.Inc()
		s.retry(writeCtx, job, err.Error(), log)
	default:
		s.metrics.Completions.Inc()
		if c.Alert != "" {
			s.metrics.AlertsWritten.WithLabelValues(c.Alert).Inc()
			log.Info("status transition", "alert", c.Alert)
		}
		if c.HeldBack != "" {
			log.Info("alert held back by a maintenance window", "window", c.HeldBack, "status", result.Status)
		}
	}
}

// probe runs the prober and turns a panic into an error, so a bug in one
// probe costs an attempt rather than the replica.
func (s *Scheduler) probe(ctx context.Context, job Job) (res ProbeResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("probe panicked: %v", r)
		}
	}()
	if tp, ok := s.prober.(TargetProber); ok {
		return tp.ProbeTarget(ctx, ProbeRequest{Target: job.TargetURL, Timeout: job.Timeout, Spec: job.Probe}), nil
	}
	return s.prober.Probe(ctx, job.TargetURL, job.Timeout), nil
}

func (s *Scheduler) retry(ctx context.Context, job Job, reason string, log jobLog) {
	state, err := s.store.Retry(ctx, RetryParams{
		JobID: job.ID, Token: job.Token, Error: reason, RetryBase: s.cfg.RetryBase, RetryCap: s.cfg.RetryCap,
	})
	switch {
	case errors.Is(err, ErrStaleOwner):
		s.metrics.StaleCompletions.Inc()
		s.stale.Add(1)
		log.Warn("stale retry discarded: lease expired or job taken over", "reason", reason)
	case err != nil:
		// The lease will expire and another claim retries the job. This is
		// the database failing, as for every job in flight during an outage:
		// it is logged once per outage, not once per job.
		s.metrics.DatabaseErrors.Inc()
		s.outage.failed("hand job back for retry", err)
		log.Debug("could not hand job back for retry", "reason", reason, "err", err)
	case state == "FAILED":
		s.metrics.Failures.Inc()
		log.Error("job failed on its last attempt", "reason", reason)
	default:
		s.metrics.Retries.Inc()
		log.Warn("job will be retried", "reason", reason)
	}
}

// keepLease renews the lease at half its length while a probe runs, and
// cancels the probe if the job was lost. A stalled replica cannot renew, so
// its lease still expires and the job moves on. A timer, not a goroutine,
// waits for the first renewal: most probes end long before it.
func (s *Scheduler) keepLease(ctx context.Context, lost context.CancelFunc, job Job, log jobLog) (stop func()) {
	var (
		mu       sync.Mutex
		stopped  bool
		timer    *time.Timer
		inFlight sync.WaitGroup
	)
	renew := func() {
		mu.Lock()
		if stopped || ctx.Err() != nil {
			mu.Unlock()
			return
		}
		inFlight.Add(1)
		mu.Unlock()
		defer inFlight.Done()
		rctx, cancel := context.WithTimeout(ctx, s.cfg.Lease/4)
		_, err := s.store.Renew(rctx, job.ID, job.Token, s.cfg.Lease)
		cancel()
		if errors.Is(err, ErrStaleOwner) {
			log.Warn("lease lost during probe")
			lost()
			return
		}
		mu.Lock()
		if !stopped {
			timer.Reset(s.cfg.Lease / 2)
		}
		mu.Unlock()
	}
	mu.Lock()
	timer = time.AfterFunc(s.cfg.Lease/2, renew)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		timer.Stop()
		mu.Unlock()
		inFlight.Wait() // no renewal runs once the probe's outcome is being written
	}
}

// jobLog adds the job to a log line only when one is written: Logger.With
// formats its attributes at once, a cost every job would pay.
type jobLog struct {
	base *slog.Logger
	job  Job
}

func (l jobLog) attrs(args []any) []any {
	return append([]any{"job_id", l.job.ID, "attempt", l.job.Attempt}, args...)
}

func (l jobLog) Debug(msg string, args ...any) {
	if l.base.Enabled(context.Background(), slog.LevelDebug) {
		l.base.Debug(msg, l.attrs(args)...)
	}
}
func (l jobLog) Info(msg string, args ...any)  { l.base.Info(msg, l.attrs(args)...) }
func (l jobLog) Warn(msg string, args ...any)  { l.base.Warn(msg, l.attrs(args)...) }
func (l jobLog) Error(msg string, args ...any) { l.base.Error(msg, l.attrs(args)...) }

// sleepOrWake is sleep that a nudge ends early.
func (s *Scheduler) sleepOrWake(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-s.wake:
		return true
	case <-t.C:
		return true
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// outageLog reports a database outage once when it starts and once when it
// ends, instead of once per tick.
type outageLog struct {
	mu   sync.Mutex
	down bool
	log  *slog.Logger
}

func (o *outageLog) failed(during string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.down {
		o.down = true
		o.log.Error("database unavailable; retrying with backoff", "during", during, "err", err)
	}
}

// ok records a success and reports whether it ended an outage.
func (o *outageLog) ok() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.down {
		return false
	}
	o.down = false
	o.log.Info("database available again")
	return true
}
