package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigilhq/vigil/internal/config"
	"github.com/vigilhq/vigil/internal/localpg"
	"github.com/vigilhq/vigil/internal/monitoring"
)

const alertsUsage = `Usage:
  server alerts list [flags]                 webhook deliveries, newest first
  server alerts retry [flags] <id>...        send FAILED deliveries again (a fresh series of attempts)
  server alerts receive [-addr :9000]        a local webhook receiver that prints what it gets

Flags for list and retry (before the ids):
  -database-url  DATABASE_URL     PostgreSQL URL; empty: the embedded one under -data-dir
  -data-dir      VIGIL_DATA_DIR   default ./.vigil
list only:
  -state     PENDING|SENDING|DELIVERED|FAILED   -webhook NAME   -limit N (default 50)
`

// runAlerts is "server alerts ...": operator commands for webhook deliveries. Retrying
// from the web UI waits for the admin login; until then this is how a FAILED delivery is
// sent again.
func runAlerts(ctx context.Context, args, env []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, alertsUsage)
		return 2
	}
	switch args[0] {
	case "list":
		return runAlertsList(ctx, args[1:], env, stdout, stderr)
	case "retry":
		return runAlertsRetry(ctx, args[1:], env, stdout, stderr)
	case "receive":
		return runAlertsReceive(ctx, args[1:], env, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, alertsUsage)
		return 0
	}
	fmt.Fprintf(stderr, "unknown alerts command %q\n\n%s", args[0], alertsUsage)
	return 2
}

// databaseFlags are the flags of the alerts commands that reach the database.
type databaseFlags struct {
	url, dataDir string
}

func (f *databaseFlags) register(fs *flag.FlagSet, env []string) {
	vars := envMap(env)
	dataDir := vars["VIGIL_DATA_DIR"]
	if dataDir == "" {
		dataDir = "./.vigil"
	}
	fs.StringVar(&f.url, "database-url", vars["DATABASE_URL"], "PostgreSQL URL; empty: the embedded PostgreSQL under -data-dir (env DATABASE_URL)")
	fs.StringVar(&f.dataDir, "data-dir", dataDir, "home of the embedded PostgreSQL cluster (env VIGIL_DATA_DIR)")
}

// open connects without migrating: an operator command must not change the schema.
func (f *databaseFlags) open(ctx context.Context, stderr io.Writer) (*monitoring.Store, func(), error) {
	url := f.url
	if url == "" {
		var err error
		url, err = localpg.Ensure(ctx, localpg.Options{DataDir: f.dataDir, Logger: newLogger(stderr, "warn")})
		if err != nil {
			return nil, nil, fmt.Errorf("embedded PostgreSQL: %w", err)
		}
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: DATABASE_URL: %v", errUsage, err)
	}
	return monitoring.NewStore(pool), pool.Close, nil
}

// schemaHint turns "table does not exist" into what to do about it.
func schemaHint(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
		return fmt.Errorf("%w (the database schema is older than this binary: run `server migrate` or start a replica first)", err)
	}
	return err
}

func runAlertsList(ctx context.Context, args, env []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("server alerts list", stderr)
	var db databaseFlags
	db.register(fs, env)
	var p monitoring.DeliveryListParams
	fs.StringVar(&p.State, "state", "", "only deliveries in this state: PENDING, SENDING, DELIVERED or FAILED")
	fs.StringVar(&p.Webhook, "webhook", "", "only deliveries to this webhook")
	fs.IntVar(&p.Limit, "limit", 50, "how many, at most 200")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	p.State = strings.ToUpper(p.State)
	switch p.State {
	case "", monitoring.DeliveryPending, monitoring.DeliverySending, monitoring.DeliveryDelivered, monitoring.DeliveryFailed:
	default:
		return exitCode(fmt.Errorf("%w: -state %q: use PENDING, SENDING, DELIVERED or FAILED", errUsage, p.State), stderr)
	}
	store, closeDB, err := db.open(ctx, stderr)
	if err != nil {
		return exitCode(err, stderr)
	}
	defer closeDB()
	page, err := store.DeliveryList(ctx, p)
	if err != nil {
		return exitCode(schemaHint(err), stderr)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tATTEMPTS\tWEBHOOK\tEVENT\tSERVICE\tCREATED\tLAST ERROR")
	for _, d := range page.Deliveries {
		fmt.Fprintf(tw, "%d\t%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.State, d.Attempts, d.MaxAttempts, d.Webhook,
			d.Kind, d.Service, d.CreatedAt.UTC().Format(time.RFC3339), d.LastError)
	}
	if err := tw.Flush(); err != nil {
		return exitCode(err, stderr)
	}
	if len(page.Deliveries) == 0 {
		fmt.Fprintln(stderr, "no deliveries")
	}
	return 0
}

func runAlertsRetry(ctx context.Context, args, env []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("server alerts retry", stderr)
	var db databaseFlags
	db.register(fs, env)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		return exitCode(fmt.Errorf("%w: name the deliveries to retry: server alerts retry <id>... (server alerts list -state FAILED shows them)", errUsage), stderr)
	}
	var ids []int64
	for _, a := range fs.Args() {
		id, err := strconv.ParseInt(a, 10, 64)
		if err != nil || id <= 0 {
			return exitCode(fmt.Errorf("%w: %q is not a delivery id (flags go before the ids)", errUsage, a), stderr)
		}
		ids = append(ids, id)
	}
	store, closeDB, err := db.open(ctx, stderr)
	if err != nil {
		return exitCode(err, stderr)
	}
	defer closeDB()
	code := 0
	for _, id := range ids {
		if err := store.RetryFailedDelivery(ctx, id); err != nil {
			fmt.Fprintln(stderr, "vigil:", schemaHint(err))
			code = 1
			continue
		}
		fmt.Fprintf(stdout, "delivery %d is PENDING again; a running replica sends it within a few seconds\n", id)
	}
	return code
}

