package stdio

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/sandbox"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// BenchmarkStart is the cost of starting the fixture server up to a
// completed MCP handshake, unsandboxed and sandboxed, side by side; the
// median of the starts is reported besides the mean (ns/op). For the
// figure in docs/sandbox.md:
//
//	go test -run '^$' -bench BenchmarkStart -benchtime 20x ./plugins/mcpclient/stdio/
func BenchmarkStart(b *testing.B) {
	bin := mcptest.FixtureBinary(b)
	for _, mode := range []string{sandbox.ModeOff, sandbox.ModeStrict} {
		b.Run(mode, func(b *testing.B) {
			if abi, why := sandbox.Support(); mode != sandbox.ModeOff && abi == 0 {
				b.Skip(why)
			}
			var took []time.Duration
			for b.Loop() {
				began := time.Now()
				tr := &Transport{Command: bin, Logger: slog.New(slog.DiscardHandler), Sandbox: sandbox.Config{Mode: mode}}
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), tr, nil)
				if err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(began))
				b.StopTimer()
				cs.Close()
				b.StartTimer()
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms")
		})
	}
}
