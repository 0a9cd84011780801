package replicas

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dsh-host/dsh-host/internal/mcptest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// options builds dsh-host and finds haproxy (skipping the test when it is
// missing, failing it under CI=true) for a cluster of n replicas.
func options(t *testing.T, n int) Options {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the replicas scenario runs on Linux (Debian's haproxy)")
	}
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		msg := "haproxy is not installed (apt-get install -y haproxy; scripts/test installs it)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: this test must run)")
		}
		t.Skip(msg)
	}
	root := mcptest.ModuleRoot(t)
	bin := filepath.Join(t.TempDir(), "dsh-host")
	build := exec.Command("go", "build", "-o", bin, "./cmd/dsh-host")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/dsh-host: %v\n%s", err, out)
	}
	return Options{
		DshHost:  bin,
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
// HAProxy with scripts/replicas.d/haproxy.cfg, under load; one gets
// SIGTERM halfway, drains and exits, and not one call or connect fails:
// its calls in flight finish, and HAProxy sends what it refuses (503) or
// no longer accepts (connection refused) to the others.
func TestStatelessReplicaSIGTERMLosesNoCall(t *testing.T) {
	o := options(t, 3)
	defer logs(t, o.Dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := Scenario{Options: o, Workers: 8, Duration: 4 * time.Second, Terminate: true}.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d calls (%.0f/s), %d lost; %s served %d before its SIGTERM; HAProxy: %d retries, %d redispatched, %d 5xx to clients; served %v",
		out.Load.Calls, out.Load.PerSecond(), out.Load.Lost(), out.Terminated, out.ServedBefore, out.Retries, out.Redispatches, out.Sent5xx, out.Served)
	if out.Load.Lost() != 0 {
		t.Errorf("%d calls and %d connects failed, want 0; first errors: %q", out.Load.Failed, out.Load.ConnectFailed, out.Load.Errors)
	}
	if out.ServedBefore == 0 {
		t.Errorf("%s had served nothing when it got SIGTERM: the load did not reach it", out.Terminated)
	}
	if out.TerminatedErr != nil {
		t.Errorf("%s after SIGTERM: %v, want exit 0 (drained)", out.Terminated, out.TerminatedErr)
	}
	if out.Load.Calls == 0 || out.Sent5xx != 0 {
		t.Errorf("%d good calls and %d 5xx answers to clients, want calls and no 5xx", out.Load.Calls, out.Sent5xx)
	}
}
