package mcpclient_test

import (
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/resources"
)

// BenchmarkResources measures what the host adds to resources, against a
// bare go-sdk client of another process of the same fixture server (stdio,
// -resources 20), side by side in rotating order:
//
//   - read: resources.Registry.Read → mcp-client → server, vs
//     ClientSession.ReadResource; read-tool is the model's path, mcp_read
//     through the registry's pipeline and the text rendering;
//   - list: resources.Registry.List (served from what the client synced) vs
//     a resources/list round trip.
//
// It reports medians and p99 in microseconds and the host's read overhead
// on the direct median in percent.
//
//	go test -run '^$' -bench Resources -benchtime 2000x ./plugins/mcpclient
func BenchmarkResources(b *testing.B) {
	hs := newHarnessLogging(b, slog.LevelInfo)
	hs.apply(stdioFixture(b, "fx", "fx", nil, "-resources", "20"))
	direct := mcptest.ConnectFixture(b, "-resources", "20")
	reg := hs.resources()
	tools := hs.registry()
	ctx := b.Context()
	const uri = "fixture://doc/007"
	readArgs, _ := json.Marshal(map[string]any{"uri": uri})

	timed := func(fn func() error) func() time.Duration {
		return func() time.Duration {
			start := time.Now()
			err := fn()
			d := time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			return d
		}
	}
	paths := []struct {
		name string
		run  func() time.Duration
	}{
		{"host-read", timed(func() error { _, err := reg.Read(ctx, uri, nil); return err })},
		{"direct-read", timed(func() error {
			_, err := direct.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			return err
		})},
		{"host-read-tool", timed(func() error { return tools.Execute(ctx, modelCaller, resources.ReadToolName, readArgs).Err })},
		{"host-list", timed(func() error {
			if n := len(reg.List(resources.Filter{})); n != 22 {
				b.Fatalf("host lists %d resources", n)
			}
			return nil
		})},
		{"direct-list", timed(func() error {
			res, err := direct.ListResources(ctx, nil)
			if err == nil && len(res.Resources) != 22 {
				b.Fatalf("direct lists %d resources", len(res.Resources))
			}
			return err
		})},
	}
	runs := make([]func() time.Duration, len(paths))
	for i, p := range paths {
		runs[i] = p.run
	}
	samples := mcptest.Rotated(b, 50, runs...)
	if len(samples[0]) == 0 {
		return
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	for j, p := range paths {
		b.ReportMetric(us(mcptest.Percentile(samples[j], 50)), p.name+"-p50-µs")
		b.ReportMetric(us(mcptest.Percentile(samples[j], 99)), p.name+"-p99-µs")
	}
	hp50, dp50 := us(mcptest.Percentile(samples[0], 50)), us(mcptest.Percentile(samples[1], 50))
	b.ReportMetric(100*(hp50-dp50)/dp50, "read-overhead-p50-%")
}
