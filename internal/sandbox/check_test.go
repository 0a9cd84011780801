package sandbox

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// needLandlock skips where the kernel has no Landlock, and fails under
// CI=true, where the sandbox must be tested.
func needLandlock(t *testing.T) {
	t.Helper()
	if abi, why := Support(); abi == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Landlock is required under CI=true: %s", why)
		}
		t.Skip(why)
	}
}

// TestCheckProvesTheRules: the probes, run in the sandbox a server would
// get, are refused reading and writing outside the grants and connecting
// to a port not granted; with mode off the same probes succeed, so the
// refusals are the sandbox's, not the probes' failures. connect: any lets
// the connect probe through, as the rules say.
func TestCheckProvesTheRules(t *testing.T) {
	needLandlock(t)
	server := func() *exec.Cmd {
		cmd := exec.Command("/bin/true")
		cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}
		cmd.Dir = t.TempDir()
		return cmd
	}
	got := func(cfg Config) map[string]ProbeResult {
		rep, err := Check(context.Background(), server(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]ProbeResult{}
		for _, r := range rep.Results {
			out[r.Name] = r
		}
		return out
	}
	for name, r := range got(Config{Mode: ModeStrict}) {
		if r.Got != "refused" || r.Want != "refused" || !r.OK() {
			t.Errorf("strict: %s = %+v, want refused", name, r)
		}
	}
	for name, r := range got(Config{Mode: ModeOff}) {
		if r.Got != "allowed" || !r.OK() {
			t.Errorf("off: %s = %+v, want allowed", name, r)
		}
	}
	any := got(Config{Mode: ModeStrict, Connect: Ports{Any: true}})
	if r := any["connect-tcp"]; r.Got != "allowed" {
		t.Errorf("connect: any: %+v, want allowed", r)
	}
	if r := any["read"]; r.Got != "refused" {
		t.Errorf("connect: any: read %+v, want refused", r)
	}
}

// TestCheckReportsWhatIsNotEnforced: the report says what is enforced
// beyond Landlock (UDP and unix sockets blocked by seccomp) and names what
// is not (a process limit under root).
func TestCheckReportsWhatIsNotEnforced(t *testing.T) {
	needLandlock(t)
	cmd := exec.Command("/bin/true")
	cmd.Env = []string{"HOME=" + t.TempDir()}
	cmd.Dir = t.TempDir()
	rep, err := Check(context.Background(), cmd, Config{Mode: ModeAuto, Limits: Limits{Processes: 64}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(rep.NotEnforced, "\n")
	if ok, _ := seccompSupport(); ok && (strings.Contains(all, "udp") || !strings.Contains(rep.Launch.Report, "udp: blocked (seccomp), unix sockets: blocked (seccomp)")) {
		t.Errorf("not enforced = %q, report = %q; want udp and unix sockets blocked by seccomp", all, rep.Launch.Report)
	}
	if os.Geteuid() == 0 && !strings.Contains(all, "sandbox.limits.processes is not enforced") {
		t.Errorf("not enforced = %q, want the process limit named under root", all)
	}
	if len(rep.Launch.Rules.Read) == 0 || !rep.Launch.Sandboxed {
		t.Errorf("launch = %+v, want sandboxed rules", rep.Launch)
	}
}

// TestSkippedProbeFails: a probe that could not run proved nothing, so
// the check fails rather than passing the rule it did not test.
func TestSkippedProbeFails(t *testing.T) {
	rep := &Report{Results: []ProbeResult{
		{Name: "read", Want: "refused", Got: "refused"},
		{Name: "udp", Want: "refused", Got: "skipped", Detail: "no loopback"},
	}}
	if rep.Results[1].OK() || !rep.Failed() {
		t.Error("a skipped probe passed the check")
	}
}
