package pins

import (
	"slices"

	"github.com/dsh-host/dsh-host/services/tools"
)

// Pin files of format 1 (before the input schema was pinned) hold digests
// that leave the schema and _meta out; those of format 2 leave _meta out.
// Such a record is upgraded once: when the server's definition matches it
// but for what its format did not cover, what the server offers then is
// taken as trusted; every later change is held like any.

// legacyMatch reports whether cur is rec's definition but for what rec's
// format did not cover.
func legacyMatch(rec pinRecord, cur pinned) bool {
	cur.Meta = rec.Tool.Meta
	if rec.Format == 1 {
		cur.InputSchema = rec.Tool.InputSchema
	}
	return cur.digest() == rec.Digest
}

// upgradeLegacy records the schemas and _meta server offers now for its
// format-1 and format-2 records that match (def's, and those of its other
// registered tools), in one write, and logs it once per server. The caller
// holds p.mu. A write that fails is logged: the tool stays offered, as its
// format had it.
func (p *Pins) upgradeLegacy(server string, def *tools.Definition) {
	defs := []tools.Definition{*def}
	for _, d := range p.reg.ListAll() {
		if d.Origin.Server == server && d.Name != def.Name {
			defs = append(defs, d)
		}
	}
	var names []string
	err := p.store.update(server, func(f *pinFile) {
		for i := range defs {
			cur := pinnedOf(&defs[i])
			rec, ok := f.Tools[cur.Name]
			if !ok || rec.Format == 0 || !legacyMatch(rec, cur) {
				continue
			}
			f.Tools[cur.Name] = pinRecord{Digest: cur.digest(), Trusted: rec.Trusted, Tool: cur}
			names = append(names, cur.Name)
		}
	})
	if err != nil {
		p.logger().Warn("policy: the tool's input schema is offered unpinned: the upgraded pins cannot be saved", "server", server, "tool", def.Name, "err", err)
		return
	}
	if p.upgraded[server] {
		return
	}
	p.upgraded[server] = true
	slices.Sort(names)
	p.logger().Info("policy: pins upgraded: the input schemas and _meta the server offers now are pinned with its trusted tools; a later change is held until trusted",
		"server", server, "format", pinFormat, "tools", names)
}

// changeFrom describes how cur differs from the trusted record rec (ok
// false: there is none). A format-1 record never saw the schema: the
// whole schema is shown, as of a tool never trusted.
func changeFrom(rec pinRecord, ok bool, cur pinned) (string, []string) {
	if !ok {
		return describeChange(nil, cur)
	}
	text, parts := describeChange(&rec.Tool, cur)
	switch rec.Format {
	case 1:
		text += "  (the trusted record predates pinned input schemas: the whole schema is shown)\n"
	case 2:
		text += "  (the trusted record predates pinned _meta: the whole _meta is shown)\n"
	}
	return text, parts
}
