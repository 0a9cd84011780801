package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// TestMeasureInitialize measures how long a client of `serve --stdio` waits
// from starting the process to the initialize result, with lazy servers
// (catalog cached), eager ones, and both: the medians of a few runs of each.
// Not a CI test:
//
//	DSH_MEASURE=1 go test -run TestMeasureInitialize -v ./cmd/dsh-host/
//
// DSH_MEASURE_BIN measures another build (such as an older commit's).
func TestMeasureInitialize(t *testing.T) {
	if os.Getenv("DSH_MEASURE") == "" {
		t.Skip("a measurement, not a test: set DSH_MEASURE=1")
	}
	bin := binary
	if b := os.Getenv("DSH_MEASURE_BIN"); b != "" {
		bin = b
	}
	fixture := mcptest.FixtureBinary(t)
	const runs = 7
	for _, sc := range []struct {
		name        string
		lazy, eager int
	}{{"10 lazy + 10 eager", 10, 10}, {"10 lazy", 10, 0}, {"10 eager", 0, 10}} {
		home := t.TempDir()
		// The catalog cache a lazy server starts from: one eager run of
		// the same launch writes it.
		warm := writeComposition(t, fixtures(fixture, 0, sc.lazy+sc.eager))
		measureOnce(t, bin, home, warm, true)
		file := writeComposition(t, fixtures(fixture, sc.lazy, sc.eager))
		var took []time.Duration
		for range runs {
			took = append(took, measureOnce(t, bin, home, file, false))
		}
		slices.Sort(took)
		t.Logf("%-20s initialize median %7.1f ms (min %.1f, max %.1f, %d runs)", sc.name,
			ms(took[len(took)/2]), ms(took[0]), ms(took[len(took)-1]), runs)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// fixtures is a composition of lazy lazy fixture servers, then eager eager ones.
func fixtures(fixture string, lazy, eager int) string {
	var b strings.Builder
	b.WriteString("plugins:\n")
	for i := range lazy + eager {
		startup := "eager"
		if i < lazy {
			startup = "lazy"
		}
		fmt.Fprintf(&b, "  - {id: s%d, name: mcp-client, config: {serverName: s%d, transport: stdio, command: '%s', startup: %s}}\n", i, i, fixture, startup)
	}
	return b.String()
}

// measureOnce starts bin serve --stdio on file and returns the time from the
// start to the initialize result; warm waits for every server's tools, so
// that their catalogs are written.
func measureOnce(t *testing.T, bin, home, file string, warm bool) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--stdio", "--log-level", "error", "-c", file)
	cmd.Env = append(os.Environ(), "DSH_HOME="+home)
	cmd.Dir = filepath.Dir(file)
	begin := time.Now()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "measure", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(begin)
	defer cs.Close()
	if warm {
		for {
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(res.Tools); n > 0 && catalogs(home) > 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return took
}

func catalogs(home string) int {
	entries, _ := os.ReadDir(filepath.Join(home, "mcp-catalog"))
	return len(entries)
}

// TestMeasureColdStart measures, on a fresh DSH_HOME (no catalog cache),
// with ten eager servers of which one takes 1 s to start (coldStart, s9
// released at once): the time to the initialize result, the time to the
// first tools/list's answer, and how many servers that list holds. The
// medians of a few runs; not a CI test:
//
//	DSH_MEASURE=1 go test -run TestMeasureColdStart -v ./cmd/dsh-host/
//
// DSH_MEASURE_BIN measures another build (such as an older commit's).
func TestMeasureColdStart(t *testing.T) {
	if os.Getenv("DSH_MEASURE") == "" {
		t.Skip("a measurement, not a test: set DSH_MEASURE=1")
	}
	bin := binary
	if b := os.Getenv("DSH_MEASURE_BIN"); b != "" {
		bin = b
	}
	fixture := mcptest.FixtureBinary(t)
	const runs = 5
	var inits, lists []time.Duration
	var held, heldTools []int
	total := 0
	for range runs {
		c := newColdStart(t, fixture)
		if err := os.WriteFile(c.release, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, bin, "serve", "--stdio", "--log-level", "error", "-c", c.file)
		cmd.Env = append(os.Environ(), "DSH_HOME="+c.home)
		begin := time.Now()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "measure", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		inits = append(inits, time.Since(begin))
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		lists = append(lists, time.Since(begin))
		held = append(held, len(servers(res.Tools)))
		heldTools = append(heldTools, countServed(res.Tools))
		// Every server's tools, once they are all there.
		for total == 0 {
			all, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(servers(all.Tools)) == 10 {
				total = countServed(all.Tools)
			}
		}
		cs.Close()
		cancel()
	}
	slices.Sort(inits)
	slices.Sort(lists)
	slices.Sort(held)
	slices.Sort(heldTools)
	t.Logf("cold start, 10 eager (one 1 s): initialize median %.1f ms (min %.1f, max %.1f); first tools/list answered at %.1f ms, holding %d of 10 servers (min %d, max %d), %d of their %d tools (min %d, max %d); %d runs",
		ms(inits[runs/2]), ms(inits[0]), ms(inits[runs-1]), ms(lists[runs/2]), held[runs/2], held[0], held[runs-1],
		heldTools[runs/2], total, heldTools[0], heldTools[runs-1], runs)
}

// countServed counts the MCP servers' tools among tools.
func countServed(tools []*mcp.Tool) int {
	n := 0
	for _, tool := range tools {
		if strings.HasPrefix(tool.Name, "mcp__") {
			n++
		}
	}
	return n
}
