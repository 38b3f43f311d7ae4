package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/vigilhq/vigil/internal/config"
	"github.com/vigilhq/vigil/internal/demotarget"
	"github.com/vigilhq/vigil/internal/localpg"
	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/internal/version"
	"github.com/vigilhq/vigil/internal/web"
	"github.com/vigilhq/vigil/migrations"
)

const usage = `Usage:
  server [flags]              run a replica: web UI + API, producer, workers
  server migrate [flags]      apply migrations and exit
  server demo-target [-addr]  a local HTTP target (/ok /fail /slow /flap) to try Vigil against
  server db-stop [flags]      stop the embedded PostgreSQL under -data-dir
  server alerts list|retry|receive
                              webhook deliveries; retry FAILED ones; a local test receiver
  server user add [-admin | -role R -group G] NAME
                              create an account; the password is read from stdin

Run "server -h" for the flags.
`

// Exit codes: 0 done, 1 runtime failure, 2 bad usage or configuration.
func run(ctx context.Context, args, env []string, stdout, stderr io.Writer) int {
	cmd := ""
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "":
		return runServer(ctx, args, env, stderr)
	case "migrate":
		return runMigrate(ctx, args, env, stderr)
	case "demo-target":
		return runDemoTarget(ctx, args, env, stderr)
	case "db-stop":
		return runDBStop(ctx, args, env, stderr)
	case "alerts":
		return runAlerts(ctx, args, env, stdout, stderr)
	case "user":
		return runUser(ctx, args, env, os.Stdin, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "unknown command %q\n\n%s", cmd, usage)
	return 2
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "vigil:", err)
	if errors.Is(err, errUsage) || errors.As(err, new(*config.ValidationError)) || errors.Is(err, errConfig) {
		return 2
	}
	return 1
}

var errConfig = errors.New("configuration error")

