package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// test-echo registers the echo tool, so that a test host has a surface to
// serve.
func init() {
	host.Register(host.Definition[struct{}]{
		Name:   "test-echo",
		Inject: []host.Dep{host.Require(tools.Key)},
		Apply: func(s *host.Scope, _ struct{}) error {
			_, err := host.Get(s, tools.Key).Register(s, echo("echo"))
			return err
		},
	})
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // in the error; "" for none
	}{
		{"no listener", Config{}, ""},
		{"loopback", Config{HTTP: "127.0.0.1:0"}, ""},
		{"localhost", Config{HTTP: "localhost:8931"}, ""},
		{"IPv6 loopback", Config{HTTP: "[::1]:0"}, ""},
		{"all interfaces with a token", Config{HTTP: ":0", TokenEnv: "T"}, ""},
		{"all interfaces", Config{HTTP: ":0"}, `http ":0": refusing to serve on every interface without a token`},
		{"wildcard address", Config{HTTP: "0.0.0.0:0"}, "refusing to serve on 0.0.0.0 without a token"},
		{"no port", Config{HTTP: "127.0.0.1"}, `http "127.0.0.1": want HOST:PORT`},
		{"token without listener", Config{TokenEnv: "T"}, "tokenEnv: applies to http only"},
		{"stateless without listener", Config{Stateless: true}, "stateless: applies to http only"},
		{"name limit", Config{NameLimit: 40}, ""},
		{"name limit 64", Config{NameLimit: 64}, ""},
		{"name limit too small", Config{NameLimit: 10}, "nameLimit 10: want 24 to 64"},
		{"name limit too large", Config{NameLimit: 65}, "nameLimit 65: want 24 to 64"},
		{"metrics", Config{Metrics: "127.0.0.1:9464"}, ""},
		{"metrics without a port", Config{Metrics: "127.0.0.1"}, `metrics: "127.0.0.1": want HOST:PORT`},
		{"list wait", Config{ListWait: time.Second}, ""},
		{"negative list wait", Config{ListWait: -time.Second}, "listWait: -1s is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

// testHost is a host for the plugin's tests, shut down when the test ends.
func testHost(t *testing.T) *host.Host {
	t.Helper()
	t.Setenv("DSH_HOME", t.TempDir())
	h := host.New(&host.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return h
}

// update applies composition text to h.
func update(t *testing.T, h *host.Host, text string) {
	t.Helper()
	c, err := host.ParseComposition("composition.yml", []byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := h.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
}

// waitGateway waits until the instance gateway is in state and returns its
// status.
func waitGateway(t *testing.T, h *host.Host, state host.State, cond func(host.InstanceStatus) bool) host.InstanceStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var last host.InstanceStatus
	err := h.WaitStatus(ctx, func(st []host.InstanceStatus) bool {
		last = host.Find(st, "gateway")
		return last.State == state && (cond == nil || cond(last))
	})
	if err != nil {
		t.Fatalf("the gateway instance is %s (%s%s), want %s", last.State, last.Err, last.Detail, state)
	}
	return last
}

// connect connects a go-sdk client to the Streamable HTTP endpoint url.
func connect(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// freePort returns a loopback port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestPluginHotReload declares the gateway in a watched composition and
// edits its port: the listener moves, the clients of the old one are
// disconnected, and a client of the new one sees the same tools.
func TestPluginHotReload(t *testing.T) {
	h := testHost(t)
	file := filepath.Join(t.TempDir(), "composition.yml")
	write := func(addr string) {
		text := fmt.Sprintf("plugins:\n  - {id: echo, name: test-echo}\n  - id: gateway\n    name: gateway\n    config: {http: %q}\n", addr)
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("127.0.0.1:0")
	ctx, stopWatch := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	go func() { watched <- h.Watch(ctx, file) }()
	defer func() {
		stopWatch()
		if err := <-watched; err != nil {
			t.Error(err)
		}
	}()

	// The URL is the status's Endpoint, typed for a front end (serve),
	// and its Detail for people.
	st := waitGateway(t, h, host.StateActive, nil)
	first := st.Endpoint
	if !strings.HasPrefix(first, "http://127.0.0.1:") || !strings.HasSuffix(first, "/mcp") || st.Detail != first {
		t.Fatalf("endpoint %q, detail %q, want the endpoint's URL", first, st.Detail)
	}
	old := connect(t, first)
	// echo and the gateway start side by side: the tool may come after
	// the gateway's first assembly, and then in a re-assembly.
	mcptest.WaitFor(t, wait, "echo in tools/list", func() bool { return cmp.Equal(toolNames(t, old), []string{"echo"}) })

	moved := fmt.Sprintf("http://127.0.0.1:%d/mcp", freePort(t))
	write(strings.TrimSuffix(strings.TrimPrefix(moved, "http://"), "/mcp"))
	waitGateway(t, h, host.StateActive, func(s host.InstanceStatus) bool { return s.Endpoint == moved })

	cs := connect(t, moved)
	if got := toolNames(t, cs); !cmp.Equal(got, []string{"echo"}) {
		t.Errorf("tools/list on the new port = %v, want [echo]", got)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "moved"}})
	if err != nil || res.IsError {
		t.Errorf("call on the new port: %v %v", err, res)
	}
	// The old listener is gone, and its session with it.
	if conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(first, "http://"), "/mcp")); err == nil {
		conn.Close()
		t.Errorf("%s still accepts connections after the port moved", first)
	}
	if _, err := old.ListTools(context.Background(), nil); err == nil {
		t.Error("the old listener's session still answers")
	}
}

// TestPluginApplyFails: what the config cannot give at apply fails the
// instance with an error saying what to do, and touches nothing else.
func TestPluginApplyFails(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		name, config, want string
	}{
		{"port in use", fmt.Sprintf("{http: %q}", busy.Addr()), fmt.Sprintf("http %s: ", busy.Addr())},
		{"token variable unset", "{http: 127.0.0.1:0, tokenEnv: DSH_TEST_NO_SUCH_TOKEN}", "tokenEnv DSH_TEST_NO_SUCH_TOKEN: the variable is not set or empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := testHost(t)
			update(t, h, "plugins:\n  - {id: echo, name: test-echo}\n  - {id: gateway, name: gateway, config: "+tt.config+"}\n")
			st := waitGateway(t, h, host.StateFailed, nil)
			if !strings.Contains(st.Err, tt.want) {
				t.Errorf("error %q, want it to say %q", st.Err, tt.want)
			}
			if s := host.Find(h.Status(), "echo"); s.State != host.StateActive {
				t.Errorf("echo is %s, want active", s.State)
			}
		})
	}
}

