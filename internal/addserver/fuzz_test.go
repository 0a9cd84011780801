package addserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/addserver"
	"github.com/dsh-host/dsh-host/internal/registry"
)

// FuzzRegistryDocument: whatever a registry sends, a document that passes
// Validate becomes an entry whose every written value holds no control
// character, and no ${ of the document's own (which the host would
// expand from the user's environment) but the secrets' references add
// writes itself.
func FuzzRegistryDocument(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "testkit", "registrytest", "testdata", "*.json"))
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"name":"a.b/c","version":"1","packages":[{"registryType":"npm","identifier":"x","transport":{"type":"stdio"},"packageArguments":[{"type":"positional","value":"${A}"}]}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		var s registry.Server
		if json.Unmarshal(doc, &s) != nil || s.Validate() != nil {
			return
		}
		p, err := addserver.PlanOfServer(context.Background(), &s, "http://registry.test", addserver.From{Have: func(string) bool { return true }, Env: func(string) (string, bool) { return "", false }}, fixedAnswer("/tmp/answer"))
		if err != nil {
			return
		}
		secrets := map[string]bool{}
		for _, e := range p.Exports {
			secrets["${"+e.Var+"}"] = true
		}
		cfg := p.Server.Config
		values := append([]string{cfg.Command, cfg.URL}, cfg.Args...)
		for _, m := range []map[string]string{cfg.Env, cfg.Headers} {
			for k, v := range m {
				values = append(values, k, v)
			}
		}
		for _, v := range values {
			if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("control character in %q", v)
			}
			rest := strings.ReplaceAll(v, "$${", "")
			for ref := range secrets {
				rest = strings.ReplaceAll(rest, ref, "")
			}
			if strings.Contains(rest, "${") {
				t.Fatalf("a variable of the document's in %q", v)
			}
		}
	})
}

type fixedAnswer string

func (a fixedAnswer) Ask(context.Context, addserver.Question) (string, error) { return string(a), nil }
