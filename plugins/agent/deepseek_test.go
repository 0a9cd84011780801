package agent

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

// TestRealDeepSeekSkipsWithoutDEEPSEEK_API_KEY talks to the real DeepSeek
// endpoint when DEEPSEEK_API_KEY is set, and is skipped otherwise (no other
// test needs a key or the network). The model is asked to add through the
// folded fixture server.
func TestRealDeepSeekSkipsWithoutDEEPSEEK_API_KEY(t *testing.T) {
	key := os.Getenv("DEEPSEEK_API_KEY")
	if key == "" {
		t.Skip("DEEPSEEK_API_KEY is not set: this test talks to the real DeepSeek API")
	}
	srv := openaitest.New(t) // unused: start needs a base URL, replaced below
	e := start(t, srv, "")
	cfg := e.agent.cfg
	cfg.BaseURL = defaults().BaseURL
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	real := newAgent(context.Background(), cfg, key, e.reg, nil, &http.Client{Transport: tr})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var o output
	res, err := real.NewConversation().Turn(ctx,
		"Use mcp_call to call the tool mcp__demo__add with a=20 and b=22, then answer with the number it returned, digits only.", o.out())
	if err != nil {
		t.Fatalf("turn: %v\nstatus:\n%s", err, o.status.String())
	}
	if res.Steps == 0 || !strings.Contains(res.Answer, "42") {
		t.Errorf("result = %+v\nstatus:\n%s", res, o.status.String())
	}
}
