package workspace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
	"github.com/dsh-host/dsh-host/plugins/workspace"
	"github.com/dsh-host/dsh-host/services/elicit"
	_ "github.com/dsh-host/dsh-host/services/policy"
	"github.com/dsh-host/dsh-host/services/tools"
)

func TestMain(m *testing.M) {
	sandbox.Main() // run's commands start through this binary's sandbox hook
	leaks.VerifyTestMain(m)
}

// approver answers chat's approvals with answer ("" declines) and
// records what it was asked.
type approver struct {
	mu       sync.Mutex
	answer   string
	asked    []string
	previews []string
}

func (a *approver) Answer(_ context.Context, req elicit.Request) (elicit.Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if req.Approval != nil {
		a.asked = append(a.asked, req.Approval.Tool)
		a.previews = append(a.previews, req.Approval.Preview)
	}
	if a.answer == "" {
		return elicit.Result{Action: elicit.Decline}, nil
	}
	return elicit.Result{Action: elicit.Accept, Content: map[string]any{elicit.ApprovalField: a.answer}}, nil
}

func (a *approver) take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.asked
	a.asked = nil
	return s
}

type ws struct {
	t   *testing.T
	dir string
	reg *tools.Registry
	ap  *approver
}

// start runs a host with the workspace on a new directory (extra config
// lines appended) and the built-in policy.
func start(t *testing.T, extra string) *ws {
	t.Helper()
	t.Setenv("DSH_HOME", t.TempDir())
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := hosttest.Start(t, fmt.Sprintf("plugins:\n  - id: ws\n    name: workspace\n    config:\n      dir: %q\n%s", dir, extra))
	return &ws{t: t, dir: dir, reg: h.Tools(), ap: &approver{answer: elicit.ApproveOnce}}
}

// call is chat's model calling tool.
func (w *ws) call(tool, args string) tools.Result {
	return w.reg.Run(w.t.Context(), tools.Call{Caller: tools.Caller{Kind: tools.CallerChat}, Name: tool, Args: []byte(args),
		Channels: &tools.Channels{Answerer: w.ap}})
}

func (w *ws) text(tool, args string) (string, error) {
	res := w.call(tool, args)
	return hosttest.Text(res), res.Err
}

