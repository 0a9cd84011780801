package workspace_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/internal/sandbox"
	_ "github.com/dsh-host/dsh-host/plugins/metrics"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestRunEnvironment: run's command sees the variables a program needs
// (PATH, HOME) and those the entry's env lists, and nothing else of the
// host's environment: not a provider's API key, not a DSH_ token, not an
// ordinary variable nobody listed; and not a listed variable that another
// entry names as its secret (here the metrics entry's tokenEnv). Under
// the sandbox too, when this machine has one.
func TestRunEnvironment(t *testing.T) {
	t.Setenv("DEEPSEEK_API_KEY", "sk-provider-secret")
	t.Setenv("DSH_TEST_WS_TOKEN", "dsh-token-secret")
	t.Setenv("DSH_TEST_WS_PLAIN", "plain-unlisted")
	t.Setenv("DSH_TEST_WS_LISTED", "listed-value")
	t.Setenv("DSH_TEST_WS_SCRAPE", "scrape-token-secret")
	t.Setenv("HOME", "/home/ws-test")
	modes := []string{"off"}
	if abi, _ := sandbox.Support(); abi > 0 {
		modes = append(modes, "strict")
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			h := hosttest.Start(t, fmt.Sprintf(`plugins:
  - id: ws
    name: workspace
    config:
      dir: %q
      sandbox: %s
      env: [DSH_TEST_WS_LISTED, DSH_TEST_WS_SCRAPE]
  - id: metrics
    name: metrics
    config: {listen: "127.0.0.1:0", tokenEnv: DSH_TEST_WS_SCRAPE}
`, dir, mode))
			res := h.Tools().Run(t.Context(), tools.Call{Caller: tools.Caller{Kind: tools.CallerChat}, Name: "run", Args: []byte(`{"command":"env"}`),
				Channels: &tools.Channels{Answerer: &approver{answer: elicit.ApproveOnce}}})
			out := hosttest.Text(res)
			if res.Err != nil || !strings.HasPrefix(out, "exit status 0\n") {
				t.Fatalf("run env: %q, %v", out, res.Err)
			}
			vars := map[string]string{}
			for _, line := range strings.Split(out, "\n")[1:] {
				if name, value, ok := strings.Cut(line, "="); ok {
					vars[name] = value
				}
			}
			for _, name := range []string{"DEEPSEEK_API_KEY", "DSH_TEST_WS_TOKEN", "DSH_TEST_WS_PLAIN", "DSH_TEST_WS_SCRAPE", "DSH_HOME"} {
				if _, ok := vars[name]; ok {
					t.Errorf("the command sees %s", name)
				}
			}
			for _, secret := range []string{"sk-provider-secret", "dsh-token-secret", "scrape-token-secret"} {
				if strings.Contains(out, secret) {
					t.Errorf("a secret reached the command:\n%s", out)
				}
			}
			if vars["DSH_TEST_WS_LISTED"] != "listed-value" || vars["HOME"] != "/home/ws-test" || vars["PATH"] == "" {
				t.Errorf("the command lacks a listed or a minimal variable:\n%s", out)
			}
		})
	}
}

// TestEnvOptionErrors: each bad name in env is refused at its line,
// naming the entry and env[i].
func TestEnvOptionErrors(t *testing.T) {
	for key, config := range map[string]string{
		"env[0]": "env:\n  - FOO=bar #<",
		"env[1]": "env:\n  - GOPATH\n  - AWS_* #<",
		"env[2]": "env:\n  - GOPATH\n  - A\n  - GOPATH #<",
		"env[3]": "env:\n  - GOPATH\n  - A\n  - B\n  - \"\" #<",
	} {
		hosttest.CheckKey(t, "workspace", key, config)
	}
	hosttest.CheckKey(t, "workspace", "env", "env: GOPATH #<")
}
