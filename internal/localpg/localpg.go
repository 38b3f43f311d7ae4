// Package localpg runs a PostgreSQL cluster in a local directory, for
// development (`server -data-dir`) and for tests. The cluster outlives the
// process that started it, so several Vigil replicas on one machine share it
// just as replicas in production share one server.
package localpg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Options says where the cluster lives and how Ensure sets it up.
type Options struct {
	DataDir   string       // the cluster's home: PGDATA in DataDir/pgdata, the server log in DataDir/postgres.log
	Port      int          // 0: pick a free 127.0.0.1 port at first start and remember it in DataDir/port
	Database  string       // created if missing; default "vigil"
	Ephemeral bool         // for tests: trade crash safety for speed (fsync, synchronous_commit, full_page_writes off)
	Logger    *slog.Logger // may be nil
}

// Names inside DataDir.
const (
	pgdataName    = "pgdata"
	logName       = "postgres.log"
	initdbLogName = "initdb.log"
	portName      = "port"
	lockName      = "ensure.lock"
	confName      = "vigil.conf" // inside pgdata, included from postgresql.conf
)

// maxSocketPath is the room for a Unix socket path (sun_path less its NUL).
const maxSocketPath = 107

// Ensure initialises the cluster in opts.DataDir if needed, starts it detached
// if it is not running, waits until it accepts connections, creates
// opts.Database if missing and returns its URL, such as
// postgres://postgres@127.0.0.1:PORT/vigil?sslmode=disable.
// A cluster already running on DataDir (another Vigil process started it) is
// reused. Concurrent calls on one DataDir, from any process, are serialised.
func Ensure(ctx context.Context, opts Options) (string, error) {
	if opts.DataDir == "" {
		return "", errors.New("local PostgreSQL: no data directory given; pass one, such as -data-dir /var/lib/vigil")
	}
	if opts.Database == "" {
		opts.Database = "vigil"
	}
	if len(opts.Database) > 63 {
		return "", fmt.Errorf("local PostgreSQL: database name %q is longer than PostgreSQL's 63 bytes; choose a shorter one", opts.Database)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c, err := openCluster(opts.DataDir, log)
	if err != nil {
		return "", err
	}
	if err := c.run.prepareDataDir(c.dir); err != nil {
		return "", err
	}
	unlock, err := lockDataDir(ctx, c.dir)
	if err != nil {
		return "", err
	}
	defer unlock()

	if !c.initialised() {
		if err := c.initdb(ctx, opts.Ephemeral); err != nil {
			return "", err
		}
	}
	if err := c.pickBinaries(); err != nil {
		return "", err
	}
	port, running, err := c.runningPort(ctx)
	if err != nil {
		return "", err
	}
	if running {
		if opts.Port != 0 && opts.Port != port {
			return "", fmt.Errorf("local PostgreSQL in %s already runs on port %d, not %d; use port %d or stop it first", c.dir, port, opts.Port, port)
		}
		log.Info("reusing running local PostgreSQL", "data_dir", c.dir, "port", port)
	} else {
		if port, err = c.start(ctx, opts); err != nil {
			return "", err
		}
	}
	if err := c.waitReady(ctx, port); err != nil {
		return "", err
	}
	if err := c.createDatabase(ctx, port, opts.Database); err != nil {
		return "", err
	}
	return databaseURL(port, opts.Database), nil
}

// Stop stops a cluster started by Ensure, letting sessions end cleanly
// (pg_ctl stop -m fast). A cluster that is not running is not an error.
func Stop(ctx context.Context, dataDir string) error {
	return stop(ctx, dataDir, "fast")
}

// StopImmediate stops the cluster as a crash would (pg_ctl stop -m immediate):
// no checkpoint, recovery at next start. For tests and chaos tooling.
func StopImmediate(ctx context.Context, dataDir string) error {
	return stop(ctx, dataDir, "immediate")
}

func stop(ctx context.Context, dataDir, mode string) error {
	if dataDir == "" {
		return errors.New("local PostgreSQL: no data directory given")
	}
	if _, err := os.Stat(filepath.Join(dataDir, pgdataName, "PG_VERSION")); errors.Is(err, fs.ErrNotExist) {
		return nil // never initialised, so nothing can be running
	}
	c, err := openCluster(dataDir, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	unlock, err := lockDataDir(ctx, c.dir)
	if err != nil {
		return err
	}
	defer unlock()
	if err := c.pickBinaries(); err != nil {
		return err
	}
	_, running, err := c.runningPort(ctx)
	if err != nil || !running {
		return err
	}
	offset := c.logSize()
	out, err := c.pgctl(ctx, "stop", "-D", c.pgdata(), "-m", mode, "-w", "-t", "60", "-s").CombinedOutput()
	if err != nil {
		return fmt.Errorf("stop local PostgreSQL in %s: %w\n%s\n%s", c.dir, err, tail(out), c.logSince(offset))
	}
	return nil
}

// cluster is one data directory and the binaries that serve it.
type cluster struct {
	dir string // absolute DataDir
	bin string
	run runner
	log *slog.Logger
}

func openCluster(dataDir string, log *slog.Logger) (*cluster, error) {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("local PostgreSQL data directory: %w", err)
	}
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	run, err := newRunner()
	if err != nil {
		return nil, err
	}
	return &cluster{dir: dir, bin: bin, run: run, log: log}, nil
}

func (c *cluster) pgdata() string { return filepath.Join(c.dir, pgdataName) }

func (c *cluster) initialised() bool {
	_, err := os.Stat(filepath.Join(c.pgdata(), "PG_VERSION"))
	return err == nil
}

func (c *cluster) pgctl(ctx context.Context, args ...string) *exec.Cmd {
	return c.run.command(ctx, c.dir, filepath.Join(c.bin, "pg_ctl"), args...)
}

// pickBinaries makes sure c.bin can serve the existing cluster. After a
// distribution upgrade the newest binaries are a major version ahead of a
// cluster made earlier, and the older ones usually still sit beside them.
func (c *cluster) pickBinaries() error {
	raw, err := os.ReadFile(filepath.Join(c.pgdata(), "PG_VERSION"))
	if err != nil {
		return fmt.Errorf("read cluster version: %w", err)
	}
	want := strings.TrimSpace(string(raw))
	have := binVersion(c.bin)
	if have == "" || have == want {
		return nil
	}
	alt := strings.Replace(installGlob, "*", want, 1)
	if hasServerBinaries(alt) && binVersion(alt) == want {
		c.bin = alt
		return nil
	}
	return fmt.Errorf("local PostgreSQL in %s was created by PostgreSQL %s, but the server binaries found in %s are version %s; install PostgreSQL %s (apt-get install postgresql-%s), or move %s aside to start an empty cluster",
		c.dir, want, c.bin, have, want, want, c.pgdata())
}

// binVersion is the major version of the binaries in dir ("15", "9.6"), or ""
// when it cannot be told.
func binVersion(dir string) string {
	out, err := exec.Command(filepath.Join(dir, "pg_ctl"), "--version").Output()
	if err != nil {
		return ""
	}
	// "pg_ctl (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
	_, after, ok := strings.Cut(string(out), "(PostgreSQL) ")
	if !ok {
		return ""
	}
	version, _, _ := strings.Cut(strings.TrimSpace(after), " ")
	parts := strings.Split(version, ".")
	if n, err := strconv.Atoi(parts[0]); err == nil && n < 10 && len(parts) > 1 {
		return parts[0] + "." + parts[1] // before 10 the major version had two parts
	}
	return parts[0]
}

func (c *cluster) initdb(ctx context.Context, ephemeral bool) error {
	c.log.Info("initialising local PostgreSQL cluster", "data_dir", c.dir)
	args := []string{"-D", c.pgdata(), "--auth=trust", "-U", "postgres", "--encoding=UTF8",
		// The C locale exists everywhere and sorts the same on every machine.
		"--no-locale"}
	if ephemeral {
		args = append(args, "--no-sync")
	}
	out, err := c.run.command(ctx, c.dir, filepath.Join(c.bin, "initdb"), args...).CombinedOutput()
	_ = os.WriteFile(filepath.Join(c.dir, initdbLogName), out, 0o600) // for the operator; the error below carries the tail
	if err != nil {
		return fmt.Errorf("initdb in %s: %w\n%s\n(if an earlier initdb was interrupted, remove %s and try again)", c.pgdata(), err, tail(out), c.pgdata())
	}
	f, err := os.OpenFile(filepath.Join(c.pgdata(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open postgresql.conf: %w", err)
	}
	_, err = fmt.Fprintf(f, "\n# Added by Vigil: the settings Vigil manages are rewritten before each start.\ninclude_if_exists = '%s'\n", confName)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("append to postgresql.conf: %w", err)
	}
	return nil
}

// runningPort reports whether the cluster runs and, if so, on which port.
func (c *cluster) runningPort(ctx context.Context) (port int, running bool, err error) {
	cmd := c.pgctl(ctx, "status", "-D", c.pgdata())
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		port, err := c.postmasterPort()
		return port, true, err
	case errors.As(err, &exit) && exit.ExitCode() == 3: // pg_ctl: "no server running"
		return 0, false, nil
	default:
		return 0, false, fmt.Errorf("pg_ctl status in %s: %w\n%s", c.dir, err, tail(out))
	}
}

// postmasterPort reads the port the running server really listens on.
func (c *cluster) postmasterPort() (int, error) {
	raw, err := os.ReadFile(filepath.Join(c.pgdata(), "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("read postmaster.pid: %w", err)
	}
	lines := strings.Split(string(raw), "\n")
	if len(lines) < 4 {
		return 0, fmt.Errorf("postmaster.pid in %s has no port line yet", c.pgdata())
	}
	port, err := strconv.Atoi(strings.TrimSpace(lines[3]))
	if err != nil {
		return 0, fmt.Errorf("port in postmaster.pid: %w", err)
	}
	return port, nil
}

func (c *cluster) rememberedPort() int {
	raw, err := os.ReadFile(filepath.Join(c.dir, portName))
	if err != nil {
		return 0
	}
	port, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	return port
}

func (c *cluster) rememberPort(port int) error {
	if err := os.WriteFile(filepath.Join(c.dir, portName), []byte(strconv.Itoa(port)+"\n"), 0o644); err != nil {
		return fmt.Errorf("remember port: %w", err)
	}
	return nil
}

// start starts the server in its own session, so that it keeps running after
// this process exits and a Ctrl-C in our terminal does not reach it.
func (c *cluster) start(ctx context.Context, opts Options) (int, error) {
	port, picked := opts.Port, false
	if port == 0 {
		port = c.rememberedPort()
	}
	for attempt := 1; ; attempt++ {
		if port == 0 {
			p, err := freePort()
			if err != nil {
				return 0, err
			}
			port, picked = p, true
		}
		if port != c.rememberedPort() {
			if err := c.rememberPort(port); err != nil {
				return 0, err
			}
		}
		if err := c.writeConf(port, opts.Ephemeral); err != nil {
			return 0, err
		}
		c.log.Info("starting local PostgreSQL", "data_dir", c.dir, "port", port)
		offset := c.logSize()
		cmd := c.pgctl(ctx, "start", "-D", c.pgdata(), "-l", filepath.Join(c.dir, logName), "-w", "-t", "60", "-s")
		cmd.SysProcAttr.Setsid = true
		out, err := cmd.CombinedOutput()
		if err == nil {
			return port, nil
		}
		logTail := c.logSince(offset)
		// A port we picked may have been taken between choosing and binding.
		if picked && attempt < 3 && strings.Contains(logTail, "Address already in use") {
			port = 0
			continue
		}
		hint := ""
		if strings.Contains(logTail, "Address already in use") {
			hint = fmt.Sprintf("\nport %d is taken by another program; stop it or choose another port", port)
		}
		return 0, fmt.Errorf("start local PostgreSQL in %s: %w\n%s\n%s%s", c.dir, err, tail(out), logTail, hint)
	}
}

// writeConf writes the settings Vigil manages. Rewriting them before every
// start lets a later Ensure change the port or Ephemeral.
func (c *cluster) writeConf(port int, ephemeral bool) error {
	socketDir := c.dir
	if len(socketDir)+len("/.s.PGSQL.65535") > maxSocketPath {
		c.log.Info("data directory path too long for a Unix socket; listening on TCP only", "data_dir", c.dir)
		socketDir = ""
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Written by Vigil before each start; edits here are overwritten.\n")
	fmt.Fprintf(&b, "port = %d\n", port)
	fmt.Fprintf(&b, "listen_addresses = '127.0.0.1'\n")
	fmt.Fprintf(&b, "unix_socket_directories = '%s'\n", strings.ReplaceAll(socketDir, "'", "''"))
	if ephemeral {
		fmt.Fprintf(&b, "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n")
	}
	path := filepath.Join(c.pgdata(), confName)
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return c.run.chownFile(path)
}

// waitReady waits until the server accepts connections: a server another
// process started may still be recovering.
func (c *cluster) waitReady(ctx context.Context, port int) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var lastErr error
	for {
		connCtx, connCancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(connCtx, databaseURL(port, "postgres"))
		connCancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("local PostgreSQL in %s does not accept connections on port %d: %w\n%s", c.dir, port, lastErr, c.logSince(c.logSize()-2048))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *cluster) createDatabase(ctx context.Context, port int, name string) error {
	if name == "postgres" {
		return nil
	}
	conn, err := pgx.Connect(ctx, databaseURL(port, "postgres"))
	if err != nil {
		return fmt.Errorf("connect to local PostgreSQL: %w", err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("look up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	c.log.Info("creating database", "database", name)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // duplicate_database: someone beat us to it
		return nil
	}
	if err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

func (c *cluster) logSize() int64 {
	fi, err := os.Stat(filepath.Join(c.dir, logName))
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logSince returns the tail of what the server logged after offset, so an
// error shows this attempt's failure rather than an old one.
func (c *cluster) logSince(offset int64) string {
	f, err := os.Open(filepath.Join(c.dir, logName))
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(max(offset, 0), io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(f)
	if len(b) == 0 {
		return ""
	}
	return "server log " + filepath.Join(c.dir, logName) + ":\n" + tail(b)
}

func databaseURL(port int, database string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User("postgres"),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Path:     "/" + database,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// freePort asks the kernel for an unused port. Another program may take it
// before the server binds it; start retries when that happens.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lockDataDir takes an exclusive flock on a file in dir, serialising Ensure
// and Stop across goroutines and processes. The kernel drops the lock if the
// process dies, so a crash never leaves the directory locked.
func lockDataDir(ctx context.Context, dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", dir, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for lock on %s (another Vigil process is starting or stopping PostgreSQL there): %w", dir, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
