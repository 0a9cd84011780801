package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// hangCalled receives one value per call of test-hang's tool.
var hangCalled = make(chan struct{}, 1)

// test-hang registers the tool hang, which returns only when its call is
// cancelled, as a slow server's tool would.
func init() {
	host.Register(host.Definition[struct{}]{
		Name:   "test-hang",
		Inject: []host.Dep{host.Require(tools.Key)},
		Apply: func(s *host.Scope, _ struct{}) error {
			_, err := host.Get(s, tools.Key).Register(s, tools.Definition{
				Name:        "hang",
				Description: "Return when cancelled.",
				Execute: func(ctx context.Context, _ tools.Call) (tools.Output, error) {
					hangCalled <- struct{}{}
					<-ctx.Done()
					return tools.Output{}, ctx.Err()
				},
			})
			return err
		},
	})
}

// served is a `dsh-host serve` running in-process, with stdio on pipes and
// JSON logs.
type served struct {
	stdin  *io.PipeWriter // the client writes here
	stdout *io.PipeReader // and reads here
	logs   <-chan map[string]any
	stderr *bytes.Buffer // every line, once code has a value
	code   chan int
}

// serveInProcess runs `dsh-host serve` with args until ctx ends.
func serveInProcess(t *testing.T, ctx context.Context, args ...string) *served {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	s := &served{stdin: inW, stdout: outR, stderr: &bytes.Buffer{}, code: make(chan int, 1)}
	// Every line to stderr, JSON ones to logs as well.
	logsR, logsW := io.Pipe()
	go func() {
		sc := bufio.NewScanner(errR)
		for sc.Scan() {
			s.stderr.WriteString(sc.Text() + "\n")
			logsW.Write(append(sc.Bytes(), '\n'))
		}
		logsW.Close()
	}()
	s.logs = logLines(t, bufio.NewScanner(logsR))
	go func() {
		code := dispatch(ctx, append([]string{"serve", "--log-format", "json"}, args...), Stdio{In: inR, Out: outW, Err: errW})
		outW.Close()
		errW.Close()
		inR.Close()
		for range s.logs { // drained: stderr is complete
		}
		s.code <- code
	}()
	return s
}

// exit waits for serve to return and gives its code.
func (s *served) exit(t *testing.T) int {
	t.Helper()
	select {
	case code := <-s.code:
		return code
	case <-time.After(time.Minute):
		t.Fatal("serve did not return within a minute")
		return 0
	}
}

// TestServeStdioEndsWhenTheGatewayRestarts: serve --stdio runs its session
// on the composition's own gateway entry; an edit of that entry restarts the
// instance, and serve ends the session and exits 1, telling the client to
// reconnect.
func TestServeStdioEndsWhenTheGatewayRestarts(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	text := "plugins:\n  - {id: hi, name: greeter}\n  - {id: gateway, name: gateway%s}\n"
	file := writeComposition(t, strings.Replace(text, "%s", "", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := serveInProcess(t, ctx, "--stdio", "-c", file)

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).
		Connect(ctx, &mcp.IOTransport{Reader: s.stdout, Writer: s.stdin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "stdio"}})
	if err != nil || res.IsError {
		t.Fatalf("greet over stdio: %v %+v", err, res)
	}

	if err := os.WriteFile(file, []byte(strings.Replace(text, "%s", ", config: {http: 127.0.0.1:0}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := s.exit(t); code != exitFail {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(s.stderr.String(), "the client must reconnect") {
		t.Errorf("stderr does not tell the client to reconnect:\n%s", s.stderr)
	}
	if _, err := cs.ListTools(ctx, nil); err == nil {
		t.Error("the session still answers after serve returned")
	}
}

// TestServeStdioStopsWithACallInFlight: SIGINT ends serve --stdio at once
// even while a tool call runs (go-sdk's session Close alone would wait for
// it), with exit 0.
func TestServeStdioStopsWithACallInFlight(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	file := writeComposition(t, "plugins:\n  - {id: hang, name: test-hang}\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := serveInProcess(t, ctx, "--stdio", "-c", file)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: s.stdout, Writer: s.stdin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	called := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hang"})
		called <- err
	}()
	<-hangCalled
	cancel() // SIGINT
	if code := s.exit(t); code != exitOK {
		t.Errorf("exit %d, want 0\n%s", code, s.stderr)
	}
	cs.Close()
	<-called
}

