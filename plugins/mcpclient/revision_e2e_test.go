package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/plugins/mcpclient"
	"github.com/dsh-host/dsh-host/services/elicit"
)

// TestE2EAskingTheOldWaySwitchesTheRevision: a server that asks its client
// during a call the 2025-11-25 way (elicitation/create, which go-sdk
// servers refuse to send on 2026-07-28) needs no protocolVersion pin: the
// first such call reconnects it on 2025-11-25 and, the tool being
// read-only, is sent again and answered; the log says so once; the catalog
// cache remembers it, so the next start connects on 2025-11-25 at once
// (one process start, not two).
func TestE2EAskingTheOldWaySwitchesTheRevision(t *testing.T) {
	hs := newHarness(t)
	starts := filepath.Join(t.TempDir(), "starts")
	entry := stdioFixture(t, "fx", "fx", nil, "-ask-inline", "-starts-file", starts)
	hs.apply(entry)
	hs.requireActive("fx")
	remove := service(hs, elicit.Key).Install(elicit.AnswerFunc(func(context.Context, elicit.Request) (elicit.Result, error) {
		return elicit.Result{Action: elicit.Accept, Content: map[string]any{"name": "Ada"}}, nil
	}))
	defer remove()
	ask := mcpclient.PublicToolName("fx", "ask-inline-readonly")
	const want = `{"action":"accept","content":{"color":"b","count":3,"name":"Ada"}}`
	for i := range 2 {
		res := hs.call(modelCaller, ask, nil)
		if res.Err != nil || text(res) != want {
			t.Fatalf("call %d: %v %q, want the answer %s", i+1, res.Err, text(res), want)
		}
	}
	if n := countLines(t, starts); n != 2 {
		t.Errorf("server starts = %d, want 2 (one switch)", n)
	}
	const note = "reconnecting it on 2025-11-25, remembered in the catalog cache"
	if n := strings.Count(hs.logs.String(), note); n != 1 {
		t.Errorf("the switch was said %d times, want once:\n%s", n, hs.logs.String())
	}
	if v := catalogProtocol(t); v != "2025-11-25" {
		t.Errorf("catalog cache protocolVersion = %q, want 2025-11-25", v)
	}

	// The next start: straight on 2025-11-25, the first call answered.
	hs.apply()
	hs.apply(entry)
	hs.requireActive("fx")
	if res := hs.call(modelCaller, ask, nil); res.Err != nil || text(res) != want {
		t.Errorf("after a restart: %v %q", res.Err, text(res))
	}
	if n := countLines(t, starts); n != 3 {
		t.Errorf("server starts = %d after a restart, want 3 (no second switch)", n)
	}
	if n := strings.Count(hs.logs.String(), note); n != 1 {
		t.Errorf("the switch was said %d times in all, want once", n)
	}
}

// TestE2EAskingTheOldWayRepeatsOnlyWhatIsSafe: the call the server refused
// had reached it and run up to its question, so it is sent again on
// 2025-11-25 only for a tool whose annotations say a second run changes
// nothing (readOnlyHint, or idempotentHint with destructiveHint false). Any
// other tool ran once and is answered with an error saying why it was not
// sent again; the reconnect and its memory happen all the same, and the
// caller's next call is answered.
func TestE2EAskingTheOldWayRepeatsOnlyWhatIsSafe(t *testing.T) {
	for _, c := range []struct {
		tool   string
		repeat bool
	}{
		{"ask-inline", false},                        // no annotations: the spec's defaults
		{"ask-inline-idempotent-destructive", false}, // destructiveHint defaults to true
		{"ask-inline-idempotent", true},
		{"ask-inline-readonly", true},
	} {
		t.Run(c.tool, func(t *testing.T) {
			hs := newHarness(t)
			dir := t.TempDir()
			starts, acts := filepath.Join(dir, "starts"), filepath.Join(dir, "acts")
			hs.apply(stdioFixture(t, "fx", "fx", nil, "-ask-inline", "-starts-file", starts, "-acts-file", acts))
			hs.requireActive("fx")
			remove := service(hs, elicit.Key).Install(elicit.AnswerFunc(func(context.Context, elicit.Request) (elicit.Result, error) {
				return elicit.Result{Action: elicit.Accept, Content: map[string]any{"name": "Ada"}}, nil
			}))
			defer remove()
			ask := mcpclient.PublicToolName("fx", c.tool)
			const want = `{"action":"accept","content":{"color":"b","count":3,"name":"Ada"}}`

			res := hs.call(modelCaller, ask, nil)
			runs := countLines(t, acts)
			if c.repeat {
				if res.Err != nil || text(res) != want || runs != 2 {
					t.Fatalf("first call: %v %q after %d runs, want the answer after 2 (sent again)", res.Err, text(res), runs)
				}
			} else {
				msg := fmt.Sprint(res.Err)
				for _, part := range []string{
					`tool "` + c.tool + `"`, "2025-11-25", "reconnected", "not sent again", "may have acted", "call it again",
				} {
					if !strings.Contains(msg, part) {
						t.Errorf("first call's error lacks %q: %v", part, res.Err)
					}
				}
				if runs != 1 {
					t.Fatalf("the tool ran %d times, want once (not sent again)", runs)
				}
			}

			// The caller calls again: answered on 2025-11-25, one more run.
			if res := hs.call(modelCaller, ask, nil); res.Err != nil || text(res) != want {
				t.Fatalf("second call: %v %q, want the answer", res.Err, text(res))
			}
			if got, wantRuns := countLines(t, acts), runs+1; got != wantRuns {
				t.Errorf("runs after the second call = %d, want %d", got, wantRuns)
			}
			if n := countLines(t, starts); n != 2 {
				t.Errorf("server starts = %d, want 2 (one switch)", n)
			}
			if n := strings.Count(hs.logs.String(), "reconnecting it on 2025-11-25, remembered in the catalog cache"); n != 1 {
				t.Errorf("the switch was said %d times, want once", n)
			}
			if v := catalogProtocol(t); v != "2025-11-25" {
				t.Errorf("catalog cache protocolVersion = %q, want 2025-11-25", v)
			}
		})
	}
}

// catalogProtocol is the revision the one catalog cache file remembers.
func catalogProtocol(t *testing.T) string {
	t.Helper()
	files := catalogFiles(t)
	if len(files) != 1 {
		t.Fatalf("catalog files = %v, want one", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var cat struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(b, &cat); err != nil {
		t.Fatalf("%s: %v", files[0], err)
	}
	return cat.ProtocolVersion
}

// TestE2ERememberedRevisionOnlyTheOneTheHostWrites: the catalog cache is a
// file anyone who can write the host's home may change; a revision there
// other than the one the host writes (2025-11-25) is not offered to the
// server: the launch connects on go-sdk's latest, as without a memory,
// and its tools answer.
func TestE2ERememberedRevisionOnlyTheOneTheHostWrites(t *testing.T) {
	hs := newHarness(t)
	entry := stdioFixture(t, "fx", "fx", nil)
	file := warmCatalog(t, hs, entry)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cat map[string]any
	if err := json.Unmarshal(b, &cat); err != nil {
		t.Fatal(err)
	}
	cat["protocolVersion"] = "1999-01-01"
	if b, err = json.Marshal(cat); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	hs.apply(entry)
	hs.requireActive("fx")
	if res := hs.call(modelCaller, mcpclient.PublicToolName("fx", "ping"), nil); res.Err != nil || text(res) != "pong" {
		t.Errorf("ping with a tampered remembered revision: %v %q, want pong", res.Err, text(res))
	}
}