func (w *ws) file(name, content string) {
	w.t.Helper()
	p := filepath.Join(w.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

func (w *ws) read(name string) string {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(w.dir, name))
	if err != nil {
		w.t.Fatal(err)
	}
	return string(b)
}

// TestReadsAreNotAsked: list, read and search are marked readOnlyHint,
// so chat calls them without a question; edit, write and run are asked.
func TestReadsAreNotAsked(t *testing.T) {
	w := start(t, "")
	w.file("a.txt", "one\ntwo\nthree\n")
	for _, c := range [][2]string{{"list", `{}`}, {"read", `{"path":"a.txt"}`}, {"search", `{"pattern":"tw"}`}} {
		if _, err := w.text(c[0], c[1]); err != nil {
			t.Fatalf("%s: %v", c[0], err)
		}
	}
	if asked := w.ap.take(); len(asked) > 0 {
		t.Errorf("asked for %v, want no question for list, read, search", asked)
	}
	for _, c := range [][2]string{{"write", `{"path":"b.txt","content":"x"}`}, {"edit", `{"path":"a.txt","old_string":"two","new_string":"2"}`}, {"run", `{"command":"true"}`}} {
		w.call(c[0], c[1])
		if asked := w.ap.take(); len(asked) != 1 || asked[0] != c[0] {
			t.Errorf("%s: asked for %v, want one question", c[0], asked)
		}
	}
}

// TestEdit: an approved edit changes exactly the string and answers the
// diff; a declined one leaves the file's bytes as they were; an edit
// whose string is missing or not unique changes nothing.
func TestEdit(t *testing.T) {
	w := start(t, "")
	orig := "package a\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int {\n\treturn 1\n}\n"
	w.file("a.go", orig)
	out, err := w.text("edit", `{"path":"a.go","old_string":"A() int {\n\treturn 1","new_string":"A() int {\n\treturn 42"}`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := w.read("a.go"), strings.Replace(orig, "return 1", "return 42", 1); got != want {
		t.Errorf("after the edit:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(out, "-\treturn 1\n+\treturn 42\n") {
		t.Errorf("the edit answered %q, want its diff", out)
	}
	// The person asked saw the same diff before the file changed.
	if len(w.ap.previews) != 1 || w.ap.previews[0] != out {
		t.Errorf("the approval's previews: %q, want the edit's diff %q", w.ap.previews, out)
	}
	before := w.read("a.go")
	for _, c := range []struct{ args, want string }{
		{`{"path":"a.go","old_string":"return 42","new_string":"return 7"}`, "not approved"},
	} {
		w.ap.answer = ""
		if _, err := w.text("edit", c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("declined edit: %v, want %q", err, c.want)
		}
	}
	w.ap.answer = elicit.ApproveSession
	for _, c := range []struct{ args, want string }{
		{`{"path":"a.go","old_string":"return 1","new_string":"return 2"}`, "occurs 1 times"},
		{`{"path":"a.go","old_string":"\treturn","new_string":"return"}`, "occurs 2 times"},
		{`{"path":"a.go","old_string":"nowhere","new_string":"x"}`, "does not occur"},
		{`{"path":"a.go","old_string":"","new_string":"x"}`, "empty"},
	} {
		_, err := w.text("edit", c.args)
		if c.want == "occurs 1 times" {
			// Unique now: the one left of two "return 1" lines.
			if err != nil {
				t.Errorf("edit of the unique string: %v", err)
			}
			before = w.read("a.go")
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.args, err, c.want)
		}
		if got := w.read("a.go"); got != before {
			t.Errorf("%s changed the file:\n%s", c.args, got)
		}
	}
	if _, err := w.text("edit", `{"path":"a.go","old_string":"return","new_string":"yield","replace_all":true}`); err != nil {
		t.Fatal(err)
	}
	if got := w.read("a.go"); strings.Contains(got, "return") || strings.Count(got, "yield") != 2 {
		t.Errorf("replace_all:\n%s", got)
	}
	if entries, _ := os.ReadDir(w.dir); len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want a.go alone (no temporary file left)", len(entries))
	}
}

// TestPathsStayInside: .., absolute paths outside and symlinks leading
// out are refused by every tool, reading and writing; nothing outside
// is read or written.
func TestPathsStayInside(t *testing.T) {
	w := start(t, "")
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(w.dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(w.dir, "out")); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(w.dir, secret)
	if err != nil {
		t.Fatal(err)
	}
	w.ap.answer = elicit.ApproveSession
	for _, p := range []string{rel, secret, "link", "out/secret", "../x", "a/../../x"} {
		for _, c := range []struct{ tool, args string }{
			{"read", `{"path":%q}`},
			{"list", `{"path":%q}`},
			{"search", `{"pattern":"SECRET","path":%q}`},
			{"edit", `{"path":%q,"old_string":"SECRET","new_string":"x"}`},
			{"write", `{"path":%q,"content":"x"}`},
		} {
			out, err := w.text(c.tool, fmt.Sprintf(c.args, p))
			if err == nil || strings.Contains(out, "SECRET") {
				t.Errorf("%s %s: %q, %v; want a refusal", c.tool, p, out, err)
			}
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "SECRET\n" {
		t.Errorf("the file outside was changed: %q", b)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("outside holds %d entries, want the secret alone", len(entries))
	}
	// An absolute path inside is fine; search does not follow the links.
	w.file("in.txt", "SECRET? no\n")
	if out, err := w.text("read", fmt.Sprintf(`{"path":%q}`, filepath.Join(w.dir, "in.txt"))); err != nil || !strings.Contains(out, "no") {
		t.Errorf("absolute path inside: %q, %v", out, err)
	}
	if out, err := w.text("search", `{"pattern":"SECRET"}`); err != nil || out != "in.txt:1: SECRET? no\n" {
		t.Errorf("search: %q, %v; want in.txt's line alone", out, err)
	}
}

// TestReadAndSearch: read's offset and limit, search skipping .git and
// binary files, with a glob, and stopping at max_results.
func TestReadAndSearch(t *testing.T) {
	w := start(t, "")
	var b strings.Builder
	for i := 1; i <= 50; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	w.file("long.txt", b.String())
	w.file(".git/config", "line 1\n")
	w.file("bin.dat", "line 1\x00\n")
	w.file("sub/x.go", "line 7\n")
	out, err := w.text("read", `{"path":"long.txt","offset":10,"limit":2}`)
	if err != nil || out != "    10\tline 10\n    11\tline 11\n(39 more lines: read on with offset 12)\n" {
		t.Errorf("read: %q, %v", out, err)
	}
	if out, err := w.text("search", `{"pattern":"^line 7$"}`); err != nil || out != "long.txt:7: line 7\nsub/x.go:1: line 7\n" {
		t.Errorf("search: %q, %v", out, err)
	}
	if out, err := w.text("search", `{"pattern":"line","glob":"*.go"}`); err != nil || out != "sub/x.go:1: line 7\n" {
		t.Errorf("search with a glob: %q, %v", out, err)
	}
	out, err = w.text("search", `{"pattern":"line","max_results":3}`)
	if err != nil || strings.Count(out, "\n") != 4 || !strings.Contains(out, "stopped at 3 matches") {
		t.Errorf("search bounded: %q, %v", out, err)
	}
	if _, err := w.text("search", `{"pattern":"("}`); err == nil {
		t.Error("a bad pattern: no error")
	}
}

// TestRunConfined: a command writes the directory but not outside it
// (the sandbox refuses), its output is cut at maxOutput, and one that
// outlives its timeout is killed with its children.
func TestRunConfined(t *testing.T) {
	if abi, why := sandbox.Support(); abi == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Landlock is required under CI=true: %s", why)
		}
		t.Skip(why)
	}
	w := start(t, "      maxOutput: 1000\n")
	w.ap.answer = elicit.ApproveSession
	outside := t.TempDir()
	out, err := w.text("run", fmt.Sprintf(`{"command":"echo in > inside.txt && echo out > %s/outside.txt"}`, outside))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "exit status ") || strings.HasPrefix(out, "exit status 0") {
		t.Errorf("writing outside: %q, want a failed command", out)
	}
	if w.read("inside.txt") != "in\n" {
		t.Error("the command could not write inside the directory")
	}
	if _, err := os.Stat(filepath.Join(outside, "outside.txt")); err == nil {
		t.Error("the command wrote outside the directory")
	}
	out, err = w.text("run", `{"command":"head -c 100000 /dev/zero | tr '\\0' x"}`)
	if err != nil || !strings.HasPrefix(out, "exit status 0\n"+strings.Repeat("x", 1000)+"\n(output cut: 99000 more bytes)") {
		t.Errorf("output cap: %.80q…, %v", out, err)
	}
	out, err = w.text("run", `{"command":"(sleep 300; echo late > late.txt) & sleep 300","timeout_seconds":1}`)
	if err != nil || !strings.HasPrefix(out, "timed out after 1s") {
		t.Errorf("timeout: %q, %v", out, err)
	}
	if _, err := w.text("run", `{"command":"echo hi","timeout_seconds":0}`); err != nil {
		t.Error(err)
	}
}

