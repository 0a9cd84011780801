package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/policy/audit"
)

func writeTrail(t *testing.T, dir string, recs ...audit.Record) {
	t.Helper()
	log, err := audit.Open(dir, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	for i := range recs {
		if err := log.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAuditCommandFilters(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UTC()
	writeTrail(t, dir,
		audit.Record{Time: now.Add(-2 * time.Hour), Caller: audit.Caller{Kind: "console"}, Tool: "mcp__gh__old", Decision: "allow", Rule: "default", Outcome: "ok"},
		audit.Record{Time: now, Caller: audit.Caller{Kind: "gateway", ID: "gw"}, Tool: "mcp__gh__create_issue", Decision: "deny", Rule: "rule 2 (composition.yml:14)", Outcome: "refused"},
		audit.Record{Time: now, Caller: audit.Caller{Kind: "chat"}, Tool: "greet", Decision: "allow", Rule: "default", Outcome: "ok", ResultSize: 9},
	)
	run := func(args ...string) string {
		t.Helper()
		var out, errb strings.Builder
		if code := dispatch(t.Context(), append([]string{"audit", "--dir", dir}, args...), Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}); code != exitOK {
			t.Fatalf("audit %q: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	if got := run("--tool", "mcp__gh__*", "--since", "1h", "--json"); strings.Count(got, "\n") != 1 || !strings.Contains(got, `"tool":"mcp__gh__create_issue"`) {
		t.Errorf("--tool mcp__gh__* --since 1h --json:\n%s\nwant the create_issue line alone", got)
	}
	got := run()
	if strings.Count(got, "\n") != 3 || !strings.Contains(got, "gateway/gw  mcp__gh__create_issue  deny by rule 2 (composition.yml:14)  refused") {
		t.Errorf("audit:\n%s\nwant three lines, the denial with its rule", got)
	}
}

func TestAuditCommandFollows(t *testing.T) {
	dir := t.TempDir()
	writeTrail(t, dir, audit.Record{Time: time.Now(), Caller: audit.Caller{Kind: "chat"}, Tool: "first", Outcome: "ok"})
	ctx, cancel := context.WithCancel(context.Background())
	out := &mcptest.SyncBuffer{}
	done := make(chan int)
	go func() {
		done <- dispatch(ctx, []string{"audit", "--dir", dir, "--follow", "--json"}, Stdio{In: strings.NewReader(""), Out: out, Err: out})
	}()
	mcptest.WaitFor(t, 10*time.Second, "the first line", func() bool { return strings.Contains(out.String(), `"first"`) })
	// A rotation between the two lines: the follower goes on in the new file.
	log, err := audit.Open(dir, 300, 0) // the second line fills the file
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"second", "third"} {
		if err := log.Write(&audit.Record{Time: time.Now(), Tool: tool, Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	log.Close()
	mcptest.WaitFor(t, 10*time.Second, "the appended lines", func() bool {
		return strings.Contains(out.String(), `"second"`) && strings.Contains(out.String(), `"third"`)
	})
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("exit %d: %s", code, out.String())
	}
}

// TestAuditCommandReadsTheCompositionsDir: -c reads the trail where the
// composition's policy writes it.
func TestAuditCommandReadsTheCompositionsDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "trail")
	writeTrail(t, dir, audit.Record{Time: time.Now(), Caller: audit.Caller{Kind: "chat"}, Tool: "greet", Outcome: "ok"})
	file := writeComposition(t, fmt.Sprintf("plugins:\n  - id: policy\n    name: policy\n    config:\n      audit: {dir: %q}\n", dir))
	var out, errb strings.Builder
	if code := dispatch(t.Context(), []string{"audit", "-c", file, "--json"}, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}); code != exitOK || !strings.Contains(out.String(), `"tool":"greet"`) {
		t.Errorf("audit -c: exit %d, %q %q; want the greet line of %s", code, out.String(), errb.String(), dir)
	}
}

// TestAuditCommandVerifies: --verify says a trail holds, and of one with
// its last line cut, fails naming where it ends; static-token calls are
// marked in the listing.
func TestAuditCommandVerifies(t *testing.T) {
	dir := t.TempDir()
	writeTrail(t, dir,
		audit.Record{Time: time.Now(), Caller: audit.Caller{Kind: "gateway", ID: "gw", Auth: "static-token"}, Tool: "a", Outcome: "ok"},
		audit.Record{Time: time.Now(), Caller: audit.Caller{Kind: "chat"}, Tool: "b", Outcome: "ok"},
		audit.Record{Time: time.Now(), Caller: audit.Caller{Kind: "chat"}, Tool: "c", Outcome: "ok"},
	)
	run := func(args ...string) (int, string, string) {
		var out, errb strings.Builder
		code := dispatch(t.Context(), append([]string{"audit", "--dir", dir}, args...), Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
		return code, out.String(), errb.String()
	}
	if code, out, errs := run("--verify"); code != exitOK || !strings.Contains(out, "the trail verifies: 3 lines in 1 files") {
		t.Fatalf("--verify: exit %d, %q %q; want 3 lines that verify", code, out, errs)
	}
	if _, out, _ := run(); !strings.Contains(out, "gateway/gw[static token]  a") {
		t.Errorf("audit:\n%s\nwant the static token's call marked", out)
	}
	trail := filepath.Join(dir, audit.File)
	b, err := os.ReadFile(trail)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if err := os.WriteFile(trail, []byte(strings.Join(lines[:2], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run("--verify"); code != exitFail || !strings.Contains(errs, "audit.jsonl:2: the trail ends here, but its state file records another latest line") {
		t.Errorf("--verify of a cut trail: exit %d, %q %q; want a failure at audit.jsonl:2", code, out, errs)
	}
}
