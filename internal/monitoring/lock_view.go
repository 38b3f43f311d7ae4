package monitoring

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// LockHolder is a singleton lock as the instances page shows it: who ran the
// task last, when, and whether the lock still holds.
type LockHolder struct {
	Name      string
	LockedBy  string
	LockedAt  time.Time
	LockUntil time.Time
	// Held: lock_until is still ahead of the database clock. After an early
	// release it stays held until lock_at_least_for has passed, and LockedBy is
	// the replica that ran the task last.
	Held bool
}

// LockHolders lists every singleton lock (one row per task, a handful).
func (s *Store) LockHolders(ctx context.Context) ([]LockHolder, error) {
	var holders []LockHolder
	err := s.readSnapshot(ctx, func(tx pgx.Tx) error {
		var err error
		holders, err = lockHolders(ctx, tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return holders, nil
}

// lockHolders reads the locks inside a page's read snapshot, where now() is
// the snapshot's instant like every other window on the page.
func lockHolders(ctx context.Context, tx pgx.Tx) ([]LockHolder, error) {
	const q = `
SELECT name, locked_by, locked_at, lock_until, lock_until > now()
FROM scheduler_lock
ORDER BY name
LIMIT 100`
	rows, err := tx.Query(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read singleton locks: %w", err)
	}
	holders, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (LockHolder, error) {
		var h LockHolder
		err := row.Scan(&h.Name, &h.LockedBy, &h.LockedAt, &h.LockUntil, &h.Held)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("read singleton locks: %w", err)
	}
	return holders, nil
}
