package resources

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// BenchmarkSetAmongManySources re-lists one server among twenty that list
// 500 URIs each, none shared: the collision check runs under the write
// lock on every Set.
func BenchmarkSetAmongManySources(b *testing.B) {
	r := New(&Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	var last *Source
	listing := func(server, suffix string) []*mcp.Resource {
		out := make([]*mcp.Resource, 500)
		for i := range out {
			out[i] = &mcp.Resource{URI: fmt.Sprintf("%s://doc/%d%s", server, i, suffix), Name: "d"}
		}
		return out
	}
	for n := range 20 {
		server := fmt.Sprintf("s%d", n)
		s := host.NewScope(context.Background(), server, nil)
		b.Cleanup(func() { _ = s.Dispose(time.Second) })
		src, err := r.Register(s, Provider{Server: server, Read: func(context.Context, string, *tools.Channels) (*mcp.ReadResourceResult, error) { return nil, nil }})
		if err != nil {
			b.Fatal(err)
		}
		src.Set(listing(server, ""), nil)
		last = src
	}
	lists := [][]*mcp.Resource{listing("s19", "a"), listing("s19", "b")}
	i := 0
	for b.Loop() {
		last.Set(lists[i%2], nil) // a changed listing, so Set does its work
		i++
	}
}
