// Package version is the one source of the binary's version: what
// `dsh-host version` prints, the gateway's serverInfo.version, the traces'
// service.version and the dsh_build_info metric.
//
// A release build stamps Version and Commit with the linker
// (scripts/release: -ldflags "-X .../internal/version.Version=v1.2.3");
// otherwise they come from the build information Go records: the module's
// version for `go install ...@v1.2.3`, the VCS revision for a build in a
// git work tree, and "dev" when neither says.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
)

// Version and Commit are set by -ldflags -X in a release build; empty
// means: read them from the build information.
var (
	Version string
	Commit  string
)

// Info is the build's identity.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"` // GOOS/GOARCH
}

var (
	once sync.Once
	info Info
)

// Get returns the build's identity, read once.
func Get() Info {
	once.Do(func() {
		bi, _ := debug.ReadBuildInfo()
		info = resolve(Version, Commit, bi)
	})
	return info
}

// String is Get().Version, for the places that want the version alone.
func String() string { return Get().Version }

// resolve is Get's logic: the stamped values win over bi, and the fields
// neither says are "dev" (version) and "unknown" (commit).
func resolve(version, commit string, bi *debug.BuildInfo) Info {
	in := Info{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if in.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version
		}
		var dirty bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if in.Commit == "" {
					in.Commit = s.Value
				}
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if dirty && commit == "" && in.Commit != "" {
			// The work tree had changes the commit does not hold.
			in.Commit += "-dirty"
		}
		if bi.GoVersion != "" {
			in.GoVersion = bi.GoVersion
		}
	}
	if in.Version == "" {
		in.Version = "dev"
	}
	if in.Commit == "" {
		in.Commit = "unknown"
	}
	return in
}

// Line is the one line `dsh-host version` prints.
func (i Info) Line() string {
	return fmt.Sprintf("dsh-host %s (commit %s, %s, %s)", i.Version, i.Commit, i.GoVersion, i.Platform)
}
