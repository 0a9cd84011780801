package tools

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dsh-host/dsh-host/host"
)

// TestRenamingServerGrowsNothing: a server that renames its tools over and
// over (each list change unregisters every tool and registers new names)
// leaves nothing noted while nobody scrapes, under every policy, as long
// as nobody calls them; a called tool that left is noted once, and swept
// at the first scrape past forgetAfter.
func TestRenamingServerGrowsNothing(t *testing.T) {
	for _, l := range []ToolLabel{{}, {None: true}, {Limit: 3}} {
		t.Run(l.String(), func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m, err := NewMetrics(reg)
			if err != nil {
				t.Fatal(err)
			}
			clock := time.Unix(0, 0)
			m.now = func() time.Time { return clock }
			r := New(&Options{Metrics: m})
			s := host.NewScope(context.Background(), "server", nil)
			defer s.Dispose(time.Second)
			owner := host.NewScope(context.Background(), "metrics", nil)
			defer owner.Dispose(time.Second)
			if err := r.LabelTools(owner, l); err != nil {
				t.Fatal(err)
			}
			def := func(name string) Definition {
				return Definition{Name: name, Origin: Origin{Server: "hostile", RawName: name},
					Execute: func(context.Context, Call) (Output, error) { return Output{Value: "x"}, nil }}
			}
			for round := range 50 {
				var unregister []func()
				for i := range 20 {
					u, err := r.Register(s, def(fmt.Sprintf("mcp__hostile__t%d_%d", round, i)))
					if err != nil {
						t.Fatal(err)
					}
					unregister = append(unregister, u)
				}
				// The server's one stable tool stays, so the server
				// never goes.
				if round == 0 {
					if _, err := r.Register(s, def("mcp__hostile__stay")); err != nil {
						t.Fatal(err)
					}
				}
				for _, u := range unregister {
					u()
				}
			}
			if n := len(m.gone) + len(m.called); n != 0 {
				t.Errorf("%d tools noted without a call", n)
			}
			u, err := r.Register(s, def("mcp__hostile__called"))
			if err != nil {
				t.Fatal(err)
			}
			r.Execute(context.Background(), Caller{Kind: "test"}, "mcp__hostile__called", nil)
			u()
			wantNoted := 1
			if l.None {
				wantNoted = 0 // no series of its own: the server's stay
			}
			if len(m.gone) != wantNoted {
				t.Errorf("a called tool that left: %d noted, want %d", len(m.gone), wantNoted)
			}
			clock = clock.Add(forgetAfter)
			if _, err := reg.Gather(); err != nil {
				t.Fatal(err)
			}
			if len(m.gone) != 0 || (!l.None && len(m.called) != 0) {
				t.Errorf("after a scrape: %d noted, %d called", len(m.gone), len(m.called))
			}
		})
	}
}
