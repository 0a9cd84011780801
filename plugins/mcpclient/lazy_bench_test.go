package mcpclient_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
	"github.com/dsh-host/dsh-host/services/tools"
)

// BenchmarkFiftyServers starts a host with fifty mcp-client instances
// (forty fixture servers and ten npm server-everything, over stdio) and
// measures, side by side in one run, eager against lazy with a warm
// catalog cache: the time from Update to ready, the child processes then,
// the host's RSS and the children's; and, for lazy, the first call on a
// server that is not running yet (spawn, initialize, discovery, call), on
// a fixture server and on server-everything.
//
//	DSH_TEST_NODE_MODULES=$PWD/.cache/npm/node_modules \
//	  go test -run '^$' -bench FiftyServers -benchtime 3x ./plugins/mcpclient
func BenchmarkFiftyServers(b *testing.B) {
	if testing.Short() {
		b.Skip("starts fifty server processes")
	}
	fixture := mcptest.FixtureBinary(b)
	node, everything := mcptest.NodeServer(b, mcptest.ServerEverything, "stdio")
	b.Setenv("DSH_HOME", b.TempDir())

	entries := func(startup string) []host.Entry {
		var out []host.Entry
		add := func(name, command string, args []string) {
			out = append(out, host.Entry{ID: name, Name: "mcp-client", Config: map[string]any{
				"transport": "stdio", "serverName": name, "command": command, "args": toAny(args),
				"startup": startup, "startupTimeoutMs": 60000,
			}})
		}
		for i := range 40 {
			name := fmt.Sprintf("f%02d", i)
			add(name, fixture, []string{"-name", name})
		}
		for i := range 10 {
			add(fmt.Sprintf("e%02d", i), node, everything)
		}
		return out
	}

	type round struct {
		ready             time.Duration
		children          int
		hostRSS, childRSS int64 // KiB
		firstFixture      time.Duration
		firstEverything   time.Duration
	}
	run := func(b *testing.B, startup string, firstCalls bool) round {
		b.Helper()
		h := host.New(&host.Options{Logger: slog.New(slog.DiscardHandler), DisposeTimeout: 15 * time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var r round
		start := time.Now()
		if err := h.Update(ctx, &host.Composition{File: "fifty.yml", Entries: entries(startup)}); err != nil {
			b.Fatalf("%s: %v", startup, err)
		}
		r.ready = time.Since(start)
		b.StopTimer()
		for _, st := range h.Status() {
			if st.Plugin == "mcp-client" && (st.State != host.StateActive || !strings.Contains(st.Detail, "tools")) {
				b.Fatalf("%s: %s is %s (%s) %q", startup, st.ID, st.State, st.Err, st.Detail)
			}
		}
		pids := append(mcptest.ChildProcesses(b, fixture), mcptest.ChildProcesses(b, node)...)
		r.children = len(pids)
		r.hostRSS = rssKiB("self")
		for _, pid := range pids {
			r.childRSS += rssKiB(strconv.Itoa(pid))
		}
		if firstCalls {
			reg, _ := host.Lookup(h, tools.Key)
			for _, c := range []struct {
				d    *time.Duration
				tool string
				args string
			}{
				{&r.firstFixture, mcpclient.PublicToolName("f07", "ping"), `{}`},
				{&r.firstEverything, mcpclient.PublicToolName("e03", "echo"), `{"message":"hi"}`},
			} {
				t0 := time.Now()
				res := reg.Execute(ctx, modelCaller, c.tool, []byte(c.args))
				*c.d = time.Since(t0)
				if res.Err != nil {
					b.Fatalf("first call %s: %v", c.tool, res.Err)
				}
			}
		}
		if err := h.Shutdown(ctx); err != nil {
			b.Fatalf("shutdown: %v", err)
		}
		b.StartTimer()
		return r
	}

	// Warm the catalog caches (and the page cache) with one eager start.
	run(b, "eager", false)
	results := map[string]round{}
	for _, startup := range []string{"eager", "lazy"} {
		b.Run(startup, func(b *testing.B) {
			var sum round
			for range b.N {
				r := run(b, startup, startup == "lazy")
				sum.ready += r.ready
				sum.children += r.children
				sum.hostRSS += r.hostRSS
				sum.childRSS += r.childRSS
				sum.firstFixture += r.firstFixture
				sum.firstEverything += r.firstEverything
			}
			n := b.N
			avg := round{sum.ready / time.Duration(n), sum.children / n, sum.hostRSS / int64(n), sum.childRSS / int64(n),
				sum.firstFixture / time.Duration(n), sum.firstEverything / time.Duration(n)}
			results[startup] = avg
			b.ReportMetric(float64(avg.ready.Microseconds())/1000, "ready-ms")
			b.ReportMetric(float64(avg.children), "children")
			b.ReportMetric(float64(avg.hostRSS)/1024, "host-MiB")
			b.ReportMetric(float64(avg.childRSS)/1024, "children-MiB")
			if startup == "lazy" {
				b.ReportMetric(float64(avg.firstFixture.Microseconds())/1000, "first-call-fixture-ms")
				b.ReportMetric(float64(avg.firstEverything.Microseconds())/1000, "first-call-everything-ms")
			}
		})
	}
	if e, l := results["eager"], results["lazy"]; e.ready > 0 && l.ready > 0 {
		b.Logf("ready: eager %v, lazy %v (%.0fx); children %d vs %d; host RSS %.0f vs %.0f MiB, children %.0f vs %.0f MiB; lazy first call: fixture %v, server-everything %v",
			e.ready.Round(time.Millisecond), l.ready.Round(100*time.Microsecond), float64(e.ready)/float64(l.ready), e.children, l.children,
			float64(e.hostRSS)/1024, float64(l.hostRSS)/1024, float64(e.childRSS)/1024, float64(l.childRSS)/1024,
			l.firstFixture.Round(time.Millisecond), l.firstEverything.Round(time.Millisecond))
	}
}

// rssKiB is a process's resident set in KiB ("self" for this one), 0 when
// it cannot be read.
func rssKiB(pid string) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
