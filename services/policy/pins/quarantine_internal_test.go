package pins

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestHeldUntilReviewed: a server whose pins were written held until
// reviewed (as `dsh-host add` writes them, over the pins of a server that
// had its name before) has no tool trusted on first use; its review says
// why; approving one tool releases that one only, and approving the rest
// clears the hold, after which a new tool is held as new (not as unreviewed).
func TestHeldUntilReviewed(t *testing.T) {
	dir := t.TempDir()
	reg := tools.New(nil)
	s := host.NewScope(context.Background(), "s", nil)
	defer s.Dispose(0)
	// A server once called "s" had its tools trusted.
	old := New(dir, reg, func() *slog.Logger { return slog.New(slog.DiscardHandler) })
	a := registerListed(t, reg, s, "a", `{"name":"a","description":"A."}`, 7)
	if old.Check(a) != nil {
		t.Fatal("first list held")
	}
	const why = "added by dsh-host add from io.github.x/s@1.0.0"
	if err := HoldUntilReviewed(dir, "s", why); err != nil {
		t.Fatal(err)
	}
	if got, err := HeldUntilReviewed(dir, "s"); got != why || err != nil {
		t.Fatalf("HeldUntilReviewed = %q, %v", got, err)
	}
	p := New(dir, reg, func() *slog.Logger { return slog.New(slog.DiscardHandler) })
	b := registerListed(t, reg, s, "b", `{"name":"b","description":"B."}`, 7)
	for _, d := range []*tools.Definition{a, b} {
		h := p.Check(d)
		if h == nil || h.Review != why || !strings.Contains(h.Error(), "held until its tools are reviewed ("+why+")") {
			t.Fatalf("%s: %v, want held until reviewed", d.Name, h)
		}
	}
	r, err := p.Review("s", "")
	if err != nil || r.Held != why || !strings.Contains(r.Text(), "held until reviewed: "+why) || !r.Pending() {
		t.Fatalf("review = %+v, %v", r, err)
	}
	ra, _ := p.Review("s", "a")
	if _, err := p.TrustDigest("s", "a", ra.Digest); err != nil {
		t.Fatal(err)
	}
	if p.Check(a) != nil || p.Check(b) == nil {
		t.Fatal("approving a did not release a alone")
	}
	if got, _ := HeldUntilReviewed(dir, "s"); got != why {
		t.Errorf("the hold was cleared with a tool still unreviewed: %q", got)
	}
	r, _ = p.Review("s", "")
	if _, err := p.TrustDigest("s", "", r.Digest); err != nil {
		t.Fatal(err)
	}
	if p.Check(b) != nil {
		t.Error("b held after approval")
	}
	if got, _ := HeldUntilReviewed(dir, "s"); got != "" {
		t.Errorf("hold = %q after every tool was approved", got)
	}
	c := registerListed(t, reg, s, "c", `{"name":"c"}`, 8)
	if h := p.Check(c); h == nil || !h.New || h.Review != "" {
		t.Errorf("a later tool: %+v, want held as new", h)
	}
}

// TestHoldUntilReviewedRefusesPaths: the serverName names a file: a path
// is refused, and Forget deletes only the server's own file.
func TestHoldUntilReviewedRefusesPaths(t *testing.T) {
	dir := t.TempDir()
	for _, bad := range []string{"", "../x", "a/b", ".", "x.json", strings.Repeat("a", 65)} {
		if err := HoldUntilReviewed(dir, bad, "why"); err == nil {
			t.Errorf("HoldUntilReviewed(%q): no error", bad)
		}
		if err := Forget(dir, bad); err == nil {
			t.Errorf("Forget(%q): no error", bad)
		}
	}
	if err := HoldUntilReviewed(dir, "s", "why"); err != nil {
		t.Fatal(err)
	}
	if err := Forget(dir, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "s.json")); !os.IsNotExist(err) {
		t.Errorf("s.json after Forget: %v", err)
	}
	if err := Forget(filepath.Join(dir, "none"), "s"); err != nil {
		t.Errorf("Forget without a directory: %v", err)
	}
}
