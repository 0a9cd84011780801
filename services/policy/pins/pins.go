// Package pins is the policy's trust on first use of MCP tools: the
// first list a server offers is trusted and its definitions recorded
// (one JSON file per server, shared by every process on the directory);
// a tool that later appears, or whose definition (description, schemas,
// annotations, _meta) changes, is held until a person approves it.
//
//	p := pins.New(dir, reg, logger)
//	if h := p.Check(&def); h != nil { ... } // *Held: the change, as an error
//	r, _ := p.Review(server, tool)          // what approving would record
//	p.TrustDigest(server, tool, r.Digest)   // approves only what was shown
//
// HiddenText flags text a model reads and a person does not see; a held
// tool's change shown to a model (Held.ForModel) names what changed
// without its text.
package pins

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/services/tools"
)

// pinned is a tool's definition as far as trust goes: what a model reads
// and what a call depends on. Schemas and annotations are canonical JSON
// (keys sorted), so that a server re-encoding them changes nothing.
type pinned struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	// Meta is the tool's _meta, which the gateway serves with it and some
	// clients give their model (a widget's description).
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// pinnedOf reads def's MCP listing (the registry's description may be
// another plugin's rewrite: the server's is what is trusted) and the
// registry's input schema, which is the one served and checked (the
// listing does not keep it twice).
func pinnedOf(def *tools.Definition) pinned {
	var p pinned
	if len(def.MCPTool) > 0 {
		_ = json.Unmarshal(def.MCPTool, &p) // a listing that does not decode pins what the registry has
	}
	if p.Name == "" {
		p.Name = def.Origin.RawName
	}
	if len(def.MCPTool) == 0 {
		p.Description, p.OutputSchema = def.Description, def.OutputSchema
	}
	if len(def.InputSchema) > 0 {
		p.InputSchema = def.InputSchema
	}
	p.InputSchema, p.OutputSchema, p.Annotations, p.Meta = canonical(p.InputSchema), canonical(p.OutputSchema), canonical(p.Annotations), canonical(p.Meta)
	return p
}

// canonical re-encodes a JSON value with sorted keys; nil for none or null.
func canonical(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return raw
	}
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}

