package policy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
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
	"github.com/dsh-host/dsh-host/services/policy"
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
	current, _ := filepath.EvalSymlinks(filepath.Join(dir, policy.AuditFile))
	mcptest.WaitFor(t, 10*time.Second, "the replaced policy instance closing its trail", func() bool { return openFDs(t, current) == 1 })
	close(release)
	if res := <-done; res.Err != nil {
		t.Fatal(res.Err)
	}
	h.Call("greet", `{"name":"Ada"}`)
	recs := readTrail(t, dir)
	if len(recs) != 2 || recs[0].Tool != "hold" || recs[0].Outcome != "ok" || recs[1].Tool != "greet" {
		t.Fatalf("trail %+v, want the held call's line, then greet's", recs)
	}
	if _, err := policy.VerifyAudit(dir); err != nil {
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
	log, err := policy.OpenAudit(filepath.Dir(stop), 8192, 100000)
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
		if err := log.Write(&policy.Record{Time: time.Now(), Tool: "writer" + strconv.Itoa(os.Getpid()), ArgsSize: n, Outcome: "ok"}); err != nil {
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
	recs := readTrail(t, dir)
	calls := 0
	for _, r := range recs {
		if r.Tool == "greet" {
			calls++
		}
	}
	if calls != rounds*perRound || len(recs) != calls+written {
		t.Fatalf("%d lines of calls, %d in all; want %d and %d", calls, len(recs), rounds*perRound, rounds*perRound+written)
	}
	check, err := policy.VerifyAudit(dir)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if check.Lines != len(recs) || check.Files < 3 {
		t.Errorf("verified %+v, want %d lines in several files", check, len(recs))
	}
	t.Logf("%d lines (%d of the other processes) in %d files", check.Lines, written, check.Files)
}

// tamperTrail writes a trail of n lines in dir, rotated every few lines,
// and returns its files, oldest first.
func tamperTrail(t *testing.T, dir string, n int) []string {
	t.Helper()
	log, err := policy.OpenAudit(dir, 1500, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := log.Write(&policy.Record{Time: time.Unix(int64(i), 0).UTC(), Tool: "tool" + strconv.Itoa(i), Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	log.Close()
	files, err := policy.AuditFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("%d files, want at least 5", len(files))
	}
	if _, err := policy.VerifyAudit(dir); err != nil {
		t.Fatalf("the untouched trail: %v", err)
	}
	return files
}

func fileLines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(b, []byte("\n"))[:bytes.Count(b, []byte("\n"))]
}

func writeLines(t *testing.T, path string, lines [][]byte) {
	t.Helper()
	if err := os.WriteFile(path, bytes.Join(lines, nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestAuditVerifyCatchesTampering: a flipped byte, cut lines, a line
// removed, a dropped file (rotated, the oldest, the current one) or a
// dropped state file each fail verify, naming the first line, or the
// file, that does not follow.
func TestAuditVerifyCatchesTampering(t *testing.T) {
	base := func(p string) string { return filepath.Base(p) }
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, dir string, files []string) (file string, line int)
	}{
		{"flip a byte in a rotated file", func(t *testing.T, dir string, files []string) (string, int) {
			lines := fileLines(t, files[1])
			lines[1] = bytes.Replace(lines[1], []byte(`"tool":"tool`), []byte(`"tool":"Tool`), 1)
			writeLines(t, files[1], lines)
			return base(files[1]), 3
		}},
		{"flip a byte of the last line", func(t *testing.T, dir string, files []string) (string, int) {
			last := files[len(files)-1]
			lines := fileLines(t, last)
			lines[len(lines)-1] = bytes.Replace(lines[len(lines)-1], []byte(`"outcome":"ok"`), []byte(`"outcome":"OK"`), 1)
			writeLines(t, last, lines)
			return base(last), len(lines)
		}},
		{"flip a byte of a prev hash", func(t *testing.T, dir string, files []string) (string, int) {
			lines := fileLines(t, files[2])
			i := bytes.Index(lines[0], []byte(`"prev":"`)) + len(`"prev":"`)
			lines[0][i] ^= 1
			writeLines(t, files[2], lines)
			return base(files[2]), 1
		}},
		{"cut the last lines", func(t *testing.T, dir string, files []string) (string, int) {
			last := files[len(files)-1]
			lines := fileLines(t, last)
			writeLines(t, last, lines[:len(lines)-2])
			return base(last), len(lines) - 2
		}},
		{"cut the last lines, then write on", func(t *testing.T, dir string, files []string) (string, int) {
			last := files[len(files)-1]
			lines := fileLines(t, last)
			writeLines(t, last, lines[:len(lines)-2])
			log, err := policy.OpenAudit(dir, 1<<20, 1000)
			if err != nil {
				t.Fatal(err)
			}
			defer log.Close()
			if err := log.Write(&policy.Record{Tool: "after", Outcome: "ok"}); err != nil {
				t.Fatal(err)
			}
			return base(last), len(lines) - 1
		}},
		{"remove a line", func(t *testing.T, dir string, files []string) (string, int) {
			lines := fileLines(t, files[1])
			writeLines(t, files[1], append(lines[:2:2], lines[3:]...))
			return base(files[1]), 3
		}},
		{"delete a rotated file", func(t *testing.T, dir string, files []string) (string, int) {
			os.Remove(files[2])
			return base(files[3]), 1
		}},
		{"delete the oldest file", func(t *testing.T, dir string, files []string) (string, int) {
			os.Remove(files[0])
			return base(files[0]), 0
		}},
		{"delete the current file", func(t *testing.T, dir string, files []string) (string, int) {
			os.Remove(files[len(files)-1])
			prev := files[len(files)-2]
			return base(prev), len(fileLines(t, prev))
		}},
		{"append a line that carries the last one's hash", func(t *testing.T, dir string, files []string) (string, int) {
			last := files[len(files)-1]
			lines := fileLines(t, last)
			sum := sha256.Sum256(bytes.TrimRight(lines[len(lines)-1], "\n"))
			forged := []byte(`{"tool":"forged","outcome":"ok","prev":"` + hex.EncodeToString(sum[:]) + `"}` + "\n")
			writeLines(t, last, append(lines, forged))
			return base(last), len(lines) + 1
		}},
		{"spoil the state file's latest slot", func(t *testing.T, dir string, files []string) (string, int) {
			// The other slot holds the state of one line before: the
			// last line no longer has the state's word for it.
			state := filepath.Join(dir, policy.AuditState)
			b, err := os.ReadFile(state)
			if err != nil {
				t.Fatal(err)
			}
			// The slots are 512 bytes each; the latest has the higher seq.
			seq := func(slot []byte) int {
				var n int
				fmt.Sscanf(string(slot[bytes.Index(slot, []byte(`"seq":`))+len(`"seq":`):]), "%d", &n)
				return n
			}
			latest := 0
			if seq(b[512:]) > seq(b[:512]) {
				latest = 512
			}
			b[latest+bytes.Index(b[latest:], []byte(`"hash":"`))+len(`"hash":"`)] ^= 1
			os.WriteFile(state, b, 0o600)
			last := files[len(files)-1]
			return base(last), len(fileLines(t, last))
		}},
		{"overwrite the state file", func(t *testing.T, dir string, files []string) (string, int) {
			os.WriteFile(filepath.Join(dir, policy.AuditState), []byte(`{"version":1,"hash":""}`), 0o600)
			return policy.AuditState, 0
		}},
		{"delete the state file", func(t *testing.T, dir string, files []string) (string, int) {
			os.Remove(filepath.Join(dir, policy.AuditState))
			return policy.AuditState, 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := tamperTrail(t, dir, 60)
			if got := fileLines(t, files[len(files)-1]); len(got) < 3 {
				t.Fatalf("the current file has %d lines, want at least 3", len(got))
			}
			wantFile, wantLine := tc.tamper(t, dir, files)
			_, err := policy.VerifyAudit(dir)
			var brk *policy.AuditBreak
			if !errors.As(err, &brk) {
				t.Fatalf("verify: %v, want a break at %s:%d", err, wantFile, wantLine)
			}
			if brk.File != wantFile || brk.Line != wantLine {
				t.Errorf("verify: %v, want it at %s:%d", err, wantFile, wantLine)
			}
		})
	}
}

// TestAuditVerifyAfterKeep: rotated files that keep removes are not a
// gap: the chain starts at the oldest file left.
func TestAuditVerifyAfterKeep(t *testing.T) {
	dir := t.TempDir()
	log, err := policy.OpenAudit(dir, 1500, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if err := log.Write(&policy.Record{Tool: "tool" + strconv.Itoa(i), Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	log.Close()
	files, _ := policy.AuditFiles(dir)
	check, err := policy.VerifyAudit(dir)
	if err != nil || len(files) != 3 || check.Files != 3 {
		t.Fatalf("verify: %+v, %v over %d files; want 3 files that verify", check, err, len(files))
	}
}

// TestAuditChainsOnFromOldTrail: lines written before the chain (no
// prev) start the trail; the chain goes on from them and verifies,
// counting them apart.
func TestAuditChainsOnFromOldTrail(t *testing.T) {
	dir := t.TempDir()
	old := `{"time":"2026-01-01T00:00:00Z","caller":{"kind":"chat"},"tool":"a","argsSha256":"","argsSize":0,"outcome":"ok","durationMs":0,"resultSize":0}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, policy.AuditFile), []byte(old+old), 0o600); err != nil {
		t.Fatal(err)
	}
	log, err := policy.OpenAudit(dir, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := log.Write(&policy.Record{Tool: "b", Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	log.Close()
	check, err := policy.VerifyAudit(dir)
	if err != nil || check.Lines != 5 || check.Unchained != 2 {
		t.Fatalf("verify: %+v, %v; want 5 lines, 2 of them before the chain", check, err)
	}
	// A line without prev after the chain began is not one of them.
	f, _ := os.OpenFile(filepath.Join(dir, policy.AuditFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(old)
	f.Close()
	var brk *policy.AuditBreak
	if _, err := policy.VerifyAudit(dir); !errors.As(err, &brk) || brk.Line != 6 {
		t.Fatalf("verify with a line put in: %v, want a break at line 6", err)
	}
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
	recs := readTrail(t, dir)
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

// TestAuditVerifyWhileWriting: a check while lines are appended and files
// rotated sees the trail as it was at one moment, and finds it whole.
func TestAuditVerifyWhileWriting(t *testing.T) {
	dir := t.TempDir()
	log, err := policy.OpenAudit(dir, 4000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	done := make(chan error, 1)
	go func() {
		for i := range 1000 {
			if err := log.Write(&policy.Record{Tool: "tool" + strconv.Itoa(i), Outcome: "ok"}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for checks := 0; ; checks++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if check, err := policy.VerifyAudit(dir); err != nil || check.Lines != 1000 {
				t.Fatalf("after the writes: %+v, %v", check, err)
			}
			t.Logf("%d checks while writing", checks)
			return
		default:
		}
		if _, err := policy.VerifyAudit(dir); err != nil {
			t.Fatalf("check %d while writing: %v", checks, err)
		}
	}
}
