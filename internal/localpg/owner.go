package localpg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runner runs the PostgreSQL binaries. initdb and postgres refuse to run as
// root, so when we are root they run as the postgres user; otherwise as us.
type runner struct {
	asPostgres bool
	uid, gid   uint32
	groups     []uint32 // supplementary groups of the postgres user
	home       string
}

func newRunner() (runner, error) {
	if os.Geteuid() != 0 {
		return runner{}, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return runner{}, fmt.Errorf("running as root, but PostgreSQL refuses to run as root and there is no postgres user to run it as; create one (useradd --system --user-group postgres) or run Vigil as an ordinary user: %w", err)
	}
	r := runner{asPostgres: true, home: u.HomeDir}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return runner{}, fmt.Errorf("postgres user ids: %w", err)
	}
	r.uid, r.gid = uint32(uid), uint32(gid)
	gids, err := u.GroupIds()
	if err != nil {
		return runner{}, fmt.Errorf("groups of the postgres user: %w", err)
	}
	for _, g := range gids {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil {
			r.groups = append(r.groups, uint32(n))
		}
	}
	return r, nil
}

// command prepares bin to run in dir. Setting the credentials directly does
// what `runuser -u postgres --` would, without PAM and with signals reaching
// the real process when ctx is cancelled.
func (r runner) command(ctx context.Context, dir, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	// Run from a directory the server user can enter: PostgreSQL tools
	// complain when they cannot get back into their working directory.
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	cmd.WaitDelay = 5 * time.Second
	if r.asPostgres {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: r.uid, Gid: r.gid, Groups: r.groups}
		cmd.Env = append(os.Environ(), "HOME="+r.home, "USER=postgres", "LOGNAME=postgres")
	}
	return cmd
}

// prepareDataDir creates dataDir and, when we are root, hands it to the
// postgres user after checking that user can reach it at all.
func (r runner) prepareDataDir(dataDir string) error {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	if !r.asPostgres {
		return nil
	}
	real, err := filepath.EvalSymlinks(dataDir)
	if err != nil {
		return fmt.Errorf("resolve data directory: %w", err)
	}
	// Every ancestor must be searchable by postgres; the first one that is not
	// is the one the operator has to change.
	for _, dir := range ancestors(real) {
		fi, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("check data directory access: %w", err)
		}
		if !r.canEnter(fi) {
			return fmt.Errorf("the postgres user (which runs PostgreSQL because Vigil runs as root) cannot enter %s (mode %04o), so it cannot reach the data directory %s; choose a data directory under one the postgres user can enter, such as /var/lib/vigil, or allow it with: chmod o+x %s",
				dir, fi.Mode().Perm(), dataDir, dir)
		}
	}
	if err := r.ownByPostgres(real, "the data directory"); err != nil {
		return err
	}
	pgdata := filepath.Join(real, pgdataName)
	if fi, err := os.Stat(pgdata); err == nil && statUID(fi) != r.uid {
		return fmt.Errorf("%s is not owned by the postgres user, which runs PostgreSQL because Vigil runs as root; fix it with: chown -R postgres: %s", pgdata, pgdata)
	}
	return nil
}

// ownByPostgres chowns path to postgres if root owns it (we just created it, or
// root's tools did). A directory owned by another user is left alone: taking
// it over silently would surprise its owner.
func (r runner) ownByPostgres(path, what string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("stat %s: %w", what, err)
	}
	switch statUID(fi) {
	case r.uid:
		return nil
	case 0:
		if err := os.Chown(path, int(r.uid), int(r.gid)); err != nil {
			return fmt.Errorf("give %s to the postgres user: %w", what, err)
		}
		return nil
	default:
		return fmt.Errorf("%s %s is owned by uid %d, but PostgreSQL runs as the postgres user because Vigil runs as root; fix it with: chown postgres: %s", what, path, statUID(fi), path)
	}
}

// chownFile gives a file we wrote inside the cluster to the server user.
func (r runner) chownFile(path string) error {
	if !r.asPostgres {
		return nil
	}
	if err := os.Chown(path, int(r.uid), int(r.gid)); err != nil {
		return fmt.Errorf("give %s to the postgres user: %w", path, err)
	}
	return nil
}

// canEnter applies the classic owner/group/other search-permission rule
// (ACLs are not consulted).
func (r runner) canEnter(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true // cannot tell; let PostgreSQL report it
	}
	perm := fi.Mode().Perm()
	switch {
	case st.Uid == r.uid:
		return perm&0o100 != 0
	case st.Gid == r.gid || slices.Contains(r.groups, st.Gid):
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

// ancestors lists the directories above path, from the root down.
func ancestors(path string) []string {
	var dirs []string
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		dirs = append(dirs, dir)
		if dir == filepath.Dir(dir) {
			break
		}
	}
	slices.Reverse(dirs)
	return dirs
}

func statUID(fi os.FileInfo) uint32 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid
	}
	return 0
}

// tail returns the last lines of b, enough to show why a command failed.
func tail(b []byte) string {
	const limit = 2048
	s := strings.TrimSpace(string(b))
	if len(s) > limit {
		s = s[len(s)-limit:]
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return s
}