// TestServeStdioGatewayFailsWhileWaited: serve --stdio waits for a pending
// gateway; when a reload fails it instead, serve exits 1 saying why.
func TestServeStdioGatewayFailsWhileWaited(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	file := writeComposition(t, "plugins:\n  - {id: tools, name: tools, disabled: true}\n  - {id: gateway, name: gateway}\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := serveInProcess(t, ctx, "--stdio", "-c", file)
	waitLog(t, s.logs, "the gateway pending", msg("the gateway waits for a service; see the host's status above, or run dsh-host check"))
	if err := os.WriteFile(file, []byte("plugins:\n  - {id: gateway, name: gateway, config: {http: 127.0.0.1:0, tokenEnv: DSH_TEST_NO_SUCH_TOKEN}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := s.exit(t); code != exitFail {
		t.Errorf("exit %d, want 1", code)
	}
	if want := "the gateway (entry \"gateway\" in " + file + ") failed: tokenEnv DSH_TEST_NO_SUCH_TOKEN"; !strings.Contains(s.stderr.String(), want) {
		t.Errorf("stderr does not say %q:\n%s", want, s.stderr)
	}
}

// TestServeComposedGatewayWins: with a gateway entry in the composition,
// serve runs it as written and says that its flags are ignored.
func TestServeComposedGatewayWins(t *testing.T) {
	t.Setenv("DSH_HOME", t.TempDir())
	file := writeComposition(t, "plugins:\n  - {id: hi, name: greeter}\n  - {id: gw, name: gateway, config: {http: 127.0.0.1:0}}\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := serveInProcess(t, ctx, "--http", "127.0.0.1:1", "-c", file)
	waitLog(t, s.logs, "the warning", msg("the composition declares a gateway entry, which wins: --http, --token-env, --token-file, --tls-cert, --tls-key, --raw, --stateless, --name-limit, --drop-marker, --drain-timeout, --list-wait and --metrics (and their DSH_ variables) are ignored", "entry", "gw"))
	var url string
	waitLog(t, s.logs, "the listener", func(m map[string]any) bool {
		url, _ = m["url"].(string)
		return m["msg"] == "serving MCP over Streamable HTTP" && m["entry"] == "gw"
	})
	if strings.Contains(url, ":1/") {
		t.Errorf("the gateway listens on the flag's address %s", url)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Error(err)
	}
	cs.Close()
	cancel() // SIGINT
	if code := s.exit(t); code != exitOK {
		t.Errorf("exit %d, want 0\n%s", code, s.stderr)
	}
}

// TestServeUsage: what the flags get wrong is a usage error, before
// anything starts; the gateway plugin's own rules decide.
func TestServeUsage(t *testing.T) {
	file := writeComposition(t, greeterComposition)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"both transports", []string{"--stdio", "--http", "127.0.0.1:0"}, "exclude each other"},
		{"token without http", []string{"--stdio", "--token-env", "T"}, "--token-env applies to --http only"},
		{"no port", []string{"--http", "127.0.0.1"}, "want HOST:PORT"},
		{"all interfaces", []string{"--http", ":0"}, "without a token"},
		{"token variable unset", []string{"--http", ":0", "--token-env", "DSH_TEST_NO_SUCH_TOKEN"}, "not set or empty"},
		{"negative list wait", []string{"--stdio", "--list-wait", "-1s"}, "--list-wait -1s is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := dispatch(context.Background(), append([]string{"serve", "-c", file}, tt.args...), Stdio{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
			if code != exitUsage || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), tt.want)
			}
		})
	}
}
