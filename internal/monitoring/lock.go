package monitoring

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Singleton tasks run on one replica at a time through a row of scheduler_lock,
// with ShedLock's semantics:
//
//   - Acquiring is one atomic statement on the DB clock: insert the row, or take
//     it over when its lock_until has passed. A replica's own clock is never
//     read, so replicas whose clocks disagree still agree on who holds a lock.
//   - lock_at_most_for bounds a hold: a holder that dies or stalls loses the lock
//     when it lapses, and the task stops itself before that (RunSingleton).
//   - lock_at_least_for keeps the lock after an early release, so a replica that
//     ticks just after the holder finished does not run the task again.
//   - locked_by names the replica; locked_at, set by the database at acquire
//     time, identifies this particular hold when it is released.

// ErrLockLost is returned by ReleaseLock when the hold had lapsed and another
// replica (or a later run) took the lock: the task outlived lock_at_most_for.
var ErrLockLost = errors.New("singleton lock no longer held")

// LockParams asks for a named lock. The durations are measured on the DB clock
// from the moment the lock is taken; no point in time is passed.
type LockParams struct {
	Name       string
	Instance   string        // this replica, stored as locked_by
	AtMostFor  time.Duration // the lock lapses after this even if never released
	AtLeastFor time.Duration // an early release keeps the lock until this has passed
}

func (p LockParams) check() error {
	switch {
	case p.Name == "":
		return errors.New("lock needs a name")
	case p.Instance == "":
		return errors.New("lock needs the instance that holds it")
	case p.AtMostFor <= 0:
		return fmt.Errorf("lock %q: lock_at_most_for must be more than 0", p.Name)
	case p.AtLeastFor < 0 || p.AtLeastFor > p.AtMostFor:
		return fmt.Errorf("lock %q: lock_at_least_for %s must be between 0 and lock_at_most_for %s", p.Name, p.AtLeastFor, p.AtMostFor)
	}
	return nil
}

// Lock is one hold of a named lock, with the database's times.
type Lock struct {
	Name       string
	LockedBy   string
	LockedAt   time.Time // DB clock; with Name and LockedBy it identifies the hold
	LockUntil  time.Time // DB clock
	AtLeastFor time.Duration
}

// AcquireLock takes the named lock if nobody holds it, in one statement: the
// row is inserted, or taken over only when its lock_until has passed on the DB
// clock. Two replicas asking at once serialise on the row; the second sees the
// first one's lock_until and gets false.
func (s *Store) AcquireLock(ctx context.Context, p LockParams) (Lock, bool, error) {
	if err := p.check(); err != nil {
		return Lock{}, false, err
	}
	const q = `
INSERT INTO scheduler_lock AS l (name, lock_until, locked_at, locked_by)
SELECT $1, db.now + $2 * interval '1 microsecond', db.now, $3
FROM (SELECT clock_timestamp() AS now) db
ON CONFLICT (name) DO UPDATE
SET lock_until = EXCLUDED.lock_until, locked_at = EXCLUDED.locked_at, locked_by = EXCLUDED.locked_by
WHERE l.lock_until <= EXCLUDED.locked_at
RETURNING locked_at, lock_until`
	l := Lock{Name: p.Name, LockedBy: p.Instance, AtLeastFor: p.AtLeastFor}
	err := s.pool.QueryRow(ctx, q, p.Name, p.AtMostFor.Microseconds(), p.Instance).Scan(&l.LockedAt, &l.LockUntil)
	if errors.Is(err, pgx.ErrNoRows) {
		return Lock{}, false, nil // held elsewhere
	}
	if err != nil {
		return Lock{}, false, fmt.Errorf("acquire lock %q: %w", p.Name, err)
	}
	return l, true, nil
}

// ReleaseLock ends a hold early, but not before lock_at_least_for has passed
// since it was taken: lock_until becomes the later of locked_at + at_least and
// now, both on the DB clock. Only this hold is released (same name, holder and
// locked_at); ErrLockLost if it had lapsed and someone else took the lock.
func (s *Store) ReleaseLock(ctx context.Context, l Lock) error {
	const q = `
UPDATE scheduler_lock
SET lock_until = GREATEST(locked_at + $4 * interval '1 microsecond', clock_timestamp())
WHERE name = $1 AND locked_by = $2 AND locked_at = $3`
	tag, err := s.pool.Exec(ctx, q, l.Name, l.LockedBy, l.LockedAt, l.AtLeastFor.Microseconds())
	if err != nil {
		return fmt.Errorf("release lock %q: %w", l.Name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("release lock %q taken at %s: %w", l.Name, l.LockedAt.Format(time.RFC3339Nano), ErrLockLost)
	}
	return nil
}

// SingletonTask is work that must run on at most one replica at a time.
type SingletonTask struct {
	Name       string
	Every      time.Duration // how often each replica tries to run it
	AtMostFor  time.Duration // longer than a run can take
	AtLeastFor time.Duration // shortest gap between two runs anywhere
	Run        func(ctx context.Context) error
}

// RunSingleton runs the task once if this replica gets its lock, and reports
// whether it ran. The task's context ends before lock_at_most_for does (at 90%
// of it, measured on this replica's monotonic clock from after the acquire), so
// a slow run stops rather than overlap a run elsewhere. The lock is released
// when the task returns, errors and panics included.
func (s *Store) RunSingleton(ctx context.Context, instance string, t SingletonTask) (ran bool, err error) {
	lock, ok, err := s.AcquireLock(ctx, LockParams{
		Name: t.Name, Instance: instance, AtMostFor: t.AtMostFor, AtLeastFor: t.AtLeastFor,
	})
	if err != nil || !ok {
		return false, err
	}
	runCtx, cancel := context.WithTimeout(ctx, t.AtMostFor*9/10)
	runErr := runRecovered(runCtx, t)
	cancel()

	// Release even when ctx is done (shutdown): the lock then lapses after
	// lock_at_least_for instead of lock_at_most_for.
	relCtx, cancelRel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancelRel()
	if err := s.ReleaseLock(relCtx, lock); err != nil {
		return true, errors.Join(runErr, err)
	}
	return true, runErr
}

func runRecovered(ctx context.Context, t SingletonTask) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("task %q panicked: %v", t.Name, r)
		}
	}()
	return t.Run(ctx)
}
