package monitoring

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DispatcherConfig is one replica's alert delivery settings.
type DispatcherConfig struct {
	Instance  string
	Webhooks  []Webhook
	BaseURL   string        // where links in messages point; default http://localhost:8080
	RetryBase time.Duration // backoff after the first failed attempt; default 10s
	RetryCap  time.Duration // backoff ceiling; default 10m
	// Lease is how long a claimed delivery is held; default twice the longest webhook
	// timeout plus 10s, so a POST ends well before its lease does.
	Lease         time.Duration
	Poll          time.Duration // how often an idle dispatcher looks for work; default 1s
	Senders       int           // concurrent POSTs; default 4
	ShutdownGrace time.Duration // how long in-flight POSTs may finish at shutdown; default 5s
	Client        *http.Client  // nil: one that does not follow redirects
}

func (c *DispatcherConfig) setDefaults() {
	if c.BaseURL == "" {
		c.BaseURL = "http://localhost:8080"
	}
	if c.RetryBase <= 0 {
		c.RetryBase = 10 * time.Second
	}
	if c.RetryCap < c.RetryBase {
		c.RetryCap = max(10*time.Minute, c.RetryBase)
	}
	if c.Lease <= 0 {
		longest := time.Duration(0)
		for _, w := range c.Webhooks {
			longest = max(longest, w.Timeout)
		}
		if longest <= 0 {
			longest = 10 * time.Second
		}
		c.Lease = 2*longest + 10*time.Second
	}
	if c.Poll <= 0 {
		c.Poll = time.Second
	}
	if c.Senders <= 0 {
		c.Senders = 4
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = 5 * time.Second
	}
}

// Dispatcher is one replica's alert delivery loop. Every replica runs one; they share the
// work through alert_delivery the way workers share monitoring_job.
type Dispatcher struct {
	store   *Store
	cfg     DispatcherConfig
	hooks   map[string]Webhook
	names   []string
	routes  []WebhookRoute
	sender  *WebhookSender
	metrics *DispatcherMetrics
	log     *slog.Logger
	outage  *outageLog
}

// NewDispatcher wires a dispatcher; Run starts it.
func NewDispatcher(store *Store, cfg DispatcherConfig, metrics *DispatcherMetrics, log *slog.Logger) *Dispatcher {
	cfg.setDefaults()
	d := &Dispatcher{
		store: store, cfg: cfg, metrics: metrics, log: log.With("component", "dispatcher"),
		hooks:  make(map[string]Webhook, len(cfg.Webhooks)),
		sender: NewWebhookSender(cfg.BaseURL, cfg.Client),
	}
	d.outage = &outageLog{log: d.log}
	for _, w := range cfg.Webhooks {
		d.hooks[w.Name] = w
		d.names = append(d.names, w.Name)
		d.routes = append(d.routes, WebhookRoute{Name: w.Name, Down: w.Sends("DOWN"), Up: w.Sends("UP"), MaxAttempts: w.MaxAttempts})
	}
	return d
}

// Run delivers until ctx is cancelled, then stops claiming, lets in-flight POSTs finish
// for ShutdownGrace and releases the deliveries still held, so another replica sends them
// at once.
//
// A replica without webhooks still routes events (into no deliveries), so they do not
// count as undelivered forever.
func (d *Dispatcher) Run(ctx context.Context) error {
	hardCtx, hardCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hardCancel()
	var inflight sync.WaitGroup
	d.loop(ctx, hardCtx, &inflight)

	done := make(chan struct{})
	go func() {
		inflight.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d.cfg.ShutdownGrace):
		d.log.Info("shutdown grace over, interrupting webhook POSTs and releasing their deliveries")
		hardCancel()
		<-done
	}
	return nil
}

func (d *Dispatcher) loop(ctx, hardCtx context.Context, inflight *sync.WaitGroup) {
	idle := newWorkerSlots(d.cfg.Senders)
	backoff := d.cfg.Poll
	for {
		n := idle.takeIdle(ctx)
		if n == 0 {
			return
		}
		deliveries, err := d.tick(ctx, n)
		idle.give(n - len(deliveries))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			d.metrics.DatabaseErrors.Inc()
			d.outage.failed("dispatch alerts", err)
			backoff = min(backoff*2, 30*time.Second)
			if !sleep(ctx, backoff) {
				return
			}
			continue
		}
		d.outage.ok()
		backoff = d.cfg.Poll
		for _, dl := range deliveries {
			inflight.Add(1)
			go func() {
				defer inflight.Done()
				defer idle.give(1)
				d.deliver(hardCtx, dl)
			}()
		}
		if len(deliveries) == n {
			continue // every sender got one: more may be due
		}
		if !sleep(ctx, jitter(d.cfg.Poll)) {
			return
		}
	}
}

