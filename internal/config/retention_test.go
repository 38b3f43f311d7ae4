package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseDays(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "7d", want: 7 * 24 * time.Hour},
		{in: "400d", want: 400 * 24 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "2d30m", want: 48*time.Hour + 30*time.Minute},
		{in: "168h", want: 168 * time.Hour},
		{in: "90m", want: 90 * time.Minute},
		{in: "0d", want: 0},
		{in: "7", bad: true},
		{in: "d", bad: true},
		{in: "1.5d", bad: true},
		{in: "7days", bad: true},
		{in: "1d-2h", bad: true},
		{in: "-7d", bad: true},
		{in: "200000d", bad: true},
		{in: "106751d24h", bad: true},
	}
	for _, s := range scenarios {
		t.Run(s.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseDays(s.in)
			if s.bad {
				assert.Error(t, err, "got %s", got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, s.want, got)
		})
	}
}

func TestParseRetention(t *testing.T) {
	t.Parallel()

	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		cfg, err := Parse([]byte("services: []\n"))
		require.NoError(t, err)
		assert.Equal(t, Retention{Raw: 7 * 24 * time.Hour, Rollups: 400 * 24 * time.Hour, FailedJobs: 30 * 24 * time.Hour, BatchSize: 5000}, cfg.Retention)
	})

	t.Run("days and Go durations", func(t *testing.T) {
		t.Parallel()
		cfg, err := Parse([]byte("retention:\n  raw: 36h\n  rollups: 1d12h\n  failed_jobs: 14d\n"))
		require.NoError(t, err)
		assert.Equal(t, Retention{Raw: 36 * time.Hour, Rollups: 36 * time.Hour, FailedJobs: 14 * 24 * time.Hour, BatchSize: 5000}, cfg.Retention)
	})
}

func TestParseRetentionRejects(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		name  string
		yaml  string
		field string
		want  []string
	}{
		{
			name:  "number without unit",
			yaml:  "retention:\n  raw: 7\n",
			field: "retention.raw",
			want:  []string{`raw "7" is not a duration (line 2)`, "write 7d for 7 days"},
		},
		{
			name:  "unknown unit",
			yaml:  "retention:\n  rollups: 1y\n",
			field: "retention.rollups",
			want:  []string{`rollups "1y" is not a duration (line 2)`, "such as 7d", "168h"},
		},
		{
			name:  "unknown key",
			yaml:  "retention:\n  failed: 30d\n",
			field: "retention.failed",
			want:  []string{`unknown field "failed" (line 2)`, "raw, rollups, failed_jobs, batch_size"},
		},
		{
			name:  "raw too short",
			yaml:  "retention: {raw: 10m}\n",
			field: "retention.raw",
			want:  []string{"raw 10m is shorter than 1h (line 1)", "set retention.raw to 1h or more (default 7d)"},
		},
		{
			name:  "rollups shorter than raw",
			yaml:  "retention:\n  raw: 30d\n  rollups: 7d\n  failed_jobs: 30d\n",
			field: "retention.rollups",
			want:  []string{"rollups 7d is shorter than raw 30d (line 3)", "set retention.rollups to 30d or more"},
		},
		{
			name:  "failed jobs shorter than raw",
			yaml:  "retention:\n  raw: 14d\n  failed_jobs: 1d12h\n",
			field: "retention.failed_jobs",
			want:  []string{"failed_jobs 1d12h is shorter than raw 14d (line 3)", "set retention.failed_jobs to 14d or more"},
		},
		{
			name:  "batch size out of range",
			yaml:  "retention: {batch_size: 5}\n",
			field: "retention.batch_size",
			want:  []string{"batch_size 5 is outside 100..100000 (line 1)", "default 5000"},
		},
		{
			name:  "section is a list",
			yaml:  "retention: [7d]\n",
			field: "retention",
			want:  []string{"retention is a list, not a mapping", "retention: {raw: 7d"},
		},
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(s.yaml))
			var invalid *ValidationError
			require.ErrorAs(t, err, &invalid)
			require.Len(t, invalid.Problems, 1, "problems:\n%s", err)
			assert.Equal(t, s.field, invalid.Problems[0].Field)
			for _, w := range s.want {
				assert.Contains(t, invalid.Problems[0].Message, w)
			}
		})
	}
}
