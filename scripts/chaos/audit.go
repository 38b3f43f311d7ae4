package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Coverage parameters (see coverage.expects). The producer sleeps 0.75-1.25 s
// between ticks; a tick is three short statements. coverageNeed allows
// 0.75 s for a tick on a loaded machine. coverageMargin absorbs the harness
// seeing a start in the log slightly late and stamping a fault slightly early.
const (
	coverageNeed   = 2 * time.Second
	coverageMargin = 500 * time.Millisecond
)

func (h *harness) openPool(ctx context.Context) error {
	cfg, err := pgxpool.ParseConfig(h.pgURL)
	if err != nil {
		return err
	}
	cfg.MaxConns = 4
	cfg.ConnConfig.ConnectTimeout = 3 * time.Second
	h.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	return err
}

// resultSince reports whether the replica stored a result whose guard passed
// after t.
func (h *harness) resultSince(name string, t time.Time) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var ok bool
	err := h.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM monitoring_job_result WHERE probed_by = $1 AND guarded_at > $2)`,
		name, t).Scan(&ok)
	return err == nil && ok
}

// deliveryAvailable tells whether this build delivers webhooks: the schema
// has deliveries and some replica routed an alert event into one. A build
// whose replicas never route an event (no dispatcher wired in) cannot be
// audited for delivery; the report says so instead of failing.
func (h *harness) deliveryAvailable(ctx context.Context) (bool, string) {
	var table *string
	if err := h.pool.QueryRow(ctx, `SELECT to_regclass('alert_delivery')::text`).Scan(&table); err != nil || table == nil {
		return false, "no alert_delivery table in the schema"
	}
	var events, routed int
	err := h.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM alert_outbox), (SELECT count(*) FROM alert_delivery)`).Scan(&events, &routed)
	switch {
	case err != nil:
		return false, err.Error()
	case routed > 0:
		return true, ""
	case events == 0:
		return false, "no alert event was written, so delivery could not be observed"
	}
	return false, fmt.Sprintf("%d alert events but no delivery row: no replica runs a webhook dispatcher", events)
}

// recover thaws and restarts whatever the faults left down, waits until every
// replica works again, and then for one lease and one longest interval more:
// jobs held by processes that died are taken over once their leases expire,
// and the cutoff that follows lies after all of the faults' leftovers.
func (h *harness) recover(ctx context.Context) error {
	for _, r := range h.replicas {
		r.mu.Lock()
		frozen := r.frozen
		r.mu.Unlock()
		if frozen {
			_ = r.thaw()
		}
		if _, ok := r.running(); !ok {
			if err := r.start(); err != nil {
				return err
			}
		}
	}
	for _, r := range h.replicas {
		if err := r.waitStarted(ctx, 90*time.Second); err != nil {
			return err
		}
	}
	if !pause(ctx, h.o.Lease+5*time.Second) {
		return ctx.Err()
	}
	return nil
}

// settle waits until no job of a slot that ended before cutoff is READY or
// RUNNING and, with delivery, until every such slot's alert reached the
// receiver.
func (h *harness) settle(ctx context.Context, cutoff time.Time) (bool, error) {
	deadline := time.Now().Add(h.o.Settle)
	for {
		delivery, _ := h.deliveryAvailable(ctx)
		pending, undelivered, err := h.pending(ctx, cutoff, delivery)
		if err == nil && pending == 0 && undelivered == 0 {
			h.logf("settled: nothing of the run left to do")
			return true, nil
		}
		if time.Now().After(deadline) {
			h.logf("not settled after %s: %d jobs READY/RUNNING, %d alerts undelivered (err %v)", h.o.Settle, pending, undelivered, err)
			return false, nil
		}
		if !pause(ctx, time.Second) {
			return false, ctx.Err()
		}
	}
}

