package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
)

// settings are where this replica listens, which database it uses and what
// it watches. Flags win over environment variables, which win over defaults.
type settings struct {
	Addr        string
	DatabaseURL string
	DataDir     string
	ConfigPath  string
	// ConfigExplicit is true when the path came from a flag or VIGIL_CONFIG:
	// then a missing file is an error, not "no config".
	ConfigExplicit bool
	Instance       string
	LogLevel       string
}

// errUsage marks a command-line mistake: exit code 2.
var errUsage = errors.New("usage error")

// parseSettings reads flags and KEY=VALUE environment lines, so tests pass
// literals and never touch the real environment.
func parseSettings(name string, args, env []string, stderr io.Writer) (settings, []string, error) {
	vars := envMap(env)
	get := func(key, def string) string {
		if v, ok := vars[key]; ok && v != "" {
			return v
		}
		return def
	}
	var s settings
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&s.Addr, "addr", get("VIGIL_ADDR", ":8080"), "listen address (env VIGIL_ADDR)")
	fs.StringVar(&s.DatabaseURL, "database-url", get("DATABASE_URL", ""), "PostgreSQL URL; empty: an embedded local PostgreSQL under -data-dir (env DATABASE_URL)")
	fs.StringVar(&s.DataDir, "data-dir", get("VIGIL_DATA_DIR", "./.vigil"), "home of the embedded PostgreSQL cluster (env VIGIL_DATA_DIR)")
	fs.StringVar(&s.ConfigPath, "config", get("VIGIL_CONFIG", ""), "services file, YAML; default ./vigil.yaml if present (env VIGIL_CONFIG)")
	fs.StringVar(&s.Instance, "instance", get("VIGIL_INSTANCE", ""), "this replica's name; default <hostname>:<port> (env VIGIL_INSTANCE)")
	fs.StringVar(&s.LogLevel, "log-level", get("VIGIL_LOG_LEVEL", "info"), "debug, info, warn or error (env VIGIL_LOG_LEVEL)")
	if err := fs.Parse(args); err != nil {
		return s, nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if s.ConfigPath != "" {
		s.ConfigExplicit = true
	} else if _, err := os.Stat("vigil.yaml"); err == nil {
		s.ConfigPath = "vigil.yaml"
	}
	if s.Instance == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "localhost"
		}
		_, port, err := net.SplitHostPort(s.Addr)
		if err != nil {
			return s, nil, fmt.Errorf("%w: -addr %q is not host:port (e.g. :8080 or 127.0.0.1:8080)", errUsage, s.Addr)
		}
		s.Instance = host + ":" + port
	}
	return s, fs.Args(), nil
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}
