package replicas

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// dshHost is the dsh-host binary, built once for the tests that need it.
var dshHost struct {
	once      sync.Once
	dir, path string
	err       error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if dshHost.dir != "" {
		os.RemoveAll(dshHost.dir)
	}
	if code == 0 {
		if err := leaks.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// options builds dsh-host and finds haproxy (skipping the test when it is
// missing, failing it under CI=true) for a cluster of n replicas.
func options(t *testing.T, n int) Options {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the replicas scenario runs on Linux (Debian's haproxy)")
	}
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		// Debian installs it in /usr/sbin, which a user's PATH may lack.
		haproxy, err = exec.LookPath("/usr/sbin/haproxy")
	}
	if err != nil {
		msg := "haproxy is not installed (apt-get install -y haproxy; scripts/test installs it)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: this test must run)")
		}
		t.Skip(msg)
	}
	root := mcptest.ModuleRoot(t)
	dshHost.once.Do(func() {
		dir, err := os.MkdirTemp("", "dsh-replicas-test")
		if err != nil {
			dshHost.err = err
			return
		}
		dshHost.dir = dir
		dshHost.path = filepath.Join(dir, "dsh-host")
		build := exec.Command("go", "build", "-o", dshHost.path, "./cmd/dsh-host")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			dshHost.err = fmt.Errorf("go build ./cmd/dsh-host: %v\n%s", err, out)
		}
	})
	if dshHost.err != nil {
		t.Fatal(dshHost.err)
	}
	return Options{
		DshHost:  dshHost.path,
		Fixture:  mcptest.FixtureBinary(t),
		HAProxy:  haproxy,
		Template: filepath.Join(root, "scripts", "replicas.d", "haproxy.cfg"),
		Dir:      t.TempDir(),
		Replicas: n,
	}
}

// logs prints every process's log when the test failed.
func logs(t *testing.T, dir string) {
	t.Helper()
	if !t.Failed() {
		return
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*", "serve.log"))
	files = append(files, filepath.Join(dir, "haproxy.log"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		t.Logf("%s:\n%s", f, data)
	}
}

// TestStatelessReplicaSIGTERMLosesNoCall: three stateless replicas behind
// HAProxy with scripts/replicas.d/haproxy.cfg, under load (calls of 100 ms,
// so that some are in flight on every replica at any moment); one gets
// SIGTERM halfway, drains and exits, and not one call or connect fails:
// its calls in flight finish, and HAProxy sends what it refuses (503) or
// no longer accepts (connection refused) to the others.
func TestStatelessReplicaSIGTERMLosesNoCall(t *testing.T) {
	o := options(t, 3)
	defer logs(t, o.Dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := Scenario{Options: o, Workers: 12, Duration: 4 * time.Second, Terminate: true, SlowMS: 100}.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d calls (%.0f/s), %d lost; %s served %d before its SIGTERM, %d in flight at its drain; HAProxy: %d retries, %d redispatched, %d 5xx to clients; served %v",
		out.Load.Calls, out.Load.PerSecond(), out.Load.Lost(), out.Terminated, out.ServedBefore, out.InFlightAtDrain, out.Retries, out.Redispatches, out.Sent5xx, out.Served)
	if out.Load.Lost() != 0 {
		t.Errorf("%d calls and %d connects failed, want 0; first errors: %q", out.Load.Failed, out.Load.ConnectFailed, out.Load.Errors)
	}
	if out.ServedBefore == 0 || out.InFlightAtDrain < 1 {
		t.Errorf("%s had served %d requests and had %d calls in flight when it got SIGTERM; want the load on it", out.Terminated, out.ServedBefore, out.InFlightAtDrain)
	}
	if out.TerminatedErr != nil {
		t.Errorf("%s after SIGTERM: %v, want exit 0 (drained)", out.Terminated, out.TerminatedErr)
	}
	if out.Load.Calls == 0 || out.Sent5xx != 0 {
		t.Errorf("%d good calls and %d 5xx answers to clients, want calls and no 5xx", out.Load.Calls, out.Sent5xx)
	}
}

// TestStatefulReplicasStickAndLoseOnlyTheTerminatedSessions: with sessions,
// HAProxy sends every request of a session to the replica that opened it
// (stick on Mcp-Session-Id), so no call fails until one of three replicas
// gets SIGTERM; then each session it held fails one call, with "session
// not found" from the replica HAProxy redispatched it to, and its client's
// new session works. Without stickiness, nearly every session's requests
// would land on a replica that does not know it.
func TestStatefulReplicasStickAndLoseOnlyTheTerminatedSessions(t *testing.T) {
	o := options(t, 3)
	o.Stateful = true
	defer logs(t, o.Dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const workers = 8
	out, err := Scenario{Options: o, Workers: workers, Duration: 4 * time.Second, Terminate: true}.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d calls (%.0f/s), %d lost, %d sessions reopened; %s served %d before its SIGTERM; HAProxy: %d retries, %d redispatched, %d 5xx to clients; served %v",
		out.Load.Calls, out.Load.PerSecond(), out.Load.Lost(), out.Reopened(), out.Terminated, out.ServedBefore, out.Retries, out.Redispatches, out.Sent5xx, out.Served)
	if out.Load.ConnectFailed != 0 || out.Load.Failed > workers || out.Load.Calls == 0 {
		t.Errorf("%d good calls, %d failed, %d connects failed; want calls, at most one failure per session (%d) and no failed connect; first errors: %q",
			out.Load.Calls, out.Load.Failed, out.Load.ConnectFailed, workers, out.Load.Errors)
	}
	for _, e := range out.Load.Errors {
		if !strings.Contains(e, "session not found") {
			t.Errorf("a call failed with %q, want only the terminated replica's sessions missing", e)
		}
	}
	if out.ServedBefore == 0 || out.TerminatedErr != nil {
		t.Errorf("%s served %d before SIGTERM and ended with %v; want requests and exit 0", out.Terminated, out.ServedBefore, out.TerminatedErr)
	}
}

// TestDrainPastTimeoutLosesNoStatelessCall: a stateless replica SIGTERMed
// with calls in flight longer than its drainTimeout cuts them with 503
// (their answers had not begun), which HAProxy's retry-on 503 sends to
// the other replica: no call is lost. They used to get an empty 200
// text/event-stream, which HAProxy passed on as it was.
func TestDrainPastTimeoutLosesNoStatelessCall(t *testing.T) {
	o := options(t, 2)
	o.DrainTimeout = time.Second
	defer logs(t, o.Dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := Scenario{Options: o, Workers: 8, Duration: 8 * time.Second, Terminate: true, SlowMS: 3000}.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d calls, %d lost; %s had %d in flight at its drain; HAProxy: %d retries, %d redispatched, %d 5xx to clients",
		out.Load.Calls, out.Load.Lost(), out.Terminated, out.InFlightAtDrain, out.Retries, out.Redispatches, out.Sent5xx)
	if out.InFlightAtDrain < 1 {
		t.Fatalf("%s had no call in flight at its drain; the scenario tests nothing", out.Terminated)
	}
	if out.Load.Lost() != 0 || out.Sent5xx != 0 {
		t.Errorf("%d calls and %d connects failed, %d 5xx reached clients; want none: %q", out.Load.Failed, out.Load.ConnectFailed, out.Sent5xx, out.Load.Errors)
	}
	if out.Redispatches < int64(out.InFlightAtDrain) {
		t.Errorf("HAProxy redispatched %d requests, want at least the %d cut", out.Redispatches, out.InFlightAtDrain)
	}
}
