package monitoring

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigilhq/vigil/internal/cron"
)

// MaintenanceWindowSpec is a maintenance window as the config file defines it: one-off
// (Start, End) or recurring (Cron, Duration, Timezone). During a window the services it
// names, directly or through their group, are probed and their results stored, but alert
// transitions are held back.
type MaintenanceWindowSpec struct {
	Name     string
	Services []string
	Groups   []string
	Start    time.Time
	End      time.Time
	Cron     string
	Duration time.Duration
	Timezone string // default UTC
}

// SyncMaintenanceWindows makes the maintenance_window table match the config file, so the
// completing transaction and the dashboard read the same windows. Unchanged rows are not
// rewritten; concurrent syncs from replicas starting together take turns.
func (s *Store) SyncMaintenanceWindows(ctx context.Context, windows []MaintenanceWindowSpec) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('vigil.sync_maintenance_windows'))`); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		names := make([]string, 0, len(windows))
		for _, w := range windows {
			names = append(names, w.Name)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM maintenance_window WHERE name <> ALL($1::text[])`, names); err != nil {
			return fmt.Errorf("remove windows: %w", err)
		}
		const upsert = `
INSERT INTO maintenance_window AS w (name, service_names, group_names, starts_at, ends_at, cron, duration_seconds, timezone)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (name) DO UPDATE SET
    service_names = EXCLUDED.service_names, group_names = EXCLUDED.group_names,
    starts_at = EXCLUDED.starts_at, ends_at = EXCLUDED.ends_at, cron = EXCLUDED.cron,
    duration_seconds = EXCLUDED.duration_seconds, timezone = EXCLUDED.timezone, updated_at = clock_timestamp()
WHERE (w.service_names, w.group_names, w.starts_at, w.ends_at, w.cron, w.duration_seconds, w.timezone)
      IS DISTINCT FROM (EXCLUDED.service_names, EXCLUDED.group_names, EXCLUDED.starts_at, EXCLUDED.ends_at,
                        EXCLUDED.cron, EXCLUDED.duration_seconds, EXCLUDED.timezone)`
		for _, w := range windows {
			var start, end *time.Time
			var cronText, tz *string
			var seconds *int32
			if w.Cron != "" {
				zone := w.Timezone
				if zone == "" {
					zone = "UTC"
				}
				secs := int32(w.Duration / time.Second)
				cronText, tz, seconds = &w.Cron, &zone, &secs
			} else {
				start, end = &w.Start, &w.End
			}
			_, err := tx.Exec(ctx, upsert, w.Name, nonNil(w.Services), nonNil(w.Groups), start, end, cronText, seconds, tz)
			if err != nil {
				return fmt.Errorf("window %q: %w", w.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sync maintenance windows into database: %w", err)
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// maintenanceWindow is a row of maintenance_window.
type maintenanceWindow struct {
	name             string
	services, groups []string
	start, end       *time.Time
	cron             *string
	durationSeconds  *int32
	timezone         *string
}

// openAt returns the start and end of the occurrence that contains t, if any. A recurring
// window whose expression or zone no longer parses never holds alerts back: sending an
// alert by mistake is better than swallowing one.
func (w maintenanceWindow) openAt(t time.Time) (start, end time.Time, open bool) {
	if w.cron == nil {
		if w.start != nil && w.end != nil && !t.Before(*w.start) && t.Before(*w.end) {
			return *w.start, *w.end, true
		}
		return time.Time{}, time.Time{}, false
	}
	rw, ok := w.recurring()
	if !ok {
		return time.Time{}, time.Time{}, false
	}
	if s, ok := rw.OpenAt(t); ok {
		return s, s.Add(rw.Duration), true
	}
	return time.Time{}, time.Time{}, false
}

// nextOpen returns the next start after t (within a year for recurring windows).
func (w maintenanceWindow) nextOpen(t time.Time) (time.Time, bool) {
	if w.cron == nil {
		if w.start != nil && w.start.After(t) {
			return *w.start, true
		}
		return time.Time{}, false
	}
	rw, ok := w.recurring()
	if !ok {
		return time.Time{}, false
	}
	return rw.NextOpen(t.Add(time.Minute).Truncate(time.Minute))
}

func (w maintenanceWindow) recurring() (cron.Window, bool) {
	if w.cron == nil || w.durationSeconds == nil || w.timezone == nil {
		return cron.Window{}, false
	}
	sched, err := cron.Parse(*w.cron)
	if err != nil {
		return cron.Window{}, false
	}
	loc, err := time.LoadLocation(*w.timezone)
	if err != nil {
		return cron.Window{}, false
	}
	return cron.Window{Schedule: sched, Duration: time.Duration(*w.durationSeconds) * time.Second, Location: loc}, true
}

const maintenanceWindowColumns = `w.name, w.service_names, w.group_names, w.starts_at, w.ends_at, w.cron, w.duration_seconds, w.timezone`

func scanMaintenanceWindow(row pgx.CollectableRow) (maintenanceWindow, error) {
	var w maintenanceWindow
	err := row.Scan(&w.name, &w.services, &w.groups, &w.start, &w.end, &w.cron, &w.durationSeconds, &w.timezone)
	return w, err
}

// maintenanceWindowAt returns the name of a window that covers the service at slot (a
// result belongs to the window its slot starts in), or "" when none does. It runs in the
// completing transaction, only when an alert is about to be announced.
func maintenanceWindowAt(ctx context.Context, tx pgx.Tx, serviceID, slot int64) (string, error) {
	const q = `
SELECT ` + maintenanceWindowColumns + `
FROM maintenance_window w, monitored_service m
LEFT JOIN monitoring_group g ON g.id = m.group_id
WHERE m.id = $1
  AND (m.name = ANY(w.service_names) OR g.name = ANY(w.group_names))
  AND (w.cron IS NOT NULL OR (to_timestamp($2) >= w.starts_at AND to_timestamp($2) < w.ends_at))
ORDER BY w.name`
	rows, err := tx.Query(ctx, q, serviceID, slot)
	if err != nil {
		return "", fmt.Errorf("maintenance windows: %w", err)
	}
	windows, err := pgx.CollectRows(rows, scanMaintenanceWindow)
	if err != nil {
		return "", fmt.Errorf("maintenance windows: %w", err)
	}
	at := time.Unix(slot, 0).UTC()
	for _, w := range windows {
		if _, _, open := w.openAt(at); open {
			return w.name, nil
		}
	}
	return "", nil
}

// MaintenanceWindowState is a window as the dashboard shows it, judged at the DB clock's
// now.
type MaintenanceWindowState struct {
	Name      string
	Services  []string
	Groups    []string
	Recurring bool
	Cron      string        // recurring windows
	Duration  time.Duration // recurring windows
	Timezone  string        // recurring windows
	Open      bool          // now inside an occurrence
	OpenStart time.Time     // of the current occurrence, when Open
	OpenEnd   time.Time     // of the current occurrence, when Open
	NextStart *time.Time    // the next occurrence after now, if any (within a year)
	// AffectedServices are the active services it covers, through their name or group.
	AffectedServices []string
}

// MaintenanceWindows lists the windows, whether each is open now and when it opens next,
// with the services each covers.
func (s *Store) MaintenanceWindows(ctx context.Context) ([]MaintenanceWindowState, error) {
	var out []MaintenanceWindowState
	// One read-only snapshot: now() is its instant, the same for every window.
	err := readOnly(ctx, s, func(tx pgx.Tx) error {
		var now time.Time
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+maintenanceWindowColumns+` FROM maintenance_window w ORDER BY w.name LIMIT 1000`)
		if err != nil {
			return err
		}
		windows, err := pgx.CollectRows(rows, scanMaintenanceWindow)
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `
SELECT m.name, coalesce(g.name, '') FROM monitored_service m
LEFT JOIN monitoring_group g ON g.id = m.group_id
WHERE m.retired_at IS NULL ORDER BY m.name LIMIT 5000`)
		if err != nil {
			return err
		}
		type svc struct{ name, group string }
		services, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (svc, error) {
			var v svc
			return v, row.Scan(&v.name, &v.group)
		})
		if err != nil {
			return err
		}
		for _, w := range windows {
			st := MaintenanceWindowState{Name: w.name, Services: w.services, Groups: w.groups, Recurring: w.cron != nil}
			if w.cron != nil {
				st.Cron = *w.cron
				if w.durationSeconds != nil {
					st.Duration = time.Duration(*w.durationSeconds) * time.Second
				}
				if w.timezone != nil {
					st.Timezone = *w.timezone
				}
			}
			st.OpenStart, st.OpenEnd, st.Open = w.openAt(now)
			if !st.Open && w.cron == nil && w.start != nil {
				st.OpenStart, st.OpenEnd = *w.start, *w.end
			}
			if next, ok := w.nextOpen(now); ok {
				st.NextStart = &next
			}
			for _, sv := range services {
				if slices.Contains(w.services, sv.name) || (sv.group != "" && slices.Contains(w.groups, sv.group)) {
					st.AffectedServices = append(st.AffectedServices, sv.name)
				}
			}
			out = append(out, st)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read maintenance windows: %w", err)
	}
	return out, nil
}

// ServicesInMaintenance maps each active service that an open window covers now to the
// window's name, for badges on the dashboard.
func (s *Store) ServicesInMaintenance(ctx context.Context) (map[string]string, error) {
	windows, err := s.MaintenanceWindows(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, w := range windows {
		if !w.Open {
			continue
		}
		for _, name := range w.AffectedServices {
			if _, seen := out[name]; !seen {
				out[name] = w.Name
			}
		}
	}
	return out, nil
}
