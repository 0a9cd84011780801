// Package schemaprofile rewrites tool parameter schemas into the form a
// chat API takes, and checks a call's arguments against the real schema
// when the model was sent another one.
//
// Google's Gemini API (and its OpenAI-compatible endpoint) takes an OpenAPI
// subset of JSON Schema and refuses a request whose tools use $ref, $defs,
// anyOf, oneOf, allOf, const, additionalProperties and the like; MCP
// servers' schemas use them freely (go-sdk's jsonschema-for-Go writes
// $defs for recursive types, Pydantic anyOf for optional fields). Under
// the Gemini profile each schema is rewritten into that subset before it
// is sent (Rewrite), and since the rewrite loosens it (a union becomes one
// of its members, a recursive type is cut), the arguments the model sends
// are checked against the tool's real schema before the call (Check): a
// mismatch is a tool error the model reads, and the call is not made.
//
// The rewrites are pinned by golden files: testdata/gemini/NAME.json in,
// NAME.golden out; `go test ./plugins/agent/schemaprofile/ -update`
// rewrites the golden files from the code.
package schemaprofile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dsh-host/dsh-host/plugins/agent/chatapi"
	"github.com/dsh-host/dsh-host/services/tools"
)

// The profiles: how tool parameter schemas are sent to the model.
const (
	Auto     = "auto"     // Gemini for Google's API, else Standard
	Standard = "standard" // schemas as registered
	Gemini   = "gemini"   // rewritten into Gemini's subset
)

// IsGeminiURL says whether base is one of Google's APIs, which take
// Gemini's schemas.
func IsGeminiURL(base string) bool {
	h := chatapi.Host(base)
	return h == "generativelanguage.googleapis.com" || strings.HasSuffix(h, "aiplatform.googleapis.com")
}

// Resolve returns profile with Auto resolved for the API at base.
func Resolve(profile, base string) string {
	if profile != Auto {
		return profile
	}
	if IsGeminiURL(base) {
		return Gemini
	}
	return Standard
}

// profiled is one schema as a profile sends it.
type profiled struct {
	params  json.RawMessage
	changed bool // params differ from the real schema

	once     sync.Once
	resolved *jsonschema.Resolved // the real schema; nil when it does not resolve
}

// Cache maps a real schema's bytes to its profiled form under one
// profile. A schema is rewritten once however many requests carry it. It
// is safe for concurrent use.
type Cache struct {
	profile string
	m       sync.Map // string → *profiled
}

// NewCache returns the cache of profile (Standard or Gemini: Resolve
// first).
func NewCache(profile string) *Cache { return &Cache{profile: profile} }

// Profile returns the cache's profile.
func (sc *Cache) Profile() string { return sc.profile }

// Rewrite returns ts with each parameter schema in the profile's form; an
// error names the tool whose schema is not JSON.
func (sc *Cache) Rewrite(ts []tools.Schema) ([]tools.Schema, error) {
	if sc.profile != Gemini {
		return ts, nil
	}
	out := make([]tools.Schema, len(ts))
	for i, t := range ts {
		p, err := sc.get(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tool %q: rewrite its parameters for the gemini profile: %w", t.Name, err)
		}
		t.Parameters = p.params
		out[i] = t
	}
	return out, nil
}

func (sc *Cache) get(raw json.RawMessage) (*profiled, error) {
	if v, ok := sc.m.Load(string(raw)); ok {
		return v.(*profiled), nil
	}
	params, err := GeminiSchema(raw)
	if err != nil {
		return nil, err
	}
	p := &profiled{params: params, changed: !bytes.Equal(params, raw)}
	v, _ := sc.m.LoadOrStore(string(raw), p)
	return v.(*profiled), nil
}

// Check validates args against the real schema raw when the profile sent
// the model another one; nil when they match or nothing was rewritten (a
// real schema that does not resolve is not checked).
func (sc *Cache) Check(raw json.RawMessage, args []byte) error {
	if sc.profile != Gemini || len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	p, err := sc.get(raw)
	if err != nil || !p.changed {
		return nil
	}
	p.once.Do(func() {
		var s jsonschema.Schema
		if json.Unmarshal(raw, &s) == nil {
			p.resolved, _ = s.Resolve(nil)
		}
	})
	if p.resolved == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return err
	}
	return p.resolved.Validate(v)
}