// tick routes new events, fails deliveries whose last lease ran out, and claims up to n.
func (d *Dispatcher) tick(ctx context.Context, n int) ([]Delivery, error) {
	if _, created, err := d.store.RouteEvents(ctx, d.routes); err != nil {
		return nil, err
	} else if created > 0 {
		d.metrics.Routed.Add(float64(created))
	}
	failed, err := d.store.FailExhaustedDeliveries(ctx)
	if err != nil {
		return nil, err
	}
	if failed > 0 {
		d.metrics.Deliveries.WithLabelValues("failed").Add(float64(failed))
		d.log.Error("alert deliveries failed: lease expired on their last attempt", "count", failed)
	}
	// As in the scheduler, the claim is not cancelled by shutdown: cancelled
	// halfway it may commit on the server while its rows never reach us, and
	// those deliveries would sit SENDING under nobody until their leases expire.
	claimCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return d.store.ClaimDeliveries(claimCtx, DeliveryClaimParams{
		Instance: d.cfg.Instance, Limit: n, Lease: d.cfg.Lease, Webhooks: d.names,
	})
}

// deliver POSTs one delivery outside any transaction and records the outcome under the
// owner guard.
func (d *Dispatcher) deliver(hardCtx context.Context, dl Delivery) {
	log := d.log.With("delivery_id", dl.ID, "webhook", dl.Webhook, "event", dl.Event.Key, "attempt", dl.Attempt)
	started := time.Now()
	res := d.sender.Send(hardCtx, d.hooks[dl.Webhook], dl)
	d.metrics.Duration.Observe(time.Since(started).Seconds())

	writeCtx, cancel := context.WithTimeout(context.WithoutCancel(hardCtx), 10*time.Second)
	defer cancel()
	if !res.Delivered() && hardCtx.Err() != nil {
		// Interrupted by shutdown: not the receiver's failure; hand it on.
		if err := d.store.ReleaseDelivery(writeCtx, dl.ID, dl.Token); err == nil {
			log.Info("released delivery at shutdown")
		} else if !errors.Is(err, ErrStaleDelivery) {
			log.Warn("could not release delivery; it returns when its lease expires", "err", err)
		}
		return
	}
	if res.Delivered() {
		err := d.store.MarkDelivered(writeCtx, dl.ID, dl.Token, res.HTTPStatus)
		switch {
		case errors.Is(err, ErrStaleDelivery):
			// Another dispatcher has taken it over and sends it again, with the same
			// Idempotency-Key: the receiver can drop the repeat.
			d.metrics.Deliveries.WithLabelValues("stale").Inc()
			log.Warn("delivered, but the lease had expired: another replica will send it again with the same key")
		case err != nil:
			d.metrics.DatabaseErrors.Inc()
			log.Error("delivered, but could not record it; it will be sent again with the same key", "err", err)
		default:
			d.metrics.Deliveries.WithLabelValues("delivered").Inc()
			log.Info("alert delivered", "kind", dl.Event.Kind, "service", dl.Event.Service, "http_status", res.HTTPStatus)
		}
		return
	}
	delay := DeliveryBackoff(dl.Attempt, d.cfg.RetryBase, d.cfg.RetryCap, res.RetryAfter)
	state, err := d.store.RetryDeliveryLater(writeCtx, DeliveryRetryParams{
		ID: dl.ID, Token: dl.Token, Error: res.Err, HTTPStatus: res.HTTPStatus, Delay: delay,
	})
	switch {
	case errors.Is(err, ErrStaleDelivery):
		d.metrics.Deliveries.WithLabelValues("stale").Inc()
		log.Warn("stale delivery attempt discarded: lease expired or taken over", "error", res.Err)
	case err != nil:
		d.metrics.DatabaseErrors.Inc()
		log.Error("could not record a failed attempt; the delivery returns when its lease expires", "error", res.Err, "err", err)
	case state == DeliveryFailed:
		d.metrics.Deliveries.WithLabelValues("failed").Inc()
		log.Error("alert delivery FAILED after its last attempt; retry it with `server alerts retry`", "error", res.Err)
	default:
		d.metrics.Deliveries.WithLabelValues("retried").Inc()
		log.Warn("alert delivery will be retried", "error", res.Err, "in", delay.Round(time.Millisecond))
	}
}

