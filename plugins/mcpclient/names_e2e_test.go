package mcpclient_test

import (
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/services/tools"
)

// TestE2EEverythingNamesFitAGatewayLimit: server-everything's real tools,
// behind a 31-character serverName, fitted to a gateway's default limit
// of 48 (tools.FitToolName) keep their own names whole, all distinct (the
// issue: 13 of its 16 were served as a hash). Skipped without the pinned
// npm servers (DSH_TEST_NODE_MODULES).
func TestE2EEverythingNamesFitAGatewayLimit(t *testing.T) {
	const server = "everything-server-for-team-test"
	hs := newHarness(t)
	hs.apply(hs.everythingEntry(server, nil))
	hs.requireActive(server)
	var defs []tools.Definition
	eventually(t, "its tools registered after initialize", func() bool {
		defs = defs[:0]
		for _, d := range hs.registry().List(tools.Caller{Kind: "test"}) {
			if d.Origin.Server == server {
				defs = append(defs, d)
			}
		}
		return len(defs) >= 16
	})
	seen := map[string]string{}
	for _, d := range defs {
		name := tools.FitToolName("mcp__", d.Origin.Server, d.Origin.RawName, 48)
		if !strings.HasSuffix(name, "__"+d.Origin.RawName) || len(name) > 48 {
			t.Errorf("%s is served as %q", d.Origin.RawName, name)
		}
		if prev, dup := seen[name]; dup {
			t.Errorf("%s and %s are both served as %q", prev, d.Origin.RawName, name)
		}
		seen[name] = d.Origin.RawName
	}
	t.Logf("%d tools, e.g. %v", len(defs), seen)
}
