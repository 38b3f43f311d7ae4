package monitoring_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/internal/pgtest"
)

// replicaPair is two "replicas" on one database, each with its own pool (its own
// connections), as two processes would have.
type replicaPair struct {
	a, b   *monitoring.Store
	poolA  *pgxpool.Pool
	poolB  *pgxpool.Pool
	dbTime func(t *testing.T) time.Time
}

func newReplicaPair(t *testing.T) *replicaPair {
	t.Helper()
	url := pgtest.NewDatabase(t)
	open := func() *pgxpool.Pool {
		pool, err := pgxpool.New(context.Background(), url)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		return pool
	}
	p := &replicaPair{poolA: open(), poolB: open()}
	p.a, p.b = monitoring.NewStore(p.poolA), monitoring.NewStore(p.poolB)
	p.dbTime = func(t *testing.T) time.Time {
		var now time.Time
		require.NoError(t, p.poolA.QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&now))
		return now
	}
	return p
}

func TestAcquireLockOnlyOneOfManyWins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newReplicaPair(t)

	// 16 callers on two pools ask at once, twice: when the row does not exist
	// yet (racing inserts) and when it exists but has lapsed (racing updates).
	for round, name := range []string{"fresh", "lapsed"} {
		if round == 1 {
			_, err := r.poolA.Exec(ctx, `UPDATE scheduler_lock SET lock_until = clock_timestamp() - interval '1 second'`)
			require.NoError(t, err)
		}
		var wins atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 16 {
			store, instance := r.a, "a"
			if i%2 == 1 {
				store, instance = r.b, "b"
			}
			wg.Go(func() {
				<-start
				_, ok, err := store.AcquireLock(ctx, monitoring.LockParams{
					Name: "race", Instance: instance, AtMostFor: time.Minute, AtLeastFor: time.Second,
				})
				assert.NoError(t, err)
				if ok {
					wins.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		assert.EqualValues(t, 1, wins.Load(), "round %q: exactly one caller gets the lock", name)
	}
}

// Two replicas run the same task in a loop as fast as they can: the runs never
// overlap, and on the DB clock consecutive runs start at least
// lock_at_least_for apart, whoever runs them.
func TestSingletonRunsOnOneReplicaPerWindow(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newReplicaPair(t)
	const atLeast = 300 * time.Millisecond

	var (
		mu      sync.Mutex
		starts  []time.Time // locked_at, DB clock
		runners []string
		active  atomic.Int32
		overlap atomic.Bool
	)
	newTask := func(instance string, store *monitoring.Store) monitoring.SingletonTask {
		return monitoring.SingletonTask{
			Name: "window", AtMostFor: 10 * time.Second, AtLeastFor: atLeast,
			Run: func(ctx context.Context) error {
				if active.Add(1) > 1 {
					overlap.Store(true)
				}
				defer active.Add(-1)
				// While it runs, the lock row is this run's hold.
				var now time.Time
				if err := store.Pool().QueryRow(ctx, `SELECT locked_at FROM scheduler_lock WHERE name = 'window'`).Scan(&now); err != nil {
					return err
				}
				mu.Lock()
				starts = append(starts, now)
				runners = append(runners, instance)
				mu.Unlock()
				return nil
			},
		}
	}
	attempts := map[string]*atomic.Int64{"a": {}, "b": {}}
	var wg sync.WaitGroup
	for instance, store := range map[string]*monitoring.Store{"a": r.a, "b": r.b} {
		wg.Go(func() {
			task := newTask(instance, store)
			for ctx.Err() == nil {
				attempts[instance].Add(1)
				_, _ = store.RunSingleton(ctx, instance, task)
			}
		})
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(starts) >= 4
	}, 10*time.Second, 10*time.Millisecond)
	cancel()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	assert.False(t, overlap.Load(), "two runs overlapped")
	for i := 1; i < len(starts); i++ {
		gap := starts[i].Sub(starts[i-1])
		assert.GreaterOrEqual(t, gap, atLeast, "run %d (%s) started %s after run %d (%s)", i, runners[i], gap, i-1, runners[i-1])
	}
	// Both replicas kept trying the whole time; the lock, not luck, kept them apart.
	assert.Greater(t, attempts["a"].Load(), int64(len(starts)))
	assert.Greater(t, attempts["b"].Load(), int64(len(starts)))
}

// A holder that dies without releasing keeps the lock until lock_at_most_for
// has passed on the DB clock, and not a moment longer.
func TestKilledHolderLockIsTakenAfterAtMostFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newReplicaPair(t)
	const atMost = 700 * time.Millisecond
	params := func(instance string) monitoring.LockParams {
		return monitoring.LockParams{Name: "orphan", Instance: instance, AtMostFor: atMost, AtLeastFor: 100 * time.Millisecond}
	}

	held, ok, err := r.a.AcquireLock(ctx, params("a"))
	require.NoError(t, err)
	require.True(t, ok)
	r.poolA.Close() // replica a dies holding the lock

	_, ok, err = r.b.AcquireLock(ctx, params("b"))
	require.NoError(t, err)
	require.False(t, ok, "the dead holder's lock has not lapsed yet")

	var taken monitoring.Lock
	require.Eventually(t, func() bool {
		l, ok, err := r.b.AcquireLock(ctx, params("b"))
		require.NoError(t, err)
		taken = l
		return ok
	}, 5*time.Second, 20*time.Millisecond)
	assert.GreaterOrEqual(t, taken.LockedAt.Sub(held.LockedAt), atMost)
	assert.Equal(t, "b", taken.LockedBy)

	// The dead holder's release (had it woken up) would not free b's lock.
	err = r.b.ReleaseLock(ctx, held)
	assert.True(t, errors.Is(err, monitoring.ErrLockLost), "got %v", err)
	holders, err := r.b.LockHolders(ctx)
	require.NoError(t, err)
	require.Len(t, holders, 1)
	assert.Equal(t, monitoring.LockHolder{Name: "orphan", LockedBy: "b", LockedAt: taken.LockedAt, LockUntil: taken.LockUntil, Held: true},
		holders[0])
}

// lock_at_least_for is measured on the DB clock. Replica b's own clock is two
// hours ahead: by its clock, a's early-released lock expired long ago. It
// still cannot take the lock until at_least has passed on the database,
// because no replica's clock takes part: the lock calls pass durations only.
func TestAtLeastForHoldsAcrossReplicasWithSkewedClocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newReplicaPair(t)
	const atLeast = 800 * time.Millisecond
	skewedNowB := func() time.Time { return time.Now().Add(2 * time.Hour) }

	ran, err := r.a.RunSingleton(ctx, "a", monitoring.SingletonTask{
		Name: "skew", AtMostFor: time.Minute, AtLeastFor: atLeast,
		Run: func(context.Context) error { return nil }, // done at once: released early
	})
	require.NoError(t, err)
	require.True(t, ran)

	holders, err := r.b.LockHolders(ctx)
	require.NoError(t, err)
	require.Len(t, holders, 1)
	first := holders[0]
	assert.Equal(t, "a", first.LockedBy)
	assert.True(t, first.Held, "released early, but held until lock_at_least_for has passed")
	assert.Equal(t, atLeast, first.LockUntil.Sub(first.LockedAt), "early release sets lock_until to locked_at + at_least")
	require.True(t, skewedNowB().After(first.LockUntil), "by b's clock the lock has long expired")

	ranB, err := r.b.RunSingleton(ctx, "b", monitoring.SingletonTask{
		Name: "skew", AtMostFor: time.Minute, AtLeastFor: atLeast,
		Run: func(context.Context) error { t.Error("b ran inside a's lock_at_least_for"); return nil },
	})
	require.NoError(t, err)
	assert.False(t, ranB)

	var second monitoring.Lock
	require.Eventually(t, func() bool {
		l, ok, err := r.b.AcquireLock(ctx, monitoring.LockParams{Name: "skew", Instance: "b", AtMostFor: time.Minute, AtLeastFor: atLeast})
		require.NoError(t, err)
		second = l
		return ok
	}, 5*time.Second, 20*time.Millisecond)
	assert.GreaterOrEqual(t, second.LockedAt.Sub(first.LockedAt), atLeast)
	assert.True(t, r.dbTime(t).Before(skewedNowB()))
}

