// Package policytest holds what the tests of services/policy and its
// parts share: a tool registry standing for MCP servers' tools, a rule
// set for benchmarks, and a strict reader of the audit trail.
package policytest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/policy/audit"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Tools registers tools standing for those of MCP servers (with their
// listings' annotations) and one of no server.
func Tools(t testing.TB) *tools.Registry {
	t.Helper()
	reg := tools.New(nil)
	s := host.NewScope(t.Context(), "test", nil)
	t.Cleanup(func() { _ = s.Dispose(0) })
	ok := func(context.Context, tools.Call) (tools.Output, error) { return tools.Output{Value: "ok"}, nil }
	for _, d := range []tools.Definition{
		{Name: "mcp__github__create_issue", Origin: tools.Origin{Server: "github", RawName: "create_issue"}, MCPTool: []byte(`{"name":"create_issue"}`)},
		{Name: "mcp__github__search_code", Origin: tools.Origin{Server: "github", RawName: "search_code"}, MCPTool: []byte(`{"name":"search_code","annotations":{"readOnlyHint":true}}`)},
		{Name: "mcp__fs__write", Origin: tools.Origin{Server: "fs", RawName: "write"}, MCPTool: []byte(`{"name":"write","annotations":{"destructiveHint":false,"openWorldHint":false}}`)},
		{Name: "greet"},
	} {
		d.Execute = ok
		if _, err := reg.Register(s, d); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// HundredRules is 100 rules of which none matches
// mcp__github__create_issue but the last; when adds a CEL condition to
// the last.
func HundredRules(when string) string {
	var b strings.Builder
	b.WriteString("rules:\n")
	for i := range 99 {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "  - tools: [\"mcp__s%02d__*\"]\n    action: deny\n", i)
		case 1:
			fmt.Fprintf(&b, "  - servers: [\"s%02d\"]\n    action: ask\n", i)
		default:
			fmt.Fprintf(&b, "  - tools: [\"mcp__github__*\"]\n    callers: [gateway]\n    action: deny\n")
		}
	}
	b.WriteString("  - tools: [\"mcp__github__*\"]\n")
	if when != "" {
		fmt.Fprintf(&b, "    when: '%s'\n", when)
	}
	b.WriteString("    action: allow\n")
	return b.String()
}

// ReadTrail returns every line of the trail in dir, each decoded; a line
// that is not one whole record fails the test.
func ReadTrail(t testing.TB, dir string) []audit.Record {
	t.Helper()
	files, err := audit.Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []audit.Record
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r audit.Record
			dec := json.NewDecoder(strings.NewReader(sc.Text()))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&r); err != nil {
				t.Fatalf("%s: torn or foreign line %q: %v", name, sc.Text(), err)
			}
			out = append(out, r)
		}
		f.Close()
	}
	return out
}
