// Package version names the running build, for the User-Agent, /metrics and
// the instances table.
package version

import "runtime/debug"

// Version is set at link time (-ldflags "-X github.com/vigilhq/vigil/internal/version.Version=v1.2.3");
// otherwise it comes from the module build info, or "dev".
var Version = ""

// String returns the version of this binary.
func String() string {
	if Version != "" {
		return Version
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		if v := info.Main.Version; v != "" && v != "(devel)" {
			return v
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return "dev"
}
