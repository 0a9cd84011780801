package mcpclient_test

import (
	"context"
	"encoding/json"
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
// first such call reconnects it on 2025-11-25 and is answered; the log
// says so once; the catalog cache remembers it, so the next start connects
// on 2025-11-25 at once (one process start, not two).
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
	ask := mcpclient.PublicToolName("fx", "ask-inline")
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
	if err := json.Unmarshal(b, &cat); err != nil || cat.ProtocolVersion != "2025-11-25" {
		t.Errorf("catalog cache protocolVersion = %q (%v), want 2025-11-25", cat.ProtocolVersion, err)
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
