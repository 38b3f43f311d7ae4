package monitoring

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// InstanceRow is a replica as the instances page shows it.
type InstanceRow struct {
	Name        string
	Addr        string
	Version     string
	StartedAt   time.Time
	HeartbeatAt time.Time
	StoppedAt   *time.Time
	// Live: a heartbeat within LiveWithin on the database clock, and not
	// stopped.
	Live bool
	// JobsHeld counts RUNNING jobs it claimed last; HeldExpired those of them
	// whose lease has lapsed (it died or stalled holding them).
	JobsHeld, HeldExpired int64
	// Completed counts results it stored in the last 5 minutes; Retried those
	// of them that took more than one claim (a retry or a takeover).
	Completed, Retried int64
	// StaleCompletions: completions this replica had rejected since it
	// started (its lease had passed to another), as its heartbeat reports.
	StaleCompletions int64
}

// InstanceList is the replicas page.
type InstanceList struct {
	Now       time.Time
	Instances []InstanceRow
	Locks     []LockHolder // singleton maintenance tasks and who holds them
}

// RecentlySeen is how long a stopped or silent replica stays on the page.
const RecentlySeen = 24 * time.Hour

// InstanceList reads live and recently seen replicas, live ones first, with
// what they hold and did. At most 200 rows.
//
// Stale completions (a replica finishing a job it no longer held) write
// nothing to job data by design; each replica reports its own count with
// its heartbeat, as it does on /metrics (vigil_stale_completions_total).
func (s *Store) InstanceList(ctx context.Context) (InstanceList, error) {
	const q = `
WITH held AS (
    SELECT owner_instance AS name, count(*) AS n, count(*) FILTER (WHERE lease_until <= now()) AS expired
    FROM monitoring_job
    WHERE state = 'RUNNING'
    GROUP BY owner_instance
), completed AS (
    SELECT probed_by AS name, count(*) AS n, count(*) FILTER (WHERE attempt > 1) AS retried
    FROM monitoring_job_result
    WHERE observed_at > now() - interval '5 minutes'
    GROUP BY probed_by
)
SELECT i.name, i.addr, i.version, i.started_at, i.heartbeat_at, i.stopped_at,
       i.stopped_at IS NULL AND i.heartbeat_at > now() - $1 * interval '1 millisecond' AS live,
       coalesce(h.n, 0), coalesce(h.expired, 0), coalesce(c.n, 0), coalesce(c.retried, 0),
       i.stale_completions
FROM vigil_instance i
LEFT JOIN held h ON h.name = i.name
LEFT JOIN completed c ON c.name = i.name
WHERE i.heartbeat_at > now() - $2 * interval '1 millisecond' OR h.n > 0
ORDER BY live DESC, i.name
LIMIT 200`
	var list InstanceList
	err := s.readSnapshot(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&list.Now); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, q, LiveWithin.Milliseconds(), RecentlySeen.Milliseconds())
		if err != nil {
			return err
		}
		list.Instances, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (InstanceRow, error) {
			var in InstanceRow
			err := row.Scan(&in.Name, &in.Addr, &in.Version, &in.StartedAt, &in.HeartbeatAt, &in.StoppedAt,
				&in.Live, &in.JobsHeld, &in.HeldExpired, &in.Completed, &in.Retried, &in.StaleCompletions)
			return in, err
		})
		if err != nil {
			return err
		}
		list.Locks, err = lockHolders(ctx, tx)
		return err
	})
	if err != nil {
		return InstanceList{}, fmt.Errorf("read instances: %w", err)
	}
	return list, nil
}
