package policy_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/policy/audit"
	"github.com/dsh-host/dsh-host/services/policy/policytest"
	"github.com/dsh-host/dsh-host/services/tools"
)

// greeterPolicy is the greeter and a policy whose rule names mallory, all
// writing their trail to dir.
func greeterPolicy(dir, mallory string) string {
	return fmt.Sprintf(`plugins:
  - {id: greeter, name: greeter}
  - id: policy
    name: policy
    config:
      rules:
        - tools: [greet]
          when: 'args.name == %q'
          action: deny
      audit: {dir: %q, maxSize: 20000, keep: 1000}
`, mallory, dir)
}

// openFDs counts this process's descriptors open on path (Linux).
func openFDs(t *testing.T, path string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && target == path {
			n++
		}
	}
	return n
}

// TestAuditCallInFlightAcrossReload: a call that began before a policy
// reload and ends after the replaced instance closed its trail still
// gets its line, in the chain.
func TestAuditCallInFlightAcrossReload(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("waits for the replaced instance's file to close through /proc")
	}
	dir := t.TempDir()
	h := hosttest.Start(t, greeterPolicy(dir, "Mallory"))
	reg := h.Tools()
	s := host.NewScope(context.Background(), "hold", nil)
	t.Cleanup(func() { _ = s.Dispose(time.Second) })
	entered, release := make(chan struct{}), make(chan struct{})
	if _, err := reg.Register(s, tools.Definition{Name: "hold", Execute: func(context.Context, tools.Call) (tools.Output, error) {
		close(entered)
		<-release
		return tools.Output{Value: "held", Content: []tools.Content{tools.Text("held")}}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan tools.Result, 1)
	go func() { done <- reg.Execute(t.Context(), tools.Caller{Kind: "test"}, "hold", nil) }()
	<-entered
	h.Apply(greeterPolicy(dir, "Eve")) // the policy instance that saw the call begin is replaced
	// Its trail is closed once it is disposed: one descriptor is left, the
	// new instance's.
	current, _ := filepath.EvalSymlinks(filepath.Join(dir, audit.File))
	mcptest.WaitFor(t, 10*time.Second, "the replaced policy instance closing its trail", func() bool { return openFDs(t, current) == 1 })
	close(release)
	if res := <-done; res.Err != nil {
		t.Fatal(res.Err)
	}
	h.Call("greet", `{"name":"Ada"}`)
	recs := policytest.ReadTrail(t, dir)
	if len(recs) != 2 || recs[0].Tool != "hold" || recs[0].Outcome != "ok" || recs[1].Tool != "greet" {
		t.Fatalf("trail %+v, want the held call's line, then greet's", recs)
	}
	if _, err := audit.Verify(dir); err != nil {
		t.Fatalf("verify: %v", err)
	}
}

// stopEnv makes the test binary an audit writer until a file appears
// (TestAuditChainUnderLoad).
const stopEnv = "DSH_POLICY_AUDIT_STOP"

func TestAuditWriterUntilStopped(t *testing.T) {
	stop := os.Getenv(stopEnv)
	if stop == "" {
		t.Skip("run by TestAuditChainUnderLoad")
	}
	log, err := audit.Open(filepath.Dir(stop), 8192, 100000)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	n := 0
	// Bounded: it stops at the file, or after 50,000 lines.
	for ; n < 50000; n++ {
		if n%50 == 0 {
			if _, err := os.Stat(stop); err == nil {
				break
			}
		}
		if err := log.Write(&audit.Record{Time: time.Now(), Tool: "writer" + strconv.Itoa(os.Getpid()), ArgsSize: n, Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Printf("wrote %d\n", n)
}

// TestAuditChainUnderLoad: two other processes append to the trail while
// this one makes 1,000 calls in parallel across 20 policy reloads; every
// call has exactly one line, and the trail, rotated many times, verifies.
func TestAuditChainUnderLoad(t *testing.T) {
	dir := t.TempDir()
	stop := filepath.Join(dir, "stop")
	var outs []*bytes.Buffer
	var cmds []*exec.Cmd
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAuditWriterUntilStopped$", "-test.count=1")
		cmd.Env = append(os.Environ(), stopEnv+"="+stop)
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	t.Cleanup(func() {
		os.WriteFile(stop, nil, 0o600)
		for _, cmd := range cmds {
			cmd.Wait()
		}
	})
	h := hosttest.Start(t, greeterPolicy(dir, "Mallory0"))
	reg := h.Tools()
	const rounds, perRound = 20, 50
	for round := range rounds {
		var wg sync.WaitGroup
		for i := range perRound {
			wg.Go(func() {
				name := "Ada"
				if i%10 == 0 {
					name = "Mallory" + strconv.Itoa(round)
				}
				reg.Execute(t.Context(), tools.Caller{Kind: tools.CallerGateway, ID: "gw"}, "greet", []byte(`{"name":"`+name+`"}`))
			})
		}
		h.Apply(greeterPolicy(dir, "Mallory"+strconv.Itoa(round+1)))
		wg.Wait()
	}
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	written := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer: %v\n%s", err, outs[i])
		}
		var n int
		out := outs[i].String()
		if _, err := fmt.Sscanf(out[max(0, strings.Index(out, "wrote ")):], "wrote %d", &n); err != nil {
			t.Fatalf("writer's output %q", outs[i])
		}
		written += n
	}
	recs := policytest.ReadTrail(t, dir)
	calls := 0
	for _, r := range recs {
		if r.Tool == "greet" {
			calls++
		}
	}
	if calls != rounds*perRound || len(recs) != calls+written {
		t.Fatalf("%d lines of calls, %d in all; want %d and %d", calls, len(recs), rounds*perRound, rounds*perRound+written)
	}
	check, err := audit.Verify(dir)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if check.Lines != len(recs) || check.Files < 3 {
		t.Errorf("verified %+v, want %d lines in several files", check, len(recs))
	}
	t.Logf("%d lines (%d of the other processes) in %d files", check.Lines, written, check.Files)
}

// TestAuditResultSizeThroughGateway: an MCP tool's result has its size
// in the trail whoever calls, a gateway (which relays the server's result
// and gets no model-facing content) as the console; a gateway call under
// the static token is marked.
func TestAuditResultSizeThroughGateway(t *testing.T) {
	dir := t.TempDir()
	h := hosttest.Start(t, fmt.Sprintf(`plugins:
  - id: fx
    name: mcp-client
    config: {serverName: fx, transport: stdio, command: %q}
  - id: policy
    name: policy
    config:
      audit: {dir: %q}
`, mcptest.FixtureBinary(t), dir))
	reg := h.Tools()
	args := []byte(`{"text":"hello"}`)
	for _, c := range []tools.Caller{
		{Kind: tools.CallerConsole},
		{Kind: tools.CallerGateway, ID: "gw", ImageInput: true, PassThrough: true, Auth: tools.AuthStaticToken},
	} {
		if res := reg.Execute(t.Context(), c, "mcp__fx__shout", args); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	recs := policytest.ReadTrail(t, dir)
	if len(recs) != 2 {
		t.Fatalf("trail %+v, want two lines", recs)
	}
	for _, r := range recs {
		if r.ResultSize != len("HELLO") {
			t.Errorf("%s's line: resultSize %d, want %d", r.Caller.Kind, r.ResultSize, len("HELLO"))
		}
	}
	if recs[0].Caller.Auth != "" || recs[1].Caller.Auth != "static-token" {
		t.Errorf("caller auth %q and %q, want none for the console and static-token for the gateway", recs[0].Caller.Auth, recs[1].Caller.Auth)
	}
}