// TestWritePreviewOverExisting: a write over a file the preview cannot
// show as text (binary, or past the read bound) is not presented to the
// person asked as "a new file": approving would replace what is there.
func TestWritePreviewOverExisting(t *testing.T) {
	w := start(t, "")
	w.file("blob.bin", "\x00\x01\x02 an existing binary file")
	w.call("write", `{"path":"blob.bin","content":"x"}`)
	if len(w.ap.previews) != 1 {
		t.Fatalf("previews %q, want one", w.ap.previews)
	}
	if p := w.ap.previews[0]; strings.Contains(p, "a new file") || !strings.Contains(p, "replaces") {
		t.Errorf("the preview of a write over an existing binary file: %q, want it to say the file is replaced", p)
	}
	w.ap.previews = nil
	w.call("write", `{"path":"fresh.txt","content":"x"}`)
	if len(w.ap.previews) != 1 || !strings.Contains(w.ap.previews[0], "a new file fresh.txt") {
		t.Errorf("the preview of a new file: %q", w.ap.previews)
	}
}

// TestOpenRefusesUncheckedConfig: a Config made in Go without a sandbox
// mode is refused, not run under the sandbox's auto (unsandboxed where
// the system cannot sandbox).
func TestOpenRefusesUncheckedConfig(t *testing.T) {
	w, err := workspace.Open(workspace.Config{Dir: t.TempDir(), Timeout: time.Minute, MaxOutput: 100})
	if err == nil {
		w.Close()
		t.Fatal("Open of a config without a sandbox mode succeeded, want it refused")
	}
	if !strings.Contains(err.Error(), "sandbox") {
		t.Errorf("error %v, want it to name sandbox", err)
	}
}

