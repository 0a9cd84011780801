package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchComposition lists n test-bench instances; the first one's config
// carries version, so each version changes exactly that instance.
func benchComposition(n, version int) string {
	var b strings.Builder
	b.WriteString("plugins:\n")
	for i := range n {
		greeting := "same"
		if i == 0 {
			greeting = fmt.Sprintf("v%d", version)
		}
		fmt.Fprintf(&b, "  - id: i%d\n    name: test-bench\n    config:\n      greeting: %s\n      tags: [a, b, c]\n", i, greeting)
	}
	return b.String()
}

// BenchmarkReload measures the time from writing a composition file to the
// changed instance being active again, through the real watcher, with one
// instance and with 100 of which one changes. It fails if any unchanged
// instance was restarted. With the default debounce, the debounce is most
// of the time; the 1ms variant shows the host's own cost.
func BenchmarkReload(b *testing.B) {
	for _, n := range []int{1, 100} {
		for _, debounce := range []time.Duration{DefaultDebounce, time.Millisecond} {
			b.Run(fmt.Sprintf("instances=%d/debounce=%s", n, debounce), func(b *testing.B) {
				dir := b.TempDir()
				path, tmp := filepath.Join(dir, "composition.yml"), filepath.Join(dir, "composition.yml.tmp")
				writeFile(b, path, benchComposition(n, 0))
				h := newHost(b, &Options{Debounce: debounce})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- h.Watch(ctx, path) }()
				defer func() {
					cancel()
					if err := <-done; err != nil {
						b.Error(err)
					}
				}()
				wait := func(applied int) {
					err := h.WaitStatus(waitCtx(b), func(st []InstanceStatus) bool {
						return h.Reloads().Applied >= applied && Find(st, "i0").State == StateActive
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				wait(1)
				startApplies := noopApplies.Load()
				version := 0
				for b.Loop() {
					version++
					// Written whole and renamed over, as editors and tools
					// do: with a 1ms debounce, a write in place could be
					// read half-written.
					writeFile(b, tmp, benchComposition(n, version))
					if err := os.Rename(tmp, path); err != nil {
						b.Fatal(err)
					}
					wait(version + 1)
				}
				if got := noopApplies.Load() - startApplies; got != int64(version) {
					b.Fatalf("%d applies for %d reloads: unchanged instances were restarted", got, version)
				}
			})
		}
	}
}

// BenchmarkApply measures Apply alone (validate, diff, restart one
// instance) on a parsed composition, with 1 and 100 instances.
func BenchmarkApply(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			h := newHost(b, nil)
			versions := [2]*Composition{parse(b, benchComposition(n, 0)), parse(b, benchComposition(n, 1))}
			ctx := context.Background()
			if err := h.Update(ctx, versions[0]); err != nil {
				b.Fatal(err)
			}
			start := noopApplies.Load()
			i := 0
			for b.Loop() {
				i++
				if err := h.Update(ctx, versions[i%2]); err != nil {
					b.Fatal(err)
				}
			}
			if got := noopApplies.Load() - start; got != int64(i) {
				b.Fatalf("%d applies for %d reloads: unchanged instances were restarted", got, i)
			}
		})
	}
}

// BenchmarkParseComposition measures parsing (the layers, positions,
// expansion) of a 100-entry composition.
func BenchmarkParseComposition(b *testing.B) {
	data := []byte(benchComposition(100, 1))
	for b.Loop() {
		if _, err := ParseComposition("bench.yml", data, nil); err != nil {
			b.Fatal(err)
		}
	}
}
