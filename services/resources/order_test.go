package resources_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// uriOfferConfig is the test plugin's: a server that lists one URI.
type uriOfferConfig struct {
	Server string `yaml:"server"`
	URI    string `yaml:"uri"`
}

func init() {
	host.Register(host.Definition[uriOfferConfig]{
		Name:   "test-uri-offer",
		Inject: []host.Dep{host.Require(resources.Key)},
		Apply: func(s *host.Scope, cfg uriOfferConfig) error {
			src, err := host.Get(s, resources.Key).Register(s, resources.Provider{Server: cfg.Server,
				Read: func(_ context.Context, uri string, _ *tools.Channels) (*mcp.ReadResourceResult, error) {
					return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: cfg.Server}}}, nil
				}})
			if err != nil {
				return err
			}
			src.Set([]*mcp.Resource{{URI: cfg.URI, Name: cfg.URI}}, nil)
			return nil
		},
	})
}

// TestSharedURIFollowsCompositionOrder: of two servers listing one URI,
// the one whose entry comes first in the composition answers, though it
// registered last, and the collision's log names that server.
func TestSharedURIFollowsCompositionOrder(t *testing.T) {
	var logs mcptest.SyncBuffer
	h := hosttest.Start(t, `plugins:
  - {id: second, name: test-uri-offer, config: {server: second, uri: "shared://x"}}
`, hosttest.Logger(slog.New(slog.NewTextHandler(&logs, nil))))
	// first is added before second in the file, and starts after it.
	h.Apply(`plugins:
  - {id: first, name: test-uri-offer, config: {server: first, uri: "shared://x"}}
  - {id: second, name: test-uri-offer, config: {server: second, uri: "shared://x"}}
`)
	reg, ok := host.Lookup(h.Host, resources.Key)
	if !ok {
		t.Fatal("no resources service")
	}
	res, err := reg.Read(context.Background(), "shared://x", nil)
	if err != nil || res.Server != "first" {
		t.Fatalf("Read(shared://x) = %+v, %v; want it from first, the first entry of the composition", res, err)
	}
	if !strings.Contains(logs.String(), "reads=first shadowed=second") {
		t.Errorf("the collision log does not name first as the server that answers:\n%s", logs.String())
	}
}

// TestSharedURIWarningNamesEveryServer: a URI three servers list is
// logged naming all three, the one that answers first; a server that goes
// and lists the same again logs nothing more.
func TestSharedURIWarningNamesEveryServer(t *testing.T) {
	var logs mcptest.SyncBuffer
	three := `plugins:
  - {id: first, name: test-uri-offer, config: {server: first, uri: "shared://x"}}
  - {id: second, name: test-uri-offer, config: {server: second, uri: "shared://x"}}
  - {id: third, name: test-uri-offer, config: {server: third, uri: "shared://x"}}
`
	h := hosttest.Start(t, three, hosttest.Logger(slog.New(slog.NewTextHandler(&logs, nil))))
	const want = `servers=3 reads=first shadowed="second, third"`
	if !strings.Contains(logs.String(), want) {
		t.Errorf("no collision log with %s:\n%s", want, logs.String())
	}
	// third goes and comes back (a reconnect): nothing new to say.
	h.Apply(strings.Replace(three, "name: test-uri-offer, config: {server: third", "name: test-uri-offer, disabled: true, config: {server: third", 1))
	h.Apply(three)
	if n := strings.Count(logs.String(), "servers=3"); n != 1 {
		t.Errorf("the three-server collision was logged %d times, want once:\n%s", n, logs.String())
	}
}