// DeliveryBackoff is the wait before attempt+1: min(cap, base * 2^(attempt-1)) with equal
// jitter (between half of it and all of it), so replicas retrying a recovered receiver do
// not arrive together. A receiver's Retry-After is honoured up to the cap.
func DeliveryBackoff(attempt int, base, ceiling, retryAfter time.Duration) time.Duration {
	d := base
	for i := 1; i < attempt && d < ceiling; i++ {
		d *= 2
	}
	d = min(d, ceiling)
	d = d/2 + rand.N(d/2+1)
	if retryAfter > d {
		d = min(retryAfter, ceiling)
	}
	return d
}

// DispatcherMetrics are one replica's delivery counters. The registry is passed in so
// tests can read it and two in-process replicas do not collide.
type DispatcherMetrics struct {
	Deliveries     *prometheus.CounterVec // by outcome: delivered, retried, failed, stale
	Routed         prometheus.Counter
	Duration       prometheus.Histogram
	DatabaseErrors prometheus.Counter
}

// NewDispatcherMetrics creates and registers the dispatcher's metrics.
func NewDispatcherMetrics(reg prometheus.Registerer) *DispatcherMetrics {
	m := &DispatcherMetrics{
		Deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_alert_deliveries_total",
			Help: "Webhook delivery attempts finished by this replica, by outcome: delivered, retried (will try again), failed (gave up), stale (lease lost; another replica sends it).",
		}, []string{"outcome"}),
		Routed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_alert_deliveries_created_total", Help: "Deliveries this replica created by routing alert events to webhooks.",
		}),
		Duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "vigil_alert_delivery_duration_seconds", Help: "Time a webhook POST took.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		DatabaseErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_alert_dispatcher_database_errors_total", Help: "Dispatcher database calls that failed.",
		}),
	}
	for _, outcome := range []string{"delivered", "retried", "failed", "stale"} {
		m.Deliveries.WithLabelValues(outcome)
	}
	reg.MustRegister(m.Deliveries, m.Routed, m.Duration, m.DatabaseErrors)
	return m
}

// OutboxCollector reports the shared delivery state, read from the database at scrape time
// with a short timeout; on a database error it reports nothing rather than stale values.
type OutboxCollector struct {
	store                               *Store
	pending, failed, unrouted, oldestUn *prometheus.Desc
}

// NewOutboxCollector builds the collector; register it on the /metrics registry.
func NewOutboxCollector(store *Store) *OutboxCollector {
	return &OutboxCollector{
		store:    store,
		pending:  prometheus.NewDesc("vigil_alert_deliveries_pending", "Webhook deliveries PENDING or SENDING.", nil, nil),
		failed:   prometheus.NewDesc("vigil_alert_deliveries_failed", "Webhook deliveries that gave up (FAILED); an operator may retry them.", nil, nil),
		unrouted: prometheus.NewDesc("vigil_alert_events_unrouted", "Alert events not yet split into webhook deliveries.", nil, nil),
		oldestUn: prometheus.NewDesc("vigil_alert_oldest_undelivered_event_age_seconds", "Age of the oldest alert event still waiting to be delivered (unrouted, or a delivery PENDING or SENDING).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *OutboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.failed
	ch <- c.unrouted
	ch <- c.oldestUn
}

// Collect implements prometheus.Collector.
func (c *OutboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	h, err := c.store.OutboxHealth(ctx)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(h.Pending))
	ch <- prometheus.MustNewConstMetric(c.failed, prometheus.GaugeValue, float64(h.Failed))
	ch <- prometheus.MustNewConstMetric(c.unrouted, prometheus.GaugeValue, float64(h.Unrouted))
	ch <- prometheus.MustNewConstMetric(c.oldestUn, prometheus.GaugeValue, h.OldestUndeliveredAge.Seconds())
}