// runAlertsReceive is a webhook receiver for trying alerts out locally: it prints each
// alert it gets, drops repeats by Idempotency-Key, lists what it got at GET /, and with
// -fail-first N answers 500 to the first N POSTs so retries can be watched.
func runAlertsReceive(ctx context.Context, args, env []string, stdout, stderr io.Writer) int {
	addr := envMap(env)["VIGIL_RECEIVER_ADDR"]
	if addr == "" {
		addr = "127.0.0.1:9000"
	}
	fs := newFlagSet("server alerts receive", stderr)
	fs.StringVar(&addr, "addr", addr, "listen address (env VIGIL_RECEIVER_ADDR)")
	failFirst := fs.Int("fail-first", 0, "answer 500 to this many POSTs first, to watch retries")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return exitCode(fmt.Errorf("listen on %s: %w", addr, err), stderr)
	}
	rcv := &alertReceiver{out: stdout, failFirst: *failFirst, seen: map[string]bool{}}
	srv := &http.Server{Handler: rcv, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutCtx)
	}()
	fmt.Fprintf(stderr, "receiving alerts on http://%s/ (POST any path; GET / lists them)\n", ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return exitCode(err, stderr)
	}
	return 0
}

type alertReceiver struct {
	mu        sync.Mutex
	out       io.Writer
	failFirst int
	posts     int
	seen      map[string]bool
	alerts    []json.RawMessage
}

func (r *alertReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.Method != http.MethodPost {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"alerts": r.alerts})
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		http.Error(w, "cannot read body", http.StatusBadRequest)
		return
	}
	r.posts++
	key := req.Header.Get("Idempotency-Key")
	stamp := time.Now().Format("15:04:05")
	if r.posts <= r.failFirst {
		fmt.Fprintf(r.out, "%s answered 500 on purpose (%d of %d) key=%s attempt=%s\n", stamp, r.posts, r.failFirst, key, req.Header.Get("X-Vigil-Attempt"))
		http.Error(w, "failing on purpose (-fail-first)", http.StatusInternalServerError)
		return
	}
	if key != "" && r.seen[key] {
		fmt.Fprintf(r.out, "%s duplicate dropped key=%s attempt=%s\n", stamp, key, req.Header.Get("X-Vigil-Attempt"))
		w.WriteHeader(http.StatusOK)
		return
	}
	r.seen[key] = true
	var msg struct {
		Text    string `json:"text"`
		Content string `json:"content"`
	}
	_ = json.Unmarshal(body, &msg)
	text := msg.Text + msg.Content
	fmt.Fprintf(r.out, "%s %s %s key=%s attempt=%s\n", stamp, req.URL.Path, text, key, req.Header.Get("X-Vigil-Attempt"))
	r.alerts = append(r.alerts, json.RawMessage(body))
	w.WriteHeader(http.StatusOK)
}

// syncMaintenanceWindows writes the config file's maintenance windows into the database,
// where the completing transaction and the dashboard read them. Call it beside SyncConfig,
// only when a config file was loaded.
func syncMaintenanceWindows(ctx context.Context, store *monitoring.Store, cfg *config.Config) error {
	windows := make([]monitoring.MaintenanceWindowSpec, 0, len(cfg.MaintenanceWindows))
	for _, w := range cfg.MaintenanceWindows {
		windows = append(windows, monitoring.MaintenanceWindowSpec{
			Name: w.Name, Services: w.Services, Groups: w.Groups, Start: w.Start, End: w.End,
			Cron: w.Cron, Duration: w.Duration, Timezone: w.Timezone,
		})
	}
	return store.SyncMaintenanceWindows(ctx, windows)
}

// dispatcherConfig turns the config file's alerts section into the dispatcher's settings.
func dispatcherConfig(cfg *config.Config, instance string) monitoring.DispatcherConfig {
	a := cfg.Alerts
	hooks := make([]monitoring.Webhook, 0, len(a.Webhooks))
	for _, w := range a.Webhooks {
		events := make([]string, 0, len(w.Events))
		for _, e := range w.Events {
			events = append(events, strings.ToUpper(e))
		}
		hooks = append(hooks, monitoring.Webhook{
			Name: w.Name, URL: w.URL, Headers: w.Headers, Events: events, Format: w.Format,
			Timeout: w.Timeout, MaxAttempts: w.MaxAttempts,
		})
	}
	return monitoring.DispatcherConfig{
		Instance: instance, Webhooks: hooks, BaseURL: a.BaseURL, RetryBase: a.RetryBase, RetryCap: a.RetryCap,
	}
}

// startDispatcher runs this replica's alert dispatcher beside the scheduler, with its
// metrics on reg. The returned channel closes once the dispatcher has stopped (after ctx
// ends, in-flight POSTs finished or released).
func startDispatcher(ctx context.Context, store *monitoring.Store, cfg *config.Config, instance string, reg prometheus.Registerer, log *slog.Logger) <-chan struct{} {
	reg.MustRegister(monitoring.NewOutboxCollector(store))
	d := monitoring.NewDispatcher(store, dispatcherConfig(cfg, instance), monitoring.NewDispatcherMetrics(reg), log)
	if len(cfg.Alerts.Webhooks) == 0 {
		log.Info("no alert webhooks configured: alerts are recorded and shown, not sent (add alerts.webhooks to the config file)")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.Run(ctx)
	}()
	return done
}
