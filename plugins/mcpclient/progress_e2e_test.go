package mcpclient_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Over Streamable HTTP too, the progress the server streams before its
// result is relayed before the call returns.
func TestProgressBeforeTheResultIsRelayedOverHTTP(t *testing.T) {
	hs := newHarness(t)
	url := mcptest.StartHTTPFixture(t, "-progress")
	hs.apply(host.Entry{ID: "hp", Name: "mcp-client", Config: map[string]any{"transport": "streamable-http", "serverName": "hp", "url": url}})
	hs.requireActive("hp")
	for range 3 {
		var mu sync.Mutex
		var heard []float64
		ch := &tools.Channels{Progress: func(p tools.Progress) {
			if p.Progress == 1 {
				// Long enough for the result to be read meanwhile.
				time.Sleep(50 * time.Millisecond)
			}
			mu.Lock()
			heard = append(heard, p.Progress)
			mu.Unlock()
		}}
		res := hs.callWith(t.Context(), tools.Caller{}, "mcp__hp__progress", map[string]any{"steps": 5, "ms": 0}, ch)
		mu.Lock()
		got := slices.Clone(heard)
		mu.Unlock()
		if res.Err != nil || !slices.Equal(got, []float64{1, 2, 3, 4, 5}) {
			t.Fatalf("call: err %v, progress heard before it returned %v, want 1 … 5", res.Err, got)
		}
	}
}