func runServer(ctx context.Context, args, env []string, stderr io.Writer) int {
	s, _, err := parseSettings("server", args, env, stderr)
	if err != nil {
		return exitCode(err, stderr)
	}
	log := newLogger(stderr, s.LogLevel).With("instance", s.Instance)

	// The config is checked before anything touches the database, so a bad
	// file changes nothing.
	cfg, err := loadConfig(s, env)
	if err != nil {
		return exitCode(err, stderr)
	}
	url := s.DatabaseURL
	if url == "" {
		url, err = localpg.Ensure(ctx, localpg.Options{DataDir: s.DataDir, Logger: log})
		if err != nil {
			return exitCode(fmt.Errorf("embedded PostgreSQL: %w", err), stderr)
		}
		log.Info("using embedded PostgreSQL", "data_dir", s.DataDir, "url", url)
	}
	workers := config.DefaultWorkers
	if cfg != nil {
		workers = cfg.Scheduler.Workers
	}
	// Two pools: the scheduler's connections are never waiting behind a slow
	// page, and a burst of page views cannot starve the workers.
	workPool, err := newPool(url, s.Instance+" scheduler", int32(schedulerPoolSize(workers)))
	if err != nil {
		return exitCode(err, stderr)
	}
	defer workPool.Close()
	webPool, err := newPool(url, s.Instance+" web", webPoolSize)
	if err != nil {
		return exitCode(err, stderr)
	}
	defer webPool.Close()
	// Maintenance (rollups, retention) has its own two connections: a retention
	// batch neither waits for a worker's connection nor holds one up.
	maintPool, err := newPool(url, s.Instance+" maintenance", maintenancePoolSize)
	if err != nil {
		return exitCode(err, stderr)
	}
	defer maintPool.Close()
	store := monitoring.NewStore(workPool)
	webStore := monitoring.NewStore(webPool)
	if cfg == nil {
		cfg = config.Default()
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vigil_build_info", Help: "Version and instance of this replica."}, []string{"version", "instance"})
	buildInfo.WithLabelValues(version.String(), s.Instance).Set(1)
	reg.MustRegister(buildInfo, monitoring.NewQueueCollector(webStore))
	metrics := monitoring.NewMetrics(reg)
	maint := monitoring.NewMaintenanceRunner(monitoring.NewStore(maintPool), monitoring.MaintenanceConfig{
		Instance: s.Instance,
		Retention: monitoring.RetentionPolicy{
			Raw:        cfg.Retention.Raw,
			Rollups:    cfg.Retention.Rollups,
			FailedJobs: cfg.Retention.FailedJobs,
			BatchSize:  cfg.Retention.BatchSize,
		},
	}, reg, log)

	sc := cfg.Scheduler
	sched := monitoring.NewScheduler(store, monitoring.NewHTTPProber(min(5*time.Second, sc.Lease/2)), monitoring.SchedulerConfig{
		Instance:           monitoring.Instance{Name: s.Instance, Addr: s.Addr, Version: version.String()},
		Workers:            sc.Workers,
		Lease:              sc.Lease,
		Poll:               sc.Poll,
		MaxAttempts:        sc.MaxAttempts,
		RetryBase:          sc.RetryBase,
		RetryCap:           sc.RetryCap,
		Spread:             sc.Spread,
		FailureThreshold:   cfg.Alerts.FailureThreshold,
		SuccessThreshold:   cfg.Alerts.SuccessThreshold,
		AlertBeforeFirstUp: cfg.Alerts.AlertBeforeFirstUp,
	}, metrics, log)

	requireLogin, secureCookies, err := accessSettings(env)
	if err != nil {
		return exitCode(err, stderr)
	}
	e := web.New(web.Options{Store: webStore, Gatherer: reg, Logger: log, Instance: s.Instance,
		RequireLogin: requireLogin, SecureCookies: secureCookies,
		Lease: cfg.Scheduler.Lease, AllowLinkLocal: cfg.Scheduler.AllowLinkLocal})
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return exitCode(fmt.Errorf("listen on %s: %w (is another replica using this port? pick another with -addr)", s.Addr, err), stderr)
	}
	srvErr := make(chan error, 1)
	go func() {
		e.Listener = ln
		srvErr <- e.Start("")
	}()
	log.Info("listening", "addr", ln.Addr().String(), "version", version.String())

	// The HTTP side is up before the database is: /healthz answers and
	// /readyz says 503 while PostgreSQL is still starting or unreachable.
	schedDone := make(chan struct{})
	go func() {
		defer close(schedDone)
		if !prepareDatabase(ctx, url, store, s, cfg, log) {
			return
		}
		warnConnectionBudget(ctx, store, s.Instance, connectionsPerReplica(workers), log)
		if err := ensureFirstAdmin(ctx, store, env, log); err != nil {
			log.Error("first admin from VIGIL_ADMIN_PASSWORD", "err", err)
		}
		dispatcherDone := startDispatcher(ctx, store, cfg, s.Instance, reg, log)
		maintDone := make(chan struct{})
		go func() {
			defer close(maintDone)
			_ = maint.Run(ctx)
		}()
		log.Info("vigil replica started")
		_ = sched.Run(ctx)
		<-dispatcherDone
		<-maintDone
	}()

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-srvErr:
		if !errors.Is(err, http.ErrServerClosed) {
			runErr = fmt.Errorf("http server: %w", err)
		}
	}
	log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = e.Shutdown(shutCtx)
	// Stop the workers and the dispatcher (they release what they hold), then
	// close the pools.
	<-schedDone
	log.Info("stopped")
	if runErr != nil {
		return exitCode(runErr, stderr)
	}
	return 0
}

// loadConfig reads the services file; ${VAR} references resolve from env.
func loadConfig(s settings, env []string) (*config.Config, error) {
	if s.ConfigPath == "" {
		return nil, nil
	}
	cfg, err := config.LoadEnv(s.ConfigPath, env)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errConfig, err)
	}
	return cfg, nil
}

func configSpecs(cfg *config.Config) ([]string, []monitoring.ServiceSpec) {
	groups := make([]string, 0, len(cfg.Groups))
	for _, g := range cfg.Groups {
		groups = append(groups, g.Name)
	}
	services := make([]monitoring.ServiceSpec, 0, len(cfg.Services))
	for _, svc := range cfg.Services {
		services = append(services, monitoring.ServiceSpec{
			Name: svc.Name, Group: svc.Group, URL: svc.URL,
			Interval: svc.Interval, Timeout: svc.Timeout, Enabled: svc.Enabled,
			Probe: svc.Probe,
		})
	}
	return groups, services
}