// TestPluginToken: with tokenEnv, the listener requires the token.
func TestPluginToken(t *testing.T) {
	t.Setenv("DSH_TEST_GATEWAY_TOKEN", "tok-123")
	h := testHost(t)
	update(t, h, "plugins:\n  - {id: echo, name: test-echo}\n  - {id: gateway, name: gateway, config: {http: 127.0.0.1:0, tokenEnv: DSH_TEST_GATEWAY_TOKEN}}\n")
	url := waitGateway(t, h, host.StateActive, nil).Detail
	if status, _ := post(t, url, nil); status != http.StatusUnauthorized {
		t.Errorf("without the token: status %d, want 401", status)
	}
	if status, _ := post(t, url, map[string]string{"Authorization": "Bearer tok-123"}); status != http.StatusOK {
		t.Errorf("with the token: status %d, want 200", status)
	}
}

// TestPluginFollowsItsProviders: the gateway serves the registry it was
// started with; when the tools service is restarted, so is the gateway.
func TestPluginFollowsItsProviders(t *testing.T) {
	h := testHost(t)
	text := "plugins:\n  - {id: echo, name: test-echo}\n  - {id: gateway, name: gateway}\n"
	update(t, h, text)
	waitGateway(t, h, host.StateActive, nil)
	g, ok := host.Lookup(h, Key)
	if !ok {
		t.Fatal("no gateway service")
	}
	// Disabling the tools service takes the gateway down with it, and
	// enabling it again starts a new gateway on the new registry.
	update(t, h, text+"  - {id: tools, name: tools, disabled: true}\n")
	select {
	case <-g.Done():
	default:
		t.Fatal("the gateway of the old registry is still open")
	}
	waitGateway(t, h, host.StatePending, nil)
	update(t, h, text)
	waitGateway(t, h, host.StateActive, nil)
	g2, ok := host.Lookup(h, Key)
	if !ok || g2 == g {
		t.Fatalf("after the restart the gateway service is %p (ok %v), want a new one", g2, ok)
	}
	reg, _ := host.Lookup(h, tools.Key)
	if g2.reg != reg {
		t.Error("the new gateway does not serve the new registry")
	}
}