func (p pinned) digest() string {
	b, _ := json.Marshal(p) // strings and valid JSON: cannot fail
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Held is the refusal of a call to a tool the policy holds: it appeared,
// or its definition changed, after its server's tools were trusted.
type Held struct {
	Tool   string // the registered name
	Server string
	Raw    string // the name on the server
	// New is true for a tool its server never listed while trusted.
	New bool
	// Review is why the server is held until reviewed ("" when it is
	// not): none of its tools was approved yet.
	Review string
	// Change is what differs from the trusted definition (or, for a new
	// tool, its definition), invisible text flagged.
	Change string
	parts  []string // the names of what changed, without their values
	model  bool     // told to a model (ForModel)
}

// ForModel is h as a model reads it (a chat's, a gateway client's): what
// changed is named, not shown, since the new text may be written to steer
// the model that reads it. The person sees the whole change in /policy,
// the host's log, and the refusals of console and one-shot calls.
func (h *Held) ForModel() *Held {
	m := *h
	m.model = true
	// Only the part's field: a schema's keys are the server's text too.
	var fields []string
	for _, part := range h.parts {
		field, _, _ := strings.Cut(part, ".")
		if !slices.Contains(fields, field) {
			fields = append(fields, field)
		}
	}
	m.Change = "  changed: " + strings.Join(fields, ", ") + " (the change is not shown to a model: see /policy, or the host's log)\n"
	return &m
}

func (h *Held) Error() string {
	var b strings.Builder
	if h.Review != "" {
		fmt.Fprintf(&b, "%s is held: server %q is held until its tools are reviewed (%s).\n", h.Tool, h.Server, h.Review)
	} else if h.New {
		fmt.Fprintf(&b, "%s is held: server %q added it after its tools were trusted.\n", h.Tool, h.Server)
	} else {
		fmt.Fprintf(&b, "%s is held: its definition changed since it was trusted.\n", h.Tool)
	}
	b.WriteString(h.Change)
	if h.model {
		b.WriteString("It stays unavailable until the user reviews the change and approves it; tell them, and do not approve it yourself.")
		return b.String()
	}
	fmt.Fprintf(&b, "Read it, then approve it with `dsh-host trust %s %s` (or /mcp trust %s).", h.Server, h.commandName(), h.Server)
	return b.String()
}

// commandName is the tool's name in the command that approves it: its
// name on the server when that is a plain name, else its registered one
// (trust takes both), so that a server's name cannot drive the terminal
// (escapes), forge lines, or break the command (spaces).
func (h *Held) commandName() string {
	if segment(h.Raw) == h.Raw && h.Raw != "" && !strings.HasPrefix(h.Raw, "-") {
		return h.Raw
	}
	return h.Tool
}

// Pins holds the tools of pinned servers that appear or change after the
// servers' first trust. Verdicts are cached per registration (the
// listing's bytes) and store generation, so a call or a listing pays a
// map lookup once the tool was checked.
type Pins struct {
	store  *pinStore
	reg    *tools.Registry
	logger func() *slog.Logger
	// mu serializes the checks that miss the cache (they may write).
	mu sync.Mutex
	// first is, per server that had no pins, the list trusted on first
	// use in this process: its other tools are trusted too.
	first map[string]uint64
	// logged is the digest last logged per tool, to log a change once.
	logged map[string]string
	// upgraded is the servers whose format-1 pins were upgraded (logged once).
	upgraded map[string]bool
	cache    sync.Map // registered name -> *pinVerdict
	// shown is, per /policy trust line, the digest of the review it
	// showed last (SetShown).
	shownMu sync.Mutex
	shown   map[string]string
}

type pinVerdict struct {
	listing *byte // the first byte of the definition's MCPTool: one registration
	n       int
	gen     uint64
	held    *Held
}

// New keeps the trusted definitions of reg's tools in dir, one file per
// server; logger is read when a change is logged (the instance's, as it
// is now).
func New(dir string, reg *tools.Registry, logger func() *slog.Logger) *Pins {
	return &Pins{store: newPinStore(dir), reg: reg, logger: logger, first: map[string]uint64{}, logged: map[string]string{}, upgraded: map[string]bool{}}
}

func pinMode(def *tools.Definition) string {
	if def.Origin.Pin == "" {
		return tools.PinHold
	}
	return def.Origin.Pin
}

// Check returns why def is held, nil when it is offered.
func (p *Pins) Check(def *tools.Definition) *Held {
	if def.Origin.Server == "" || pinMode(def) == tools.PinOff {
		return nil
	}
	gen := p.store.gen.Load()
	var first *byte
	if len(def.MCPTool) > 0 {
		first = &def.MCPTool[0]
		if v, ok := p.cache.Load(def.Name); ok {
			if v := v.(*pinVerdict); v.listing == first && v.n == len(def.MCPTool) {
				if v.held != nil {
					// Another process (a `dsh-host trust` that started a
					// host of its own) may have trusted it: a held tool
					// looks at its file again.
					_, _ = p.store.load(def.Origin.Server)
					gen = p.store.gen.Load()
				}
				if v.gen == gen {
					return v.held
				}
			}
		}
	}
	h := p.compare(def)
	if first != nil {
		p.cache.Store(def.Name, &pinVerdict{listing: first, n: len(def.MCPTool), gen: gen, held: h})
	}
	return h
}

// compare compares def with its trusted definition; a server with none
// trusts its first list on first use.
func (p *Pins) compare(def *tools.Definition) *Held {
	p.mu.Lock()
	defer p.mu.Unlock()
	server := def.Origin.Server
	cur := pinnedOf(def)
	f, err := p.store.load(server)
	if err != nil {
		return &Held{Tool: def.Name, Server: server, Raw: cur.Name,
			Change: "The server's trusted definitions cannot be checked: " + err.Error() + "\n"}
	}
	listing := def.Origin.Listing
	if f == nil {
		p.first[server] = listing
		p.trustFirst(server, listing, def)
		return nil
	}
	rec, ok := f.Tools[cur.Name]
	digest := cur.digest()
	if ok && rec.Format == 0 && rec.Digest == digest {
		return nil
	}
	if ok && rec.Format != 0 && legacyMatch(rec, cur) {
		p.upgradeLegacy(server, def)
		return nil
	}
	if !ok && listing != 0 && p.first[server] == listing {
		// A tool of the first list that registered after the others.
		p.trustFirst(server, listing, def)
		return nil
	}
	h := &Held{Tool: def.Name, Server: server, Raw: cur.Name, New: !ok, Review: f.Held}
	h.Change, h.parts = changeFrom(rec, ok, cur)
	if p.logged[def.Name] != digest {
		p.logged[def.Name] = digest
		if pinMode(def) == tools.PinWarn {
			p.logger().Warn("policy: a tool changed after it was trusted; offered anyway (pin: warn)", "tool", def.Name, "change", h.Change)
		} else {
			p.logger().Warn("policy: tool held until trusted", "tool", def.Name, "why", h.Error())
		}
	}
	if pinMode(def) == tools.PinWarn {
		return nil
	}
	return h
}

// trustFirst records the tools of server's list listing (with def, which
// may not be in the registry's listing yet) as trusted. The caller holds
// p.mu. A write that fails is logged: the tools stay offered, unpinned.
func (p *Pins) trustFirst(server string, listing uint64, def *tools.Definition) {
	defs := []tools.Definition{*def}
	if listing != 0 {
		for _, d := range p.reg.ListAll() {
			if d.Origin.Server == server && d.Origin.Listing == listing && d.Name != def.Name {
				defs = append(defs, d)
			}
		}
	}
	if err := p.store.update(server, func(f *pinFile) { trustDefs(f, defs, false) }); err != nil {
		p.logger().Warn("policy: the tools of a new server are offered unpinned: their definitions cannot be saved", "server", server, "err", err)
	}
}

// trustDefs sets defs as trusted in f; unless replace, a tool f has keeps
// its record (a straggler of the first list never replaces a trusted one).
func trustDefs(f *pinFile, defs []tools.Definition, replace bool) {
	now := time.Now().UTC().Truncate(time.Second)
	for i := range defs {
		cur := pinnedOf(&defs[i])
		if _, had := f.Tools[cur.Name]; had && !replace {
			continue
		}
		f.Tools[cur.Name] = pinRecord{Digest: cur.digest(), Trusted: now, Tool: cur}
	}
}

// selected returns the registered definitions of server's tools (only
// tool's, when it is not "": its name on the server or its registered
// name).
func (p *Pins) selected(server, tool string) ([]tools.Definition, error) {
	var defs []tools.Definition
	for _, d := range p.reg.ListAll() {
		if d.Origin.Server != server {
			continue
		}
		if tool != "" && d.Origin.RawName != tool && d.Name != tool {
			continue
		}
		defs = append(defs, d)
	}
	if len(defs) == 0 {
		if tool != "" {
			return nil, fmt.Errorf("server %q has no tool %q registered", server, tool)
		}
		return nil, fmt.Errorf("no tool of server %q is registered (is it connected?)", server)
	}
	return defs, nil
}

// Trust records the current definitions of server's tools (only tool's,
// when it is not "") as trusted, and returns the names it released from
// hold.
func (p *Pins) Trust(server, tool string) (released []string, err error) {
	defs, err := p.selected(server, tool)
	if err != nil {
		return nil, err
	}
	return p.trust(server, defs)
}

// trust records defs as server's trusted definitions.
func (p *Pins) trust(server string, defs []tools.Definition) (released []string, err error) {
	for i := range defs {
		if p.Check(&defs[i]) != nil {
			released = append(released, defs[i].Name)
		}
	}
	p.mu.Lock()
	err = p.store.update(server, func(f *pinFile) {
		trustDefs(f, defs, true)
		if len(defs) == len(p.serverDefs(server)) {
			f.Held = "" // every tool of it reviewed
		}
	})
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	p.reg.AssemblyChanged()
	return released, nil
}

// serverDefs returns the registered definitions of server's tools.
func (p *Pins) serverDefs(server string) []tools.Definition {
	var defs []tools.Definition
	for _, d := range p.reg.ListAll() {
		if d.Origin.Server == server {
			defs = append(defs, d)
		}
	}
	return defs
}

// Held returns the tools held now, by name.
func (p *Pins) Held() []*Held {
	var out []*Held
	for _, d := range p.reg.ListAll() {
		if h := p.Check(&d); h != nil {
			out = append(out, h)
		}
	}
	return out
}
