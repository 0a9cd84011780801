package gateway

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// TestForwardReadAsksItsOwnClient: two clients read a resource at once,
// and the server asks during both reads; each question reaches the client
// whose read it is, never the other's, in both protocol styles. The reads
// meet inside the server before either asks, so both are in flight when
// the questions go out.
func TestForwardReadAsksItsOwnClient(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var arrived sync.WaitGroup
			arrived.Add(2)
			met := make(chan struct{})
			go func() { arrived.Wait(); close(met) }()
			res := resources.New(nil)
			src, err := res.Register(scope(t), resources.Provider{
				Server: "srv",
				Read: func(rctx context.Context, uri string, ch *tools.Channels) (*mcp.ReadResourceResult, error) {
					arrived.Done()
					select {
					case <-met:
					case <-rctx.Done():
						return nil, rctx.Err()
					}
					out, _ := askTool("", elicit.ModeForm).Execute(rctx, tools.Call{Channels: ch})
					return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: out.Value.(string)}}}, nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			src.Set([]*mcp.Resource{{URI: "srv://a", Name: "a"}}, nil)
			src.Listed()
			g, err := New(scope(t), tools.New(nil), nil, &Deps{Resources: res, Debounce: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			client := func(name string) *mcp.ClientSession {
				return connectWith(t, g, &mcp.ClientOptions{
					Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
					ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
					},
				}, version)
			}
			names := []string{"Ann", "Bob"}
			got := make([]string, len(names))
			var wg sync.WaitGroup
			for i, name := range names {
				cs := client(name)
				wg.Go(func() {
					read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "srv://a"})
					if err != nil || len(read.Contents) != 1 {
						t.Errorf("%s's resources/read = %+v, %v", name, read, err)
						return
					}
					got[i] = read.Contents[0].Text
				})
			}
			wg.Wait()
			for i, name := range names {
				if want := "accept  name=" + name; got[i] != want {
					t.Errorf("%s's read was answered %q; want %q (its own client's answer)", name, got[i], want)
				}
			}
		})
	}
}