func (h *harness) pending(ctx context.Context, cutoff time.Time, delivery bool) (jobs, undelivered int, err error) {
	err = h.pool.QueryRow(ctx, `
SELECT count(*) FROM monitoring_job j JOIN monitored_service s ON s.id = j.service_id
WHERE j.state IN ('READY', 'RUNNING') AND j.scheduled_slot + s.interval_seconds <= $1`, cutoffEpoch(cutoff)).Scan(&jobs)
	if err != nil || !delivery {
		return jobs, 0, err
	}
	events, err := h.outboxEvents(ctx)
	if err != nil {
		return jobs, 0, err
	}
	got := matchDeliveries(events, h.recv.snapshot())
	for _, e := range events {
		if e.slotEnd <= cutoffEpoch(cutoff) && got[e.key].accepted == 0 {
			undelivered++
		}
	}
	return jobs, undelivered, nil
}

func cutoffEpoch(t time.Time) int64 { return t.Unix() }

type outboxEvent struct {
	serviceID, jobID int64
	kind, key        string
	slotEnd          int64
}

func (h *harness) outboxEvents(ctx context.Context) ([]outboxEvent, error) {
	rows, err := h.pool.Query(ctx, `
SELECT o.service_id, o.job_id, o.kind, o.event_key, o.scheduled_slot + s.interval_seconds
FROM alert_outbox o JOIN monitored_service s ON s.id = o.service_id ORDER BY o.id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (outboxEvent, error) {
		var e outboxEvent
		err := row.Scan(&e.serviceID, &e.jobID, &e.kind, &e.key, &e.slotEnd)
		return e, err
	})
}

// eventDeliveries is what the receiver saw of one event.
type eventDeliveries struct {
	requests, accepted int
	keys               map[string]bool
}

// matchDeliveries ties each request to the event whose key appears in its
// Idempotency-Key header or its body.
func matchDeliveries(events []outboxEvent, ds []delivery) map[string]*eventDeliveries {
	out := map[string]*eventDeliveries{}
	for _, e := range events {
		out[e.key] = &eventDeliveries{keys: map[string]bool{}}
	}
	// Longest keys first, so "job-12-UP" never claims a request for "job-123-UP".
	keys := make([]string, 0, len(events))
	for _, e := range events {
		keys = append(keys, e.key)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, d := range ds {
		for _, k := range keys {
			if containsToken(d.IdempotencyKey, k) || containsToken(d.Body, k) {
				ed := out[k]
				ed.requests++
				if d.Answered/100 == 2 {
					ed.accepted++
				}
				ed.keys[d.IdempotencyKey] = true
				break
			}
		}
	}
	return out
}

// containsToken finds k in s not glued to a longer number or word.
func containsToken(s, k string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], k)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(k)
		if (start == 0 || !isWordByte(s[start-1])) && (end == len(s) || !isWordByte(s[end])) {
			return true
		}
		i = start + 1
	}
}

func isWordByte(b byte) bool {
	return b == '-' || b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// audit checks every invariant against the database, the receiver and the
// replicas' logs.
func (h *harness) audit(ctx context.Context, cutoff time.Time, settled bool, stopErrs []string) (*report, error) {
	rep := &report{seed: h.o.Seed, duration: h.o.Duration, faults: h.faults, survival: h.survival}
	cov := h.tl.coverage(coverageMargin, coverageNeed)
	q := func(name, explain, sql string, args ...any) error {
		var n int
		var example *string
		if err := h.pool.QueryRow(ctx, sql, args...).Scan(&n, &example); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		ex := ""
		if example != nil {
			ex = *example
		}
		rep.check(name, explain, -1, n, ex)
		return nil
	}

	checks := []struct{ name, explain, sql string }{
		{"one job per (service, slot)", "pairs with more than one job", `
SELECT count(*), min(format('service %s slot %s', service_id, scheduled_slot)) FROM (
    SELECT service_id, scheduled_slot FROM monitoring_job GROUP BY 1, 2 HAVING count(*) > 1) d`},
		{"a result for each DONE job", "DONE jobs without a result", `
SELECT count(*), min(format('job %s', j.id)) FROM monitoring_job j
WHERE j.state = 'DONE' AND NOT EXISTS (SELECT 1 FROM monitoring_job_result r WHERE r.job_id = j.id)`},
		{"no result for other jobs", "results of jobs not DONE", `
SELECT count(*), min(format('job %s is %s', j.id, j.state)) FROM monitoring_job j
JOIN monitoring_job_result r ON r.job_id = j.id WHERE j.state <> 'DONE'`},
		{"result written by the latest claim", "results whose attempt is not the job's last", `
SELECT count(*), min(format('job %s: result of attempt %s, job at attempt %s', j.id, r.attempt, j.attempts))
FROM monitoring_job j JOIN monitoring_job_result r ON r.job_id = j.id WHERE r.attempt <> j.attempts`},
		{"result written under its lease", "results whose guard passed at or after lease_until (or unrecorded)", `
SELECT count(*), min(format('job %s by %s: guard %s, lease %s', job_id, probed_by, guarded_at, lease_until))
FROM monitoring_job_result WHERE guarded_at IS NULL OR lease_until IS NULL OR guarded_at >= lease_until`},
		{"status written with its result", "service_status rows not written by the transaction of their last_job_id's result", `
SELECT count(*), min(format('service %s last_job %s', s.service_id, s.last_job_id)) FROM service_status s
LEFT JOIN monitoring_job_result r ON r.job_id = s.last_job_id
WHERE r.job_id IS NULL OR s.xmin::text <> r.xmin::text`},
		{"alert written with its result", "outbox events not written by the transaction of their job's result, or of another kind", `
SELECT count(*), min(format('event %s', o.event_key)) FROM alert_outbox o
LEFT JOIN monitoring_job_result r ON r.job_id = o.job_id
WHERE r.job_id IS NULL OR o.written_xid IS NULL OR r.status <> o.kind
   OR (o.written_xid::text::bigint % 4294967296)::text <> r.xmin::text`},
		{"status is the newest slot's result", "services whose status is not their newest result", `
SELECT count(*), min(format('service %s: status %s slot %s, newest result %s slot %s', m.name, s.status, s.last_slot, r.status, r.scheduled_slot))
FROM monitored_service m
JOIN LATERAL (SELECT * FROM monitoring_job_result r WHERE r.service_id = m.id ORDER BY scheduled_slot DESC LIMIT 1) r ON true
LEFT JOIN service_status s ON s.service_id = m.id
WHERE s.service_id IS NULL OR s.last_job_id <> r.job_id OR s.status <> r.status OR s.last_slot <> r.scheduled_slot`},
		{"no jobs for disabled services", "jobs of disabled services", `
SELECT count(*), min(m.name) FROM monitoring_job j JOIN monitored_service m ON m.id = j.service_id WHERE NOT m.enabled`},
		{"nothing held after graceful stop", "RUNNING jobs once every replica stopped", `
SELECT count(*), min(format('job %s held by %s', id, owner_instance)) FROM monitoring_job WHERE state = 'RUNNING'`},
	}
	for _, c := range checks {
		if err := q(c.name, c.explain, c.sql); err != nil {
			return nil, err
		}
	}
	if err := q("nothing left READY/RUNNING", "jobs of slots ended before the cutoff still READY or RUNNING after settling", `
SELECT count(*), min(format('job %s (%s) slot %s', j.id, j.state, j.scheduled_slot))
FROM monitoring_job j JOIN monitored_service s ON s.id = j.service_id
WHERE j.state IN ('READY', 'RUNNING') AND j.scheduled_slot + s.interval_seconds <= $1`, cutoffEpoch(cutoff)); err != nil {
		return nil, err
	}
	if !settled {
		rep.note("the queue did not drain within -settle; see 'nothing left READY/RUNNING'")
	}
	if err := h.auditCoverage(ctx, rep, cov, cutoff); err != nil {
		return nil, err
	}
	if err := h.auditTransitions(ctx, rep); err != nil {
		return nil, err
	}
	if err := h.auditDelivery(ctx, rep, cutoff); err != nil {
		return nil, err
	}
	h.auditReplicas(rep, cov, stopErrs)
	if err := h.auditInfo(ctx, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// auditCoverage checks every slot the timeline vouches for.
func (h *harness) auditCoverage(ctx context.Context, rep *report, cov coverage, cutoff time.Time) error {
	type svc struct {
		id       int64
		name     string
		interval int64
	}
	rows, err := h.pool.Query(ctx, `SELECT id, name, interval_seconds FROM monitored_service WHERE enabled AND retired_at IS NULL ORDER BY id`)
	if err != nil {
		return err
	}
	services, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (svc, error) {
		var s svc
		return s, row.Scan(&s.id, &s.name, &s.interval)
	})
	if err != nil {
		return err
	}
	type key struct{ service, slot int64 }
	type outcome struct {
		state  string
		reason bool
	}
	jobs := map[key]outcome{}
	rows, err = h.pool.Query(ctx, `SELECT service_id, scheduled_slot, state, coalesce(last_error, '') <> '' FROM monitoring_job`)
	if err != nil {
		return err
	}
	var k key
	var o outcome
	_, err = pgx.ForEachRow(rows, []any{&k.service, &k.slot, &o.state, &o.reason}, func() error {
		jobs[k] = o
		return nil
	})
	if err != nil {
		return err
	}
	start := h.start.Unix()
	end := cutoff.Unix()
	var expected, missing, noOutcome, uncovered, failedWithReason int
	var missingEx, outcomeEx string
	for _, s := range services {
		first := (start + s.interval - 1) / s.interval * s.interval
		for slot := first; slot+s.interval <= end; slot += s.interval {
			if !cov.expects(time.Unix(slot, 0), time.Unix(slot+s.interval, 0)) {
				uncovered++
				continue
			}
			expected++
			j, ok := jobs[key{s.id, slot}]
			switch {
			case !ok:
				missing++
				if missingEx == "" {
					missingEx = fmt.Sprintf("%s slot %s", s.name, time.Unix(slot, 0).Format("15:04:05"))
				}
			case j.state == "DONE":
			case j.state == "FAILED" && j.reason:
				failedWithReason++
			default:
				noOutcome++
				if outcomeEx == "" {
					outcomeEx = fmt.Sprintf("%s slot %s is %s", s.name, time.Unix(slot, 0).Format("15:04:05"), j.state)
				}
			}
		}
	}
	rep.check("covered slots have a job", "slots some replica worked through without a job", expected, missing, missingEx)
	rep.check("covered slots have an outcome", "covered slots with neither a result nor FAILED with a reason", expected, noOutcome, outcomeEx)
	rep.info("slots covered / not covered by a working replica", fmt.Sprintf("%d / %d", expected, uncovered))
	rep.info("covered slots FAILED with a reason", fmt.Sprint(failedWithReason))
	return nil
}

// auditTransitions replays each service's completions in commit order: a
// result moves the status only if its slot is newer than the stored one, and
// with failure_threshold 1 every change of that status after the first UP is
// a transition that must have exactly one outbox event, from that very job.
func (h *harness) auditTransitions(ctx context.Context, rep *report) error {
	var tracking string
	if err := h.pool.QueryRow(ctx, `SHOW track_commit_timestamp`).Scan(&tracking); err != nil {
		return err
	}
	if tracking != "on" {
		rep.check("one outbox event per transition", "track_commit_timestamp is off: cannot replay", -1, 1, "")
		return nil
	}
	type res struct {
		serviceID, jobID, slot int64
		status                 string
	}
	rows, err := h.pool.Query(ctx, `
SELECT service_id, job_id, scheduled_slot, status FROM monitoring_job_result
ORDER BY service_id, pg_xact_commit_timestamp(xmin), job_id`)
	if err != nil {
		return err
	}
	results, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (res, error) {
		var r res
		return r, row.Scan(&r.serviceID, &r.jobID, &r.slot, &r.status)
	})
	if err != nil {
		return err
	}
	events, err := h.outboxEvents(ctx)
	if err != nil {
		return err
	}
	type ev struct {
		jobID int64
		kind  string
	}
	got := map[ev]int{}
	for _, e := range events {
		got[ev{e.jobID, e.kind}]++
	}
	want := map[ev]bool{}
	finalAlert := map[int64]string{}
	var transitions int
	type state struct {
		lastSlot int64
		alert    string
		seen     bool
	}
	states := map[int64]*state{}
	for _, r := range results {
		st := states[r.serviceID]
		if st == nil {
			st = &state{alert: "UNKNOWN"}
			states[r.serviceID] = st
		}
		if st.seen && r.slot <= st.lastSlot {
			continue // an older slot completing late changes nothing
		}
		st.seen, st.lastSlot = true, r.slot
		switch {
		case st.alert == "UNKNOWN" && r.status == "UP":
			st.alert = "UP"
		case st.alert == "UP" && r.status == "DOWN", st.alert == "DOWN" && r.status == "UP":
			st.alert = r.status
			want[ev{r.jobID, r.status}] = true
			transitions++
		}
		finalAlert[r.serviceID] = st.alert
	}
	var missing, extra int
	var missEx, extraEx string
	for e := range want {
		if got[e] != 1 {
			missing++
			if missEx == "" {
				missEx = fmt.Sprintf("job %d %s: %d events", e.jobID, e.kind, got[e])
			}
		}
	}
	for e, n := range got {
		if !want[e] {
			extra += n
			if extraEx == "" {
				extraEx = fmt.Sprintf("job %d %s", e.jobID, e.kind)
			}
		}
	}
	rep.check("one outbox event per transition", "transitions without exactly one event", transitions, missing, missEx)
	rep.check("no outbox event without a transition", "events for no transition", len(events), extra, extraEx)

	rows, err = h.pool.Query(ctx, `SELECT service_id, alert_state FROM service_status`)
	if err != nil {
		return err
	}
	var sid int64
	var alert string
	var wrong int
	var wrongEx string
	_, err = pgx.ForEachRow(rows, []any{&sid, &alert}, func() error {
		if finalAlert[sid] != alert {
			wrong++
			if wrongEx == "" {
				wrongEx = fmt.Sprintf("service %d: alert_state %s, replay says %s", sid, alert, finalAlert[sid])
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	rep.check("alert state matches the replay", "services whose alert_state differs from the replayed one", len(finalAlert), wrong, wrongEx)
	return nil
}

// auditDelivery checks the receiver's view of the outbox, when this build
// delivers webhooks at all.
func (h *harness) auditDelivery(ctx context.Context, rep *report, cutoff time.Time) error {
	ok, why := h.deliveryAvailable(ctx)
	ds := h.recv.snapshot()
	if !ok {
		rep.skip("webhook delivery", fmt.Sprintf("not available: %s; receiver saw %d requests", why, len(ds)))
		return nil
	}
	events, err := h.outboxEvents(ctx)
	if err != nil {
		return err
	}
	got := matchDeliveries(events, ds)
	keyOwner := map[string]string{}
	var due, undelivered, multiKey, sharedKey, matched int
	var undEx, multiEx, sharedEx string
	for _, e := range events {
		d := got[e.key]
		matched += d.requests
		if e.slotEnd <= cutoffEpoch(cutoff) {
			due++
			if d.accepted == 0 {
				undelivered++
				if undEx == "" {
					undEx = fmt.Sprintf("%s (%d requests)", e.key, d.requests)
				}
			}
		}
		if len(d.keys) > 1 || d.keys[""] {
			multiKey++
			if multiEx == "" {
				multiEx = fmt.Sprintf("%s: %d keys", e.key, len(d.keys))
			}
		}
		for k := range d.keys {
			if other, seen := keyOwner[k]; seen && other != e.key {
				sharedKey++
				if sharedEx == "" {
					sharedEx = fmt.Sprintf("%s and %s", other, e.key)
				}
			}
			keyOwner[k] = e.key
		}
	}
	rep.check("receiver got every alert", "events of slots before the cutoff never accepted by the receiver", due, undelivered, undEx)
	rep.check("one idempotency key per alert", "events delivered under several (or empty) keys", len(events), multiKey, multiEx)
	rep.check("no key shared by two alerts", "keys used for two events", len(events), sharedKey, sharedEx)
	rep.check("every request belongs to an alert", "requests that name no outbox event", len(ds), len(ds)-matched, "")
	return nil
}

// outageLinesPerFault allows each loop that meets an outage (scheduler,
// webhook dispatcher, maintenance) its one line about it.
const outageLinesPerFault = 3

// auditReplicas turns what the replicas logged and how they stopped into checks.
func (h *harness) auditReplicas(rep *report, cov coverage, stopErrs []string) {
	var lives, unexpected, panics, noisy, stale int
	var unexEx, noisyEx string
	for _, r := range h.replicas {
		for _, l := range r.livesSnapshot() {
			lives++
			stale += l.staleWrites
			if l.unexpected != "" {
				unexpected++
				if unexEx == "" {
					unexEx = fmt.Sprintf("%s #%d %s", r.name, l.incarnation, l.unexpected)
				}
			}
			panics += l.panics
			to := l.to
			if to.IsZero() {
				to = time.Now()
			}
			faults := cov.faultsDuring(r.name, l.from, to)
			if allowed := outageLinesPerFault*faults + 1; l.outageLogs > allowed {
				noisy++
				if noisyEx == "" {
					noisyEx = fmt.Sprintf("%s #%d: %d database error lines for %d database faults", r.name, l.incarnation, l.outageLogs, faults)
				}
			}
		}
	}
	rep.check("no replica exits on its own", "processes that exited without being told", lives, unexpected, unexEx)
	rep.check("no panics", "panics in replica logs", lives, panics, "")
	rep.check("outage logged once", fmt.Sprintf("processes that logged more than %d database errors per database fault (one per component), plus one at start", outageLinesPerFault), lives, noisy, noisyEx)
	rep.check("final graceful stop", "replicas that did not exit 0 on SIGTERM at the end", len(h.replicas), len(stopErrs), strings.Join(stopErrs, "; "))
	rep.info("replica processes run", fmt.Sprint(lives))
	rep.info("stale writes rejected (logged by replicas)", fmt.Sprint(stale))
}

func (h *harness) auditInfo(ctx context.Context, rep *report) error {
	var jobs, done, failed, results, retried, events int
	err := h.pool.QueryRow(ctx, `
SELECT (SELECT count(*) FROM monitoring_job),
       (SELECT count(*) FROM monitoring_job WHERE state = 'DONE'),
       (SELECT count(*) FROM monitoring_job WHERE state = 'FAILED'),
       (SELECT count(*) FROM monitoring_job_result),
       (SELECT count(*) FROM monitoring_job_result WHERE attempt > 1),
       (SELECT count(*) FROM alert_outbox)`).Scan(&jobs, &done, &failed, &results, &retried, &events)
	if err != nil {
		return err
	}
	rep.info("jobs / DONE / FAILED", fmt.Sprintf("%d / %d / %d", jobs, done, failed))
	rep.info("results / written on a later attempt", fmt.Sprintf("%d / %d", results, retried))
	rep.info("alert events / webhook requests", fmt.Sprintf("%d / %d", events, len(h.recv.snapshot())))
	return nil
}
