package monitoring

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Sources of a service: the config file owns 'config' rows (SyncConfig rewrites
// them at every start), operators own 'admin' rows.
const (
	SourceConfig = "config"
	SourceAdmin  = "admin"
)

var (
	// ErrConfigOwned is returned when an operator tries to change a service the
	// config file defines: the file is its source of truth.
	ErrConfigOwned = errors.New("this service is defined in the config file, which is its source of truth: change it there and restart the replicas")
	// ErrInUse is returned when a group still has services.
	ErrInUse = errors.New("still in use")
)

// ManagedService is a service as the admin pages edit it.
type ManagedService struct {
	ServiceSpec
	ID        int64
	Source    string
	RetiredAt *time.Time
}

// ManagedServiceByName returns a service (retired or not); ErrNotFound.
func (s *Store) ManagedServiceByName(ctx context.Context, name string) (ManagedService, error) {
	list, err := s.managedServices(ctx, `WHERE s.name = $1`, name)
	if err != nil {
		return ManagedService{}, err
	}
	if len(list) == 0 {
		return ManagedService{}, ErrNotFound
	}
	return list[0], nil
}

// ManagedServices lists the services that are not retired, by group and name.
func (s *Store) ManagedServices(ctx context.Context) ([]ManagedService, error) {
	return s.managedServices(ctx, `WHERE s.retired_at IS NULL`)
}

func (s *Store) managedServices(ctx context.Context, where string, args ...any) ([]ManagedService, error) {
	q := `
SELECT s.id, s.name, coalesce(g.name, ''), s.url, s.interval_seconds, s.timeout_ms, s.enabled, s.source, s.retired_at
FROM monitored_service s LEFT JOIN monitoring_group g ON g.id = s.group_id
` + where + `
ORDER BY coalesce(g.name, ''), s.name`
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("services: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ManagedService, error) {
		var m ManagedService
		var interval, timeoutMS int32
		err := r.Scan(&m.ID, &m.Name, &m.Group, &m.URL, &interval, &timeoutMS, &m.Enabled, &m.Source, &m.RetiredAt)
		m.Interval = time.Duration(interval) * time.Second
		m.Timeout = time.Duration(timeoutMS) * time.Millisecond
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("services: %w", err)
	}
	return list, nil
}

// ServiceCreate adds an operator-owned service; the producer picks it up at its
// next tick on every replica. ErrExists when the name is taken (also by a
// retired service), ErrNotFound when the group does not exist.
func (s *Store) ServiceCreate(ctx context.Context, spec ServiceSpec) error {
	const q = `
INSERT INTO monitored_service (name, group_id, url, interval_seconds, timeout_ms, enabled, source)
SELECT $1, g.id, $3, $4, $5, $6, 'admin'
FROM (SELECT 1) one LEFT JOIN monitoring_group g ON g.name = $2
WHERE $2 = '' OR g.id IS NOT NULL`
	tag, err := s.pool.Exec(ctx, q, spec.Name, spec.Group, spec.URL,
		int32(spec.Interval/time.Second), int32(spec.Timeout/time.Millisecond), spec.Enabled)
	switch {
	case isUniqueViolation(err):
		return fmt.Errorf("service %q: %w", spec.Name, ErrExists)
	case err != nil:
		return fmt.Errorf("create service: %w", err)
	case tag.RowsAffected() == 0:
		return fmt.Errorf("group %q: %w", spec.Group, ErrNotFound)
	}
	return nil
}

// ServiceUpdate changes an operator-owned service (the name stays). Jobs
// already created keep their snapshot; the next slot uses the new values.
// ErrConfigOwned, ErrNotFound.
func (s *Store) ServiceUpdate(ctx context.Context, name string, spec ServiceSpec) error {
	return s.adminServiceWrite(ctx, name, func(tx pgx.Tx, id int64) error {
		const q = `
UPDATE monitored_service SET group_id = (SELECT id FROM monitoring_group WHERE name = $2),
    url = $3, interval_seconds = $4, timeout_ms = $5, enabled = $6, updated_at = clock_timestamp()
WHERE id = $1 AND ($2 = '' OR EXISTS (SELECT 1 FROM monitoring_group WHERE name = $2))`
		tag, err := tx.Exec(ctx, q, id, spec.Group, spec.URL,
			int32(spec.Interval/time.Second), int32(spec.Timeout/time.Millisecond), spec.Enabled)
		if err == nil && tag.RowsAffected() == 0 {
			err = fmt.Errorf("group %q: %w", spec.Group, ErrNotFound)
		}
		return err
	})
}

// ServiceSetEnabled pauses (false) or resumes (true) an operator-owned service.
func (s *Store) ServiceSetEnabled(ctx context.Context, name string, enabled bool) error {
	return s.adminServiceWrite(ctx, name, func(tx pgx.Tx, id int64) error {
		_, err := tx.Exec(ctx, `UPDATE monitored_service SET enabled = $2, updated_at = clock_timestamp() WHERE id = $1`, id, enabled)
		return err
	})
}

// ServiceDelete removes an operator-owned service. With keepHistory it is
// retired like a service that left the config file (no new jobs, results
// still readable, the name stays taken); without, the service and all its
// jobs, results, status, alerts and rollups are deleted.
func (s *Store) ServiceDelete(ctx context.Context, name string, keepHistory bool) error {
	return s.adminServiceWrite(ctx, name, func(tx pgx.Tx, id int64) error {
		if keepHistory {
			_, err := tx.Exec(ctx, `
UPDATE monitored_service SET retired_at = clock_timestamp(), enabled = false, updated_at = clock_timestamp()
WHERE id = $1`, id)
			return err
		}
		for _, q := range []string{
			`DELETE FROM alert_outbox WHERE service_id = $1`, // deliveries cascade
			`DELETE FROM monitoring_job_result WHERE service_id = $1`,
			`DELETE FROM service_status WHERE service_id = $1`,
			`DELETE FROM service_rollup_hourly WHERE service_id = $1`,
			`DELETE FROM service_rollup_daily WHERE service_id = $1`,
			`DELETE FROM monitoring_job WHERE service_id = $1`,
			`DELETE FROM monitored_service WHERE id = $1`,
		} {
			if _, err := tx.Exec(ctx, q, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// adminServiceWrite locks the named service's row and runs write when the
// operators own it.
func (s *Store) adminServiceWrite(ctx context.Context, name string, write func(pgx.Tx, int64) error) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var id int64
		var source string
		err := tx.QueryRow(ctx, `SELECT id, source FROM monitored_service WHERE name = $1 AND retired_at IS NULL FOR UPDATE`, name).
			Scan(&id, &source)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if source != SourceAdmin {
			return ErrConfigOwned
		}
		return write(tx, id)
	})
	if err != nil {
		return fmt.Errorf("service %q: %w", name, err)
	}
	return nil
}

// Groups returns every group name, sorted.
func (s *Store) Groups(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT name FROM monitoring_group ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("groups: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("groups: %w", err)
	}
	return names, nil
}

// GroupCreate adds a group; ErrExists.
func (s *Store) GroupCreate(ctx context.Context, name string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO monitoring_group (name) VALUES ($1)`, name)
	if isUniqueViolation(err) {
		return fmt.Errorf("group %q: %w", name, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("create group: %w", err)
	}
	return nil
}

// GroupDelete removes a group no service (retired ones included) is filed
// under; ErrInUse, ErrNotFound.
func (s *Store) GroupDelete(ctx context.Context, name string) error {
	const q = `
DELETE FROM monitoring_group g WHERE g.name = $1
  AND NOT EXISTS (SELECT 1 FROM monitored_service s WHERE s.group_id = g.id)
RETURNING id`
	var id int64
	err := s.pool.QueryRow(ctx, q, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		var exists bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM monitoring_group WHERE name = $1)`, name).Scan(&exists); err != nil {
			return fmt.Errorf("delete group: %w", err)
		}
		if exists {
			return fmt.Errorf("group %q has services: move or delete them first: %w", name, ErrInUse)
		}
		return fmt.Errorf("group %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete group: %w", err)
	}
	return nil
}

// JobOwner names a job's service and its group ("" for none), for a
// permission check before a change; ErrNotFound.
func (s *Store) JobOwner(ctx context.Context, id int64) (service, group string, err error) {
	const q = `
SELECT s.name, coalesce(g.name, '')
FROM monitoring_job j JOIN monitored_service s ON s.id = j.service_id
LEFT JOIN monitoring_group g ON g.id = s.group_id
WHERE j.id = $1`
	err = s.pool.QueryRow(ctx, q, id).Scan(&service, &group)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", ErrNotFound
	}
	if err != nil {
		return "", "", fmt.Errorf("job %d: %w", id, err)
	}
	return service, group, nil
}

