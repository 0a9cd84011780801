package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/host"
)

// OnAssemble registers a transform of the model-facing assembly until s is
// disposed (or remove is called); the earlier-registered handler is the
// outer one: it runs first and sees what every later one returned from
// next. A handler that panics fails Assemble with an error instead of
// crashing the caller. Handlers must not modify the Parameters bytes of the
// schemas they receive in place (they are the registry's); replace them
// instead. Adding and removing a handler are assembly changes
// (OnAssemblyChange). A nil s panics.
func (r *Registry) OnAssemble(s *host.Scope, fn host.WaterfallHandler[Assembly]) (remove func()) {
	mustScope(s, "OnAssemble")
	if s.Staged() {
		// Its instance's other registrations may all be staged (or none
		// at all): the swap must still take the replaced one's tools out.
		r.watchLive(s)
	}
	off := r.assemble.On(nil, func(ctx context.Context, a Assembly, next host.Next[Assembly]) (out Assembly, err error) {
		if !s.Serving() {
			// Staged beside the instance it replaces, or replaced and
			// finishing its calls: the serving one speaks.
			return next(ctx, a)
		}
		defer func() {
			if p := recover(); p != nil {
				out, err = a, r.recovered("assemble handler", "", p)
			}
		}()
		return fn(ctx, a, next)
	})
	r.AssemblyChanged()
	return s.Effect("tools assemble handler", func() {
		off()
		r.AssemblyChanged()
	})
}

// Assemble returns what the model sees for one request by caller: every
// offered tool (List) sorted by name, then every assemble handler. Parameters
// carry each tool's InputSchema byte for byte, or
// {"type":"object","properties":{}} for a tool registered without one.
func (r *Registry) Assemble(ctx context.Context, caller Caller) (Assembly, error) {
	all := r.all()
	a := Assembly{Caller: caller, Tools: make([]Schema, 0, len(all))}
	for _, e := range all {
		if r.offered(caller, e) {
			a.Tools = append(a.Tools, Schema{Name: e.def.Name, Description: e.def.Description, Parameters: e.params})
		}
	}
	out, err := r.assemble.Run(ctx, a, nil)
	if err != nil {
		return Assembly{}, fmt.Errorf("assemble the tools for %s: %w", callerString(caller), err)
	}
	return out, nil
}

func callerString(c Caller) string {
	if c.ID == "" {
		return fmt.Sprintf("caller %q", c.Kind)
	}
	return fmt.Sprintf("caller %s %q", c.Kind, c.ID)
}

// ToolsJSON returns the tools as an OpenAI-compatible `tools` array:
// [{"type":"function","function":{"name","description","parameters"}}].
// Parameters are embedded byte for byte as registered (not re-marshalled,
// so key order and spacing are the server's); an empty one becomes the
// empty object schema. Strings are not HTML-escaped, which saves the model
// tokens on every '<', '>' and '&'. An empty assembly gives `[]`.
func (a Assembly) ToolsJSON() ([]byte, error) {
	const head, mid1, mid2, tail = `{"type":"function","function":{"name":`, `,"description":`, `,"parameters":`, `}}`
	n := 2
	for _, t := range a.Tools {
		n += len(head) + len(mid1) + len(mid2) + len(tail) + 1 + len(t.Name) + len(t.Description) + 4 + max(len(t.Parameters), len(emptyParameters))
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, t := range a.Tools {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, head...)
		b = appendString(b, t.Name)
		b = append(b, mid1...)
		b = appendString(b, t.Description)
		b = append(b, mid2...)
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 {
			params = json.RawMessage(emptyParameters)
		} else if !json.Valid(params) {
			return nil, fmt.Errorf("tool %q: parameters are not valid JSON; an assemble handler or the registration produced them", t.Name)
		}
		b = append(b, params...)
		b = append(b, tail...)
	}
	return append(b, ']'), nil
}

// Size returns the length in bytes of ToolsJSON: what the tool list costs
// in every request that carries it.
func (a Assembly) Size() (int, error) {
	b, err := a.ToolsJSON()
	return len(b), err
}

// appendString appends s as a JSON string the way encoding/json writes it
// with HTML escaping off: quotes, backslashes and control characters
// escaped, invalid UTF-8 replaced by U+FFFD, and U+2028/U+2029 escaped (some
// JavaScript parsers take them for line ends).
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			switch r {
			case utf8.RuneError:
				b = append(b, `\ufffd`...)
			default:
				b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
