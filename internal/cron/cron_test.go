package cron

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return v
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	scenarios := []struct{ expr, want string }{
		{"0 2 * *", `has 4 fields, not 5`},
		{"60 * * * *", "minute 60 is outside 0-59"},
		{"0 24 * * *", "hour 24 is outside 0-23"},
		{"0 0 0 * *", "day of month 0 is outside 1-31"},
		{"0 0 * 13 *", "month 13 is outside 1-12"},
		{"0 0 * * 8", "day of week 8 is outside 0-7"},
		{"0 0 * * funday", `day of week "funday" is not a number or a name (sun..sat)`},
		{"*/0 * * * *", `minute step "0" is not a positive whole number`},
		{"0 5-1 * * *", `hour range "5-1" runs backwards`},
		{"x * * * *", `minute "x" is not a number`},
		{"@often", `unknown macro "@often"`},
	}
	for _, sc := range scenarios {
		_, err := Parse(sc.expr)
		require.Error(t, err, sc.expr)
		assert.Contains(t, err.Error(), sc.want, sc.expr)
	}
}

func TestMatches(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		expr  string
		time  string
		match bool
	}{
		{"0 2 * * sun", "2026-05-03T02:00:00Z", true}, // a Sunday
		{"0 2 * * sun", "2026-05-03T02:01:00Z", false},
		{"0 2 * * sun", "2026-05-04T02:00:00Z", false}, // Monday
		{"0 2 * * 7", "2026-05-03T02:00:00Z", true},    // 7 is Sunday too
		{"*/15 * * * *", "2026-05-04T10:45:00Z", true},
		{"*/15 * * * *", "2026-05-04T10:50:00Z", false},
		{"5/20 * * * *", "2026-05-04T10:45:00Z", true},
		{"0 9-17/4 * * mon-fri", "2026-05-04T13:00:00Z", true},
		{"0 9-17/4 * * mon-fri", "2026-05-04T15:00:00Z", false},
		{"0 0 1,15 jan-mar *", "2026-02-15T00:00:00Z", true},
		{"0 0 1,15 jan-mar *", "2026-04-15T00:00:00Z", false},
		// Both day fields restricted: either matches.
		{"0 0 13 * fri", "2026-05-13T00:00:00Z", true}, // a Wednesday the 13th
		{"0 0 13 * fri", "2026-05-08T00:00:00Z", true}, // a Friday the 8th
		{"0 0 13 * fri", "2026-05-12T00:00:00Z", false},
		{"@daily", "2026-05-12T00:00:00Z", true},
		{"@weekly", "2026-05-10T00:00:00Z", true},
	}
	for _, sc := range scenarios {
		s, err := Parse(sc.expr)
		require.NoError(t, err, sc.expr)
		assert.Equal(t, sc.match, s.Matches(at(t, sc.time)), "%s at %s", sc.expr, sc.time)
	}
}

func TestWindowOpenAt(t *testing.T) {
	t.Parallel()
	s, err := Parse("0 2 * * sun")
	require.NoError(t, err)
	w := Window{Schedule: s, Duration: 30 * time.Minute}

	start, open := w.OpenAt(at(t, "2026-05-03T02:10:00Z"))
	require.True(t, open)
	assert.Equal(t, at(t, "2026-05-03T02:00:00Z"), start)

	_, open = w.OpenAt(at(t, "2026-05-03T02:30:00Z"))
	assert.False(t, open, "the end is exclusive")
	_, open = w.OpenAt(at(t, "2026-05-03T01:59:59Z"))
	assert.False(t, open)
	_, open = w.OpenAt(at(t, "2026-05-10T02:29:59Z"))
	assert.True(t, open, "the next Sunday")

	next, ok := w.NextOpen(at(t, "2026-05-03T02:10:00Z"))
	require.True(t, ok)
	assert.Equal(t, at(t, "2026-05-10T02:00:00Z"), next)
}

func TestWindowInATimeZone(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	s, err := Parse("30 1 * * *")
	require.NoError(t, err)
	w := Window{Schedule: s, Duration: 2 * time.Hour, Location: berlin}

	// 01:30 in Berlin during summer time is 23:30 UTC the day before.
	start, open := w.OpenAt(at(t, "2026-07-01T00:00:00Z"))
	require.True(t, open)
	assert.Equal(t, at(t, "2026-06-30T23:30:00Z"), start.UTC())

	// After the autumn change (2026-10-25, 03:00 CEST -> 02:00 CET) the window still opens
	// at 01:30 local time, which is now 00:30 UTC.
	start, open = w.OpenAt(at(t, "2026-10-26T01:00:00Z"))
	require.True(t, open)
	assert.Equal(t, at(t, "2026-10-26T00:30:00Z"), start.UTC())

	// A schedule inside the spring gap (02:30 does not exist on 2026-03-29) is skipped, and
	// the search still ends.
	gap, err := Parse("30 2 29 3 *")
	require.NoError(t, err)
	_, ok := Window{Schedule: gap, Duration: time.Hour, Location: berlin}.OpenAt(at(t, "2026-03-29T01:45:00Z"))
	assert.False(t, ok)
	next, ok := Window{Schedule: gap, Duration: time.Hour, Location: berlin}.NextOpen(at(t, "2026-03-28T00:00:00Z"))
	if ok {
		assert.NotEqual(t, 2026, next.Year(), "no 02:30 on 2026-03-29 in Berlin")
	}
}
