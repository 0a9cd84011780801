package serve

import (
	"maps"
	"math"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dsh-host/dsh-host/gateway"
	"github.com/dsh-host/dsh-host/host"
)

// TestServeEntryConfig: the entry serve makes of its flags holds the
// gateway's config in the gateway's own keys, only those set, and the
// host decodes from it exactly the config the flags made.
func TestServeEntryConfig(t *testing.T) {
	tests := []struct {
		name     string
		cfg      gateway.Config
		wantKeys []string
	}{
		{"stdio", gateway.Config{}, nil},
		{"http", gateway.Config{HTTP: "127.0.0.1:8931", TokenEnv: "T", Stateless: true}, []string{"http", "stateless", "tokenEnv"}},
		{"list wait", gateway.Config{ListWait: 2 * time.Second}, []string{"listWait"}},
		{"every key", gateway.Config{HTTP: "127.0.0.1:1", TokenEnv: "T", Raw: true, Stateless: true,
			Limits: gateway.Limits{MaxConnections: 7, MaxSessions: 3, SessionTimeout: 90 * time.Second}},
			[]string{"http", "maxConnections", "maxSessions", "raw", "sessionTimeout", "stateless", "tokenEnv"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := entryConfig(tt.cfg, gateway.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantKeys, slices.Sorted(maps.Keys(m)), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
			got, err := host.Decode[gateway.Config](&host.Entry{ID: GatewayID, Name: gateway.PluginName, File: "(command line)", Config: m})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&tt.cfg, got); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServeTunesGCUnlessTheEnvironmentDoes: serve collects at GOGC=400
// under a 256 MiB soft limit, and leaves each to the environment where it
// sets it.
func TestServeTunesGCUnlessTheEnvironmentDoes(t *testing.T) {
	gcPercent, memLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetGCPercent(gcPercent); debug.SetMemoryLimit(memLimit) })
	for _, tt := range []struct {
		name             string
		env              map[string]string
		percent, limitMB int64
	}{
		{"unset", nil, 400, 256},
		{"GOGC set", map[string]string{"GOGC": "100"}, 100, 256},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, 400, math.MaxInt64 >> 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(math.MaxInt64)
			TuneGC(func(k string) string { return tt.env[k] })
			if got := int64(debug.SetGCPercent(100)); got != tt.percent {
				t.Errorf("GOGC = %d, want %d", got, tt.percent)
			}
			if got := debug.SetMemoryLimit(-1) >> 20; got != tt.limitMB {
				t.Errorf("memory limit = %d MiB, want %d", got, tt.limitMB)
			}
		})
	}
}
