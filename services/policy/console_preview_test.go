package policy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/internal/askbroker"
	_ "github.com/dsh-host/dsh-host/plugins/workspace"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestConsoleAskCarriesThePreview: an ask put to the web console carries
// what the call would do as its tool tells it (the workspace edit's
// diff), as the terminal's question does, so that the person approving
// at the page sees the change and not only its arguments.
func TestConsoleAskCarriesThePreview(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := hosttest.Start(t, fmt.Sprintf(`plugins:
  - id: ws
    name: workspace
    config:
      dir: %q
  - id: policy
    name: policy
    config:
      rules:
        - tools: [edit]
          action: ask
`, dir))
	con := attachConsole(t, askbroker.Deny)
	res := h.Tools().Run(t.Context(), tools.Call{Caller: tools.Caller{Kind: tools.CallerGateway, ID: "gateway"}, Name: "edit",
		Args: []byte(`{"path":"a.txt","old_string":"two","new_string":"2"}`), Channels: &tools.Channels{}})
	if res.Err == nil {
		t.Fatalf("denied at the console, yet the edit ran: %q", hosttest.Text(res))
	}
	asks := con.asked()
	if len(asks) != 1 || !strings.Contains(asks[0].Preview, "-two") || !strings.Contains(asks[0].Preview, "+2") {
		t.Fatalf("the console's asks: %+v; want one whose preview is the edit's diff", asks)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(data) != "one\ntwo\n" {
		t.Errorf("a denied edit changed the file: %q", data)
	}
}
