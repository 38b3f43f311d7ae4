package monitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ServiceSpec is a service as the config file defines it.
type ServiceSpec struct {
	Name     string
	Group    string // "" for none
	URL      string
	Interval time.Duration // whole seconds, at least 1s
	Timeout  time.Duration
	Enabled  bool
	Probe    ProbeSpec // type, HTTP options, conditions; secrets only as ${NAME} templates
}

// SyncSummary counts what a config sync changed.
type SyncSummary struct {
	Upserted int64 // services inserted or changed
	Retired  int64 // config services no longer in the file
}

// SyncConfig makes the database's config-owned groups and services match the
// file. It is idempotent (unchanged rows are not rewritten) and safe when
// several replicas start at once: a transaction-scoped advisory lock makes
// concurrent syncs take turns. Services that left the file are retired, not
// deleted, so their history stays readable.
func (s *Store) SyncConfig(ctx context.Context, groups []string, services []ServiceSpec) (SyncSummary, error) {
	var sum SyncSummary
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('vigil.sync_config'))`); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		const insertGroups = `
INSERT INTO monitoring_group (name) SELECT unnest($1::text[]) ON CONFLICT (name) DO NOTHING`
		if _, err := tx.Exec(ctx, insertGroups, groups); err != nil {
			return fmt.Errorf("groups: %w", err)
		}
		names := make([]string, len(services))
		groupNames := make([]*string, len(services))
		urls := make([]string, len(services))
		intervals := make([]int32, len(services))
		timeouts := make([]int32, len(services))
		enabled := make([]bool, len(services))
		probes := make([]string, len(services))
		for i, svc := range services {
			names[i] = svc.Name
			if svc.Group != "" {
				g := svc.Group
				groupNames[i] = &g
			}
			urls[i] = svc.URL
			intervals[i] = int32(svc.Interval / time.Second)
			timeouts[i] = int32(svc.Timeout / time.Millisecond)
			enabled[i] = svc.Enabled
			probe, err := json.Marshal(svc.Probe)
			if err != nil {
				return fmt.Errorf("service %q probe: %w", svc.Name, err)
			}
			probes[i] = string(probe)
		}
		const upsert = `
INSERT INTO monitored_service AS m (name, group_id, url, interval_seconds, timeout_ms, enabled, probe, source)
SELECT x.name, g.id, x.url, x.interval_seconds, x.timeout_ms, x.enabled, x.probe::jsonb, 'config'
FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::bool[], $7::text[])
     AS x(name, group_name, url, interval_seconds, timeout_ms, enabled, probe)
LEFT JOIN monitoring_group g ON g.name = x.group_name
ON CONFLICT (name) DO UPDATE SET
    group_id = EXCLUDED.group_id, url = EXCLUDED.url, interval_seconds = EXCLUDED.interval_seconds,
    timeout_ms = EXCLUDED.timeout_ms, enabled = EXCLUDED.enabled, probe = EXCLUDED.probe, source = 'config',
    retired_at = NULL, updated_at = clock_timestamp()
WHERE (m.group_id, m.url, m.interval_seconds, m.timeout_ms, m.enabled, m.probe, m.source, m.retired_at)
      IS DISTINCT FROM (EXCLUDED.group_id, EXCLUDED.url, EXCLUDED.interval_seconds,
                        EXCLUDED.timeout_ms, EXCLUDED.enabled, EXCLUDED.probe, 'config', NULL::timestamptz)`
		tag, err := tx.Exec(ctx, upsert, names, groupNames, urls, intervals, timeouts, enabled, probes)
		if err != nil {
			return fmt.Errorf("services: %w", err)
		}
		sum.Upserted = tag.RowsAffected()
		const retire = `
UPDATE monitored_service SET retired_at = clock_timestamp(), updated_at = clock_timestamp()
WHERE source = 'config' AND retired_at IS NULL AND name <> ALL($1::text[])`
		tag, err = tx.Exec(ctx, retire, names)
		if err != nil {
			return fmt.Errorf("retire services: %w", err)
		}
		sum.Retired = tag.RowsAffected()
		return nil
	})
	if err != nil {
		return sum, fmt.Errorf("sync config into database: %w", err)
	}
	return sum, nil
}
