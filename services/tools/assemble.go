package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/dsh-host/dsh-host/host"
)

// OnAssemble registers a transform of the model-facing assembly; the
// earlier-registered handler is the outer one: it runs first and sees what
// every later one returned from next. A handler that panics fails Assemble
// with an error instead of crashing the caller. Handlers must not modify
// the Parameters bytes of the schemas they receive in place (they are the
// registry's); replace them instead.
func (r *Registry) OnAssemble(s *host.Scope, fn host.WaterfallHandler[Assembly]) (remove func()) {
	return r.assemble.On(s, func(ctx context.Context, a Assembly, next host.Next[Assembly]) (out Assembly, err error) {
		defer func() {
			if p := recover(); p != nil {
				out, err = a, r.recovered("assemble handler", "", p)
			}
		}()
		return fn(ctx, a, next)
	})
}

// Assemble returns what the model sees for one request by caller: every
// visible tool sorted by name, then every assemble handler. Parameters
// carry each tool's InputSchema byte for byte, or
// {"type":"object","properties":{}} for a tool registered without one.
func (r *Registry) Assemble(ctx context.Context, caller Caller) (Assembly, error) {
	all := r.all()
	a := Assembly{Caller: caller, Tools: make([]Schema, 0, len(all))}
	for _, e := range all {
		if caller.Mask.Allows(e.def.Name) {
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
	var b bytes.Buffer
	b.WriteByte('[')
	for i, t := range a.Tools {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"function","function":{"name":`)
		writeString(&b, t.Name)
		b.WriteString(`,"description":`)
		writeString(&b, t.Description)
		b.WriteString(`,"parameters":`)
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 {
			params = json.RawMessage(emptyParameters)
		} else if !json.Valid(params) {
			return nil, fmt.Errorf("tool %q: parameters are not valid JSON; an assemble handler or the registration produced them", t.Name)
		}
		b.Write(params)
		b.WriteString(`}}`)
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// Size returns the length in bytes of ToolsJSON: what the tool list costs
// in every request that carries it.
func (a Assembly) Size() (int, error) {
	b, err := a.ToolsJSON()
	return len(b), err
}

// writeString appends s as a JSON string without HTML escaping.
func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes
	b.Truncate(b.Len() - 1) // Encode's newline
}
