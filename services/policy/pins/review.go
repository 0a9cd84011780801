package pins

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-host/dsh-host/services/tools"
)

// `dsh-host trust` shows what it approves and approves only that: Review
// is the diff of each tool from its trusted definition with a digest of
// what was shown, and TrustDigest records the definitions only while they
// still have that digest (compare and set), so a server that changes its
// tools between the diff and the answer has nothing approved.

// ToolReview is one tool of a review.
type ToolReview struct {
	Name   string // the registered name
	Raw    string // the name on the server
	Digest string // of its current definition
	// State is "new" (never trusted), "changed" or "trusted".
	State string
	// Change is the diff from the trusted definition (for a new tool, its
	// whole definition), invisible text flagged; "" when trusted.
	Change string
}

// Review is what approving server's tools (only tool's, when not "")
// would record.
type Review struct {
	Server, Tool string
	Tools        []ToolReview
	// Digest names exactly the definitions reviewed: with a tool, its
	// digest; else one over every tool's name and digest.
	Digest string
	// Held is why the server is held until reviewed, "" when it is not.
	Held string
}

// ErrNotReviewed is returned by TrustDigest when the definitions are not
// the ones the digest names.
var ErrNotReviewed = errors.New("not the definitions reviewed")

// Pending reports whether r shows a change to approve.
func (r *Review) Pending() bool {
	return slices.ContainsFunc(r.Tools, func(t ToolReview) bool { return t.State != "trusted" })
}

// Text is r for a person: the changes, then the line that approves them.
func (r *Review) Text() string {
	var b strings.Builder
	counts := map[string]int{}
	for _, t := range r.Tools {
		counts[t.State]++
	}
	fmt.Fprintf(&b, "server %s: %d changed, %d new, %d as trusted\n", r.Server, counts["changed"], counts["new"], counts["trusted"])
	if r.Held != "" {
		fmt.Fprintf(&b, "held until reviewed: %s; none of its tools is offered before you approve them\n", r.Held)
	}
	for _, t := range r.Tools {
		switch t.State {
		case "trusted":
			continue
		case "new":
			fmt.Fprintf(&b, "\n%s (%q on the server) is new:\n", t.Name, t.Raw)
		default:
			fmt.Fprintf(&b, "\n%s (%q on the server) changed since it was trusted:\n", t.Name, t.Raw)
		}
		b.WriteString(t.Change)
		fmt.Fprintf(&b, "  digest: %s\n", t.Digest)
	}
	if !r.Pending() {
		b.WriteString("nothing to approve\n")
		return b.String()
	}
	target := r.Server
	if r.Tool != "" {
		target += " " + r.Tool
	}
	fmt.Fprintf(&b, "\n%s%s --digest %s\n", approveLine, target, r.Digest)
	return b.String()
}

// approveLine starts the last line of a pending review's text.
const approveLine = "approve exactly this with: dsh-host trust "

// ReviewDigest returns the digest a pending review's text (Review.Text)
// approves; false when it approves nothing.
func ReviewDigest(text string) (string, bool) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, approveLine) {
		return "", false
	}
	_, d, ok := strings.Cut(last, " --digest ")
	return d, ok && validDigest(d)
}

func validDigest(d string) bool {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != sha256.Size*2 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// review compares defs, server's selected tools, with their trusted
// definitions.
func (p *Pins) review(server, tool string, defs []tools.Definition) (*Review, error) {
	f, err := p.store.load(server)
	if err != nil {
		return nil, err
	}
	r := &Review{Server: server, Tool: tool}
	if f != nil {
		r.Held = f.Held
	}
	for i := range defs {
		cur := pinnedOf(&defs[i])
		t := ToolReview{Name: defs[i].Name, Raw: cur.Name, Digest: cur.digest(), State: "new"}
		var rec pinRecord
		ok := false
		if f != nil {
			rec, ok = f.Tools[cur.Name]
		}
		switch {
		case ok && rec.Format == 0 && rec.Digest == t.Digest, ok && rec.Format != 0 && legacyMatch(rec, cur):
			t.State = "trusted"
		case ok:
			t.State = "changed"
		}
		if t.State != "trusted" {
			t.Change, _ = changeFrom(rec, ok, cur)
		}
		r.Tools = append(r.Tools, t)
	}
	slices.SortFunc(r.Tools, func(a, b ToolReview) int { return strings.Compare(a.Raw, b.Raw) })
	r.Digest = setDigest(r.Tools)
	if tool != "" && len(r.Tools) == 1 {
		r.Digest = r.Tools[0].Digest
	}
	return r, nil
}

// setDigest names a set of definitions: a hash of their names and digests.
func setDigest(ts []ToolReview) string {
	h := sha256.New()
	for _, t := range ts {
		fmt.Fprintf(h, "%q %s\n", t.Raw, t.Digest)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// SetShown records digest as the review the /policy trust line again
// (or the review of its tools) showed last; TakeShown returns it ("" for
// none) and forgets it: run again on the same definitions, the command
// approves them once, and a later run shows its review first.
func (p *Pins) SetShown(again, digest string) {
	p.shownMu.Lock()
	defer p.shownMu.Unlock()
	if p.shown == nil {
		p.shown = map[string]string{}
	}
	p.shown[again] = digest
}

func (p *Pins) TakeShown(again string) string {
	p.shownMu.Lock()
	defer p.shownMu.Unlock()
	d := p.shown[again]
	delete(p.shown, again)
	return d
}

// Review shows what trusting server's tools (only tool's, when not "")
// would approve; see `dsh-host trust`.
func (p *Pins) Review(server, tool string) (*Review, error) {
	defs, err := p.selected(server, tool)
	if err != nil {
		return nil, err
	}
	return p.review(server, tool, defs)
}

// TrustDigest approves server's tools (only tool's, when not "") if their
// definitions are the ones digest names (Review.Digest), and nothing
// otherwise: the error wraps ErrNotReviewed.
func (p *Pins) TrustDigest(server, tool, digest string) (released []string, err error) {
	if !validDigest(digest) {
		return nil, fmt.Errorf("%q is not a digest (sha256: and 64 hexadecimal digits)", digest)
	}
	defs, err := p.selected(server, tool)
	if err != nil {
		return nil, err
	}
	r, err := p.review(server, tool, defs)
	if err != nil {
		return nil, err
	}
	// The definitions hashed are the ones recorded: a change after this
	// point is a new registration, compared with them and held.
	if r.Digest != digest && (tool == "" || setDigest(r.Tools) != digest) {
		what := "the tools of " + server
		if tool != "" {
			what = tool + " of " + server
		}
		return nil, fmt.Errorf("%w: %s changed after they were shown, or the digest is not theirs; nothing was approved (review them again: dsh-host trust %s)",
			ErrNotReviewed, what, strings.TrimSpace(server+" "+tool))
	}
	return p.trust(server, defs)
}
