package version

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}
	tagged := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v1.2.3"}}
	for _, tc := range []struct {
		name            string
		version, commit string
		bi              *debug.BuildInfo
		want            Info
	}{
		{"nothing", "", "", nil, Info{"dev", "unknown", runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH}},
		{"work tree", "", "", vcs, Info{"dev", "abc123-dirty", "go1.99", runtime.GOOS + "/" + runtime.GOARCH}},
		{"go install @v1.2.3", "", "", tagged, Info{"v1.2.3", "unknown", "go1.99", runtime.GOOS + "/" + runtime.GOARCH}},
		// The release script's stamp wins over what Go recorded.
		{"stamped", "v2.0.0", "def456", vcs, Info{"v2.0.0", "def456", "go1.99", runtime.GOOS + "/" + runtime.GOARCH}},
	} {
		if got := resolve(tc.version, tc.commit, tc.bi); got != tc.want {
			t.Errorf("%s: resolve = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestLine(t *testing.T) {
	got := Info{"v1.2.3", "abc", "go1.26.8", "linux/amd64"}.Line()
	if want := "dsh-host v1.2.3 (commit abc, go1.26.8, linux/amd64)"; got != want {
		t.Errorf("Line = %q, want %q", got, want)
	}
}
