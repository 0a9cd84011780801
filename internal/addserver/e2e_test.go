package addserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/addserver"
	"github.com/dsh-host/dsh-host/internal/hostrun"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/registrytest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// running is a host following a composition file, with a gateway on
// loopback and its control socket, as `dsh-host serve` runs it.
type running struct {
	h    *host.Host
	file string
	app  *app.Local
}

func startFollowing(t *testing.T, file string) *running {
	t.Helper()
	h := host.New(&host.Options{Logger: quiet, Debounce: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	go func() { watched <- h.Watch(ctx, file) }()
	stopControl := hostrun.ServeControl(h, file, quiet)
	t.Cleanup(func() {
		stopControl()
		cancel()
		<-watched
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		if err := h.Shutdown(sctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	r := &running{h: h, file: file, app: &app.Local{Host: h, File: file}}
	r.wait(t, "gateway", host.StateActive)
	return r
}

// wait waits (bounded) for instance id to be in state.
func (r *running) wait(t *testing.T, id string, state host.State) host.InstanceStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var got host.InstanceStatus
	err := r.h.WaitStatus(ctx, func(st []host.InstanceStatus) bool {
		i := slices.IndexFunc(st, func(s host.InstanceStatus) bool { return s.ID == id })
		if i >= 0 {
			got = st[i]
		}
		return i >= 0 && got.State == state
	})
	if err != nil {
		t.Fatalf("%s is not %s: %+v (%v)", id, state, got, err)
	}
	return got
}

// gatewayTools lists the tools a gateway client is offered.
func gatewayTools(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

const gatewayComposition = `# Served by a gateway.
plugins:
  - id: gateway
    name: gateway
    config: {http: "127.0.0.1:0"}
`

// TestAddedServerHeldUntilTrust: a remote server of the registry (the
// in-repo go-sdk fixture on loopback) added to the composition of a
// running host is started by its hot reload, and its tools are offered
// to no gateway client and refused to callers until trust approves them
// (the review shows why they are held); then the client sees them.
func TestAddedServerHeldUntilTrust(t *testing.T) {
	url := mcptest.StartHTTPFixture(t)
	c := fixtureRegistry(t, registrytest.Raw([]byte(fmt.Sprintf(
		`{"name":"io.github.example/fixture","version":"1.0.0","description":"The fixture.","remotes":[{"type":"streamable-http","url":%q}]}`, url))))
	file := filepath.Join(t.TempDir(), "composition.yml")
	if err := os.WriteFile(file, []byte(gatewayComposition), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startFollowing(t, file)
	endpoint := r.wait(t, "gateway", host.StateActive).Endpoint
	cs := mcptest.Connect(t, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)

	p, err := addserver.FromRegistry(t.Context(), c, "io.github.example/fixture", everywhere(""), &answers{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := addserver.Write(t.Context(), p, addserver.Options{File: file})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Running || !strings.Contains(res.Text(p), "the running host of "+file+" starts it now") {
		t.Errorf("add did not say the running host starts it:\n%s", res.Text(p))
	}
	r.wait(t, "fixture", host.StateActive)
	if names := gatewayTools(t, cs); slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "fixture") }) {
		t.Fatalf("held tools offered to a gateway client: %q", names)
	}
	list, err := r.app.Tools(t.Context(), app.ToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// The command line lists them as withheld.
	if slices.ContainsFunc(list.Tools, func(tl app.Tool) bool { return tl.Server == "fixture" && !tl.Withheld }) {
		t.Fatalf("held tools offered to the command line: %+v", list.Tools)
	}
	call, err := r.app.Call(t.Context(), app.CallRequest{Tool: "mcp__fixture__add", Args: []byte(`{"a":1,"b":2}`), Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	if call.Err == nil || !strings.Contains(call.Err.Error(), "held until its tools are reviewed (added by dsh-host add from io.github.example/fixture@1.0.0)") {
		t.Fatalf("call of a held tool: %v", call.Err)
	}
	review, err := r.app.Review(t.Context(), app.TrustRequest{Server: "fixture"})
	if err != nil || !review.Pending || !strings.Contains(review.Text, "held until reviewed: added by dsh-host add from io.github.example/fixture@1.0.0") {
		t.Fatalf("review = %+v, %v", review, err)
	}
	reply, err := r.app.Trust(t.Context(), app.TrustRequest{Server: "fixture", Digest: review.Digest})
	if err != nil || reply.Error {
		t.Fatalf("trust: %+v, %v", reply, err)
	}
	if names := gatewayTools(t, cs); !slices.Contains(names, "mcp__fixture__add") {
		t.Errorf("after trust the gateway offers %q, want mcp__fixture__add", names)
	}
	call, err = r.app.Call(t.Context(), app.CallRequest{Tool: "mcp__fixture__add", Args: []byte(`{"a":1,"b":2}`), Yes: true})
	if err != nil || call.Err != nil {
		t.Fatalf("call after trust: %v, %v", call.Err, err)
	}

	// remove: the running host stops it.
	text, err := addserver.RemoveText(t.Context(), file, "fixture")
	if err != nil || !strings.Contains(text, "stops it now") {
		t.Fatalf("remove: %q, %v", text, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := r.h.WaitStatus(ctx, func(st []host.InstanceStatus) bool {
		return !slices.ContainsFunc(st, func(s host.InstanceStatus) bool { return s.ID == "fixture" })
	}); err != nil {
		t.Fatalf("fixture still runs after remove: %v", err)
	}
}

// TestAddedNpmServerRuns: an npm package of the registry is written as
// `npx -y pkg@version` and runs under the host (npm's server-everything,
// found by npx in the pinned npm project the test runs in, so that
// nothing is fetched), held until trusted, then called.
func TestAddedNpmServerRuns(t *testing.T) {
	dir := mcptest.NodeModule(t, mcptest.ServerEverything)
	if _, err := exec.LookPath("npx"); err != nil {
		t.Skip("no npx on PATH")
	}
	var pkg struct{ Version string }
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil {
		t.Fatal(err)
	}
	c := fixtureRegistry(t, registrytest.Raw([]byte(fmt.Sprintf(`{"name":"io.github.modelcontextprotocol/server-everything","version":%q,
		"packages":[{"registryType":"npm","identifier":"@modelcontextprotocol/server-everything","version":%q,"transport":{"type":"stdio"},
		"packageArguments":[{"type":"positional","value":"stdio"}]}]}`, pkg.Version, pkg.Version))))
	// npx runs the package the project in this directory has installed.
	t.Chdir(filepath.Dir(filepath.Dir(filepath.Dir(dir))))
	file := filepath.Join(t.TempDir(), "composition.yml")
	if err := os.WriteFile(file, []byte(gatewayComposition), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startFollowing(t, file)
	p, err := addserver.FromRegistry(t.Context(), c, "io.github.modelcontextprotocol/server-everything", addserver.From{Name: "everything"}, &answers{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "npm: npx -y @modelcontextprotocol/server-everything@" + pkg.Version; p.Via != want {
		t.Errorf("via %q, want %q", p.Via, want)
	}
	if _, err := addserver.Write(t.Context(), p, addserver.Options{File: file}); err != nil {
		t.Fatal(err)
	}
	r.wait(t, "everything", host.StateActive)
	args := []byte(`{"message":"hi"}`)
	if res, err := r.app.Call(t.Context(), app.CallRequest{Tool: "mcp__everything__echo", Args: args, Yes: true}); err != nil || res.Err == nil {
		t.Fatalf("echo before trust: %v, %v; want it held", res.Err, err)
	}
	review, err := r.app.Review(t.Context(), app.TrustRequest{Server: "everything"})
	if err != nil {
		t.Fatal(err)
	}
	if reply, err := r.app.Trust(t.Context(), app.TrustRequest{Server: "everything", Digest: review.Digest}); err != nil || reply.Error {
		t.Fatalf("trust: %+v, %v", reply, err)
	}
	res, err := r.app.Call(t.Context(), app.CallRequest{Tool: "mcp__everything__echo", Args: args, Yes: true})
	if err != nil || res.Err != nil {
		t.Fatalf("echo after trust: %v, %v", res.Err, err)
	}
}
