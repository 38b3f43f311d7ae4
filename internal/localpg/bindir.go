package localpg

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// serverBinaries must all sit in one directory: pg_ctl starts the postgres
// that lives beside it.
var serverBinaries = []string{"initdb", "pg_ctl", "postgres"}

// BinDir finds a directory holding initdb, pg_ctl and postgres. Search order:
// PATH, `pg_config --bindir`, /usr/lib/postgresql/*/bin (newest major version
// first). Debian and Ubuntu keep the server binaries off PATH, hence the last two.
func BinDir() (string, error) {
	return binSearch{path: os.Getenv("PATH"), installGlob: installGlob}.find()
}

// installGlob is where Debian and Ubuntu install each major version.
const installGlob = "/usr/lib/postgresql/*/bin"

// binSearch is BinDir with its inputs made explicit so tests can point it at
// an empty PATH and a fake install tree.
type binSearch struct {
	path        string // PATH-style list; pg_config is looked up here too
	installGlob string // where distribution packages put versioned bin directories
}

func (s binSearch) find() (string, error) {
	for _, dir := range filepath.SplitList(s.path) {
		if dir != "" && hasServerBinaries(dir) {
			return dir, nil
		}
	}
	if pgConfig := lookPathIn("pg_config", s.path); pgConfig != "" {
		out, err := exec.Command(pgConfig, "--bindir").Output()
		if dir := strings.TrimSpace(string(out)); err == nil && hasServerBinaries(dir) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob(s.installGlob) // the pattern is ours; a bad one simply matches nothing
	sort.Slice(dirs, func(i, j int) bool {
		return versionLess(filepath.Base(filepath.Dir(dirs[j])), filepath.Base(filepath.Dir(dirs[i])))
	})
	for _, dir := range dirs {
		if hasServerBinaries(dir) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("PostgreSQL server binaries (%s) not found in PATH, `pg_config --bindir` or %s; install them with: apt-get install postgresql",
		strings.Join(serverBinaries, ", "), s.installGlob)
}

func hasServerBinaries(dir string) bool {
	for _, name := range serverBinaries {
		if !isExecutable(filepath.Join(dir, name)) {
			return false
		}
	}
	return true
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// lookPathIn is exec.LookPath over an explicit PATH value.
func lookPathIn(name, pathList string) string {
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" {
			continue
		}
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p
		}
	}
	return ""
}

// versionLess orders directory names such as "9.6", "13" and "16" numerically,
// so that 16 beats 9.6; names that are not versions sort first.
func versionLess(a, b string) bool {
	pa, pb := versionParts(a), versionParts(b)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return len(pa) < len(pb)
}

func versionParts(s string) []int {
	var parts []int
	for _, f := range strings.Split(s, ".") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil
		}
		parts = append(parts, n)
	}
	return parts
}