// Without lock_at_least_for a released lock is free at once; an at_least
// longer than at_most is refused.
func TestReleaseLockWithoutAtLeastForFreesAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newReplicaPair(t)

	l, ok, err := r.a.AcquireLock(ctx, monitoring.LockParams{Name: "short", Instance: "a", AtMostFor: time.Hour, AtLeastFor: 0})
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, r.a.ReleaseLock(ctx, l))
	_, ok, err = r.b.AcquireLock(ctx, monitoring.LockParams{Name: "short", Instance: "b", AtMostFor: time.Hour})
	require.NoError(t, err)
	assert.True(t, ok, "with no lock_at_least_for a released lock is free at once")

	_, err = r.a.RunSingleton(ctx, "a", monitoring.SingletonTask{Name: "bad", AtMostFor: time.Second, AtLeastFor: time.Minute})
	assert.ErrorContains(t, err, "lock_at_least_for")
}

// A task's context ends before its lock lapses, and a panicking task still
// releases its lock.
func TestRunSingletonBoundsTheTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newReplicaPair(t)

	var deadline time.Duration
	ran, err := r.a.RunSingleton(ctx, "a", monitoring.SingletonTask{
		Name: "bounded", AtMostFor: 2 * time.Second,
		Run: func(ctx context.Context) error {
			d, ok := ctx.Deadline()
			require.True(t, ok)
			deadline = time.Until(d)
			return nil
		},
	})
	require.NoError(t, err)
	require.True(t, ran)
	assert.LessOrEqual(t, deadline, 2*time.Second*9/10)

	ran, err = r.a.RunSingleton(ctx, "a", monitoring.SingletonTask{
		Name: "panics", AtMostFor: time.Hour,
		Run: func(context.Context) error { panic("boom") },
	})
	assert.True(t, ran)
	assert.ErrorContains(t, err, "boom")
	_, ok, err := r.b.AcquireLock(ctx, monitoring.LockParams{Name: "panics", Instance: "b", AtMostFor: time.Hour})
	require.NoError(t, err)
	assert.True(t, ok, "the panicking task's lock was released, not left for an hour")
}