// newPool configures a lazily connecting pool: every statement is bounded,
// and claims skip locked rows, so a lock wait means something is wrong and
// should fail rather than pile up.
func newPool(url, appName string, maxConns int32) (*pgxpool.Pool, error) {
	poolCfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("%w: DATABASE_URL: %v", errUsage, err)
	}
	rp := poolCfg.ConnConfig.RuntimeParams
	rp["statement_timeout"] = "30000"
	rp["lock_timeout"] = "10000"
	rp["idle_in_transaction_session_timeout"] = "60000"
	rp["application_name"] = "vigil " + appName
	// JIT compiles plans for big estimated costs; for Vigil's short indexed
	// queries that costs far more than it saves (470 ms on a 6 ms query).
	rp["jit"] = "off"
	poolCfg.ConnConfig.ConnectTimeout = 5 * time.Second
	poolCfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), poolCfg)
	if err != nil {
		return nil, fmt.Errorf("database pool: %w", err)
	}
	return pool, nil
}

// prepareDatabase applies migrations and syncs the config, retrying with
// backoff while the database is unreachable, so replicas may start before
// PostgreSQL does. It reports false when ctx ended first.
func prepareDatabase(ctx context.Context, url string, store *monitoring.Store, s settings, cfg *config.Config, log *slog.Logger) bool {
	backoff := 500 * time.Millisecond
	logged := false
	for {
		err := migrations.Up(url)
		if err == nil && s.ConfigPath != "" {
			groups, services := configSpecs(cfg)
			var sum monitoring.SyncSummary
			if sum, err = store.SyncConfig(ctx, groups, services); err == nil {
				log.Info("config synced", "path", s.ConfigPath, "services", len(services), "changed", sum.Upserted, "retired", sum.Retired)
				err = syncMaintenanceWindows(ctx, store, cfg)
			}
		}
		if err == nil {
			if s.ConfigPath == "" {
				log.Info("no config file; watching the services already in the database (pass -config or create ./vigil.yaml)")
			}
			if logged {
				log.Info("database ready")
			}
			return true
		}
		if !logged {
			log.Error("database not ready; retrying with backoff", "err", err)
			logged = true
		}
		if !sleepCtx(ctx, backoff) {
			return false
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func runMigrate(ctx context.Context, args, env []string, stderr io.Writer) int {
	s, _, err := parseSettings("server migrate", args, env, stderr)
	if err != nil {
		return exitCode(err, stderr)
	}
	log := newLogger(stderr, s.LogLevel)
	url := s.DatabaseURL
	if url == "" {
		if url, err = localpg.Ensure(ctx, localpg.Options{DataDir: s.DataDir, Logger: log}); err != nil {
			return exitCode(fmt.Errorf("embedded PostgreSQL: %w", err), stderr)
		}
	}
	if err := migrations.Up(url); err != nil {
		return exitCode(err, stderr)
	}
	log.Info("migrations applied", "version", migrations.Latest())
	return 0
}

func runDBStop(ctx context.Context, args, env []string, stderr io.Writer) int {
	s, _, err := parseSettings("server db-stop", args, env, stderr)
	if err != nil {
		return exitCode(err, stderr)
	}
	return exitCode(localpg.Stop(ctx, s.DataDir), stderr)
}

func runDemoTarget(ctx context.Context, args, env []string, stderr io.Writer) int {
	vars := envMap(env)
	addr := vars["VIGIL_DEMO_ADDR"]
	if addr == "" {
		addr = ":8081"
	}
	fs := newFlagSet("server demo-target", stderr)
	fs.StringVar(&addr, "addr", addr, "listen address (env VIGIL_DEMO_ADDR)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	return exitCode(demotarget.Serve(ctx, addr, newLogger(stderr, "info")), stderr)
}