// ErrNotFailed is returned when a requeue finds the job in another state.
var ErrNotFailed = errors.New("only a FAILED job can be requeued")

// JobRequeue makes a FAILED job READY now with a fresh attempt budget; its last
// error stays visible until the next attempt. ErrNotFailed, ErrNotFound.
func (s *Store) JobRequeue(ctx context.Context, id int64) error {
	const q = `
UPDATE monitoring_job SET state = 'READY', attempts = 0, available_at = clock_timestamp(), finished_at = NULL
WHERE id = $1 AND state = 'FAILED'`
	tag, err := s.pool.Exec(ctx, q, id)
	if err != nil {
		return fmt.Errorf("requeue job %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		if _, _, err := s.JobOwner(ctx, id); err != nil {
			return err
		}
		return fmt.Errorf("job %d: %w", id, ErrNotFailed)
	}
	return nil
}

// ErrNotReady is returned when a cancel finds the job in another state.
var ErrNotReady = errors.New("only a READY job can be cancelled")

// JobCancel ends a READY job as FAILED with the reason, so no replica claims
// it; the producer does not recreate it (one job per slot). ErrNotReady,
// ErrNotFound.
func (s *Store) JobCancel(ctx context.Context, id int64, reason string) error {
	const q = `
UPDATE monitoring_job SET state = 'FAILED', finished_at = clock_timestamp(), last_error = $2
WHERE id = $1 AND state = 'READY'`
	tag, err := s.pool.Exec(ctx, q, id, reason)
	if err != nil {
		return fmt.Errorf("cancel job %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		if _, _, err := s.JobOwner(ctx, id); err != nil {
			return err
		}
		return fmt.Errorf("job %d: %w", id, ErrNotReady)
	}
	return nil
}
