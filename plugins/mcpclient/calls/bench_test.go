package calls

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkCall is the bookkeeping of one Streamable HTTP call: Start,
// Finish, the context's delayed Release, from 32 goroutines at once as a
// gateway under 32 clients makes them.
func BenchmarkCall(b *testing.B) {
	t := New(Options{TimeoutMs: 60_000, ReleaseDelay: time.Second, Logger: slog.New(slog.DiscardHandler)})
	defer t.Stop()
	b.SetParallelism(16)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			call, _ := t.Start(context.Background(), &mcp.CallToolParams{}, "", nil)
			call.Finish()
			t.Release(call.Cancel)
		}
	})
}
