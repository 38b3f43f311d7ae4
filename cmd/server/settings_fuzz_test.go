package main

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzParseSettings feeds the flag and KEY=VALUE environment parser arbitrary
// arguments and environment lines (NUL-separated): it never panics, a
// rejection is a usage error (exit code 2), an accepted result always has an
// instance name, and a setting that no flag mentions comes from the
// environment, or its default. Plain `go test` runs only the seeds; fuzz
// locally with
//
//	go test -run '^$' -fuzz FuzzParseSettings -fuzztime 30s ./cmd/server
func FuzzParseSettings(f *testing.F) {
	f.Add("-addr\x00:9090", "VIGIL_ADDR=:8081\x00DATABASE_URL=postgres://x")
	f.Add("", "VIGIL_ADDR=127.0.0.1:8082\x00VIGIL_INSTANCE=a")
	f.Add("-addr=nonsense", "")
	f.Add("-instance\x00", "VIGIL_ADDR=::1")
	f.Add("-h", "")
	f.Add("-log-level\x00loud\x00extra\x00-addr", "VIGIL_LOG_LEVEL=debug\x00=x\x00NOEQUALS")
	f.Add("--\x00-addr\x00:1", "VIGIL_ADDR=[::1]:80\x00VIGIL_ADDR=:81")
	f.Fuzz(func(t *testing.T, args, env string) {
		argv, envv := split(args), split(env)
		s, _, err := parseSettings("server", argv, envv, io.Discard)
		if err != nil {
			if !errors.Is(err, errUsage) || exitCode(err, io.Discard) != 2 {
				t.Fatalf("args %q env %q: rejection %v is not a usage error", argv, envv, err)
			}
			return
		}
		if s.Instance == "" {
			t.Fatalf("args %q env %q: accepted without an instance name", argv, envv)
		}
		vars := envMap(envv)
		for _, c := range []struct{ flag, key, got, def string }{
			{"addr", "VIGIL_ADDR", s.Addr, ":8080"},
			{"database-url", "DATABASE_URL", s.DatabaseURL, ""},
			{"data-dir", "VIGIL_DATA_DIR", s.DataDir, "./.vigil"},
			{"log-level", "VIGIL_LOG_LEVEL", s.LogLevel, "info"},
		} {
			if strings.Contains(args, c.flag) {
				continue // a flag may set it
			}
			want := vars[c.key]
			if want == "" {
				want = c.def
			}
			if c.got != want {
				t.Fatalf("args %q env %q: %s = %q, want %q from the environment or default", argv, envv, c.flag, c.got, want)
			}
		}
	})
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x00")
}
