package localpg

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBinDirFindsServerBinariesHere(t *testing.T) {
	t.Parallel()
	dir, err := BinDir()
	require.NoError(t, err)
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		require.FileExists(t, filepath.Join(dir, name))
	}
}

func TestBinDirSearchOrder(t *testing.T) {
	t.Parallel()
	// fakeBin makes dir hold the named executables (empty scripts will do: find
	// only checks that they exist and are executable).
	fakeBin := func(t *testing.T, dir string, names ...string) string {
		t.Helper()
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for _, name := range names {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755))
		}
		return dir
	}
	all := []string{"initdb", "pg_ctl", "postgres"}

	scenarios := []struct {
		name  string
		setup func(t *testing.T, root string) (s binSearch, want string)
	}{
		{
			name: "PATH wins over installed versions",
			setup: func(t *testing.T, root string) (binSearch, string) {
				onPath := fakeBin(t, filepath.Join(root, "path"), all...)
				fakeBin(t, filepath.Join(root, "lib", "16", "bin"), all...)
				return binSearch{path: filepath.Join(root, "empty") + ":" + onPath, installGlob: filepath.Join(root, "lib", "*", "bin")}, onPath
			},
		},
		{
			name: "PATH directory missing one binary is skipped",
			setup: func(t *testing.T, root string) (binSearch, string) {
				fakeBin(t, filepath.Join(root, "path"), "initdb", "pg_ctl")
				lib := fakeBin(t, filepath.Join(root, "lib", "15", "bin"), all...)
				return binSearch{path: filepath.Join(root, "path"), installGlob: filepath.Join(root, "lib", "*", "bin")}, lib
			},
		},
		{
			name: "pg_config --bindir before installed versions",
			setup: func(t *testing.T, root string) (binSearch, string) {
				target := fakeBin(t, filepath.Join(root, "configured"), all...)
				cfgDir := filepath.Join(root, "cfg")
				require.NoError(t, os.MkdirAll(cfgDir, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(cfgDir, "pg_config"), []byte("#!/bin/sh\necho "+target+"\n"), 0o755))
				fakeBin(t, filepath.Join(root, "lib", "16", "bin"), all...)
				return binSearch{path: cfgDir, installGlob: filepath.Join(root, "lib", "*", "bin")}, target
			},
		},
		{
			name: "newest complete major version first, numerically",
			setup: func(t *testing.T, root string) (binSearch, string) {
				fakeBin(t, filepath.Join(root, "lib", "9.6", "bin"), all...)
				want := fakeBin(t, filepath.Join(root, "lib", "13", "bin"), all...)
				fakeBin(t, filepath.Join(root, "lib", "16", "bin"), "initdb", "pg_ctl") // half-removed package
				return binSearch{path: "", installGlob: filepath.Join(root, "lib", "*", "bin")}, want
			},
		},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			s, want := sc.setup(t, t.TempDir())
			got, err := s.find()
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

func TestBinDirMissingNamesTheFix(t *testing.T) {
	t.Parallel()
	s := binSearch{path: "", installGlob: filepath.Join(t.TempDir(), "*", "bin")}
	_, err := s.find()
	require.Error(t, err)
	require.ErrorContains(t, err, "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found in PATH, `pg_config --bindir` or "+s.installGlob)
	require.ErrorContains(t, err, "install them with: apt-get install postgresql")
}