// TestWriteOverALeftTemporaryFile: a temporary file left beside the file
// (a host killed mid-write, or one the model made) does not block later
// writes and edits of it, and is not what they write to.
func TestWriteOverALeftTemporaryFile(t *testing.T) {
	w := start(t, "")
	w.file("a.txt", "one\n")
	w.file(".a.txt.dsh-tmp", "left\n")
	if _, err := w.text("write", `{"path":"a.txt","content":"two\n"}`); err != nil {
		t.Fatalf("write beside a left temporary file: %v", err)
	}
	if _, err := w.text("edit", `{"path":"a.txt","old_string":"two","new_string":"three"}`); err != nil {
		t.Fatalf("edit beside a left temporary file: %v", err)
	}
	if got := w.read("a.txt"); got != "three\n" {
		t.Errorf("a.txt = %q, want %q", got, "three\n")
	}
	if got := w.read(".a.txt.dsh-tmp"); got != "left\n" {
		t.Errorf("the left file = %q, want it untouched", got)
	}
}

// TestReadHugeLimit: a limit past any file (the largest int a model can
// send) reads to the end, not nothing through an overflow.
func TestReadHugeLimit(t *testing.T) {
	w := start(t, "")
	w.file("a.txt", "one\ntwo\nthree\n")
	out, err := w.text("read", `{"path":"a.txt","offset":2,"limit":9223372036854775807}`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "2\ttwo\n") || !strings.Contains(out, "3\tthree\n") || strings.Contains(out, "more lines") {
		t.Errorf("read with the largest limit:\n%s", out)
	}
}

// TestRunWithoutLandlockFailsClosed: on a kernel without Landlock
// (simulated), run under the default mode refuses and runs nothing;
// only sandbox: auto runs the command, unsandboxed.
func TestRunWithoutLandlockFailsClosed(t *testing.T) {
	support := sandbox.Support
	sandbox.Support = func() (int, string) { return 0, "no Landlock here (simulated)" }
	t.Cleanup(func() { sandbox.Support = support })

	w := start(t, "")
	w.ap.answer = elicit.ApproveSession
	if out, err := w.text("run", `{"command":"echo ran > ran.txt"}`); err == nil || !strings.Contains(err.Error(), "strict") {
		t.Errorf("run in the default mode without Landlock: %q, %v; want it refused", out, err)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "ran.txt")); err == nil {
		t.Error("the command ran unsandboxed in the default mode")
	}

	w = start(t, "      sandbox: auto\n")
	w.ap.answer = elicit.ApproveSession
	if out, err := w.text("run", `{"command":"echo ran > ran.txt"}`); err != nil || !strings.HasPrefix(out, "exit status 0") {
		t.Errorf("run under auto without Landlock: %q, %v; want it run", out, err)
	}
	if w.read("ran.txt") != "ran\n" {
		t.Error("the command did not run under auto")
	}
}

// TestRunHugeTimeout: a timeout_seconds past what a Duration holds is the
// workspace's timeout, not an overflow into an instant kill.
func TestRunHugeTimeout(t *testing.T) {
	w := start(t, "      sandbox: off\n")
	w.ap.answer = elicit.ApproveSession
	out, err := w.text("run", `{"command":"echo ok","timeout_seconds":9223372037}`)
	if err != nil || !strings.HasPrefix(out, "exit status 0\nok") {
		t.Errorf("run with a huge timeout: %q, %v; want it run", out, err)
	}
}

// TestEditReplaceAllBounded: a replace_all that would grow the file past
// what the tools read (one byte replaced by many, a million times) is
// refused before the text is built, and the file is left as it was.
func TestEditReplaceAllBounded(t *testing.T) {
	w := start(t, "")
	orig := strings.Repeat("a", 1<<20)
	w.file("a.txt", orig)
	_, err := w.text("edit", `{"path":"a.txt","old_string":"a","new_string":"bbbbbbbbbbbbbbbb","replace_all":true}`)
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("the growing replace_all: %v, want it refused as too large", err)
	}
	if got := w.read("a.txt"); got != orig {
		t.Errorf("the refused edit changed the file (%d bytes)", len(got))
	}
}
