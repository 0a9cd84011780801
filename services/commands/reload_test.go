package commands_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/settings"
	"github.com/dsh-host/dsh-host/services/tools"
)

// failConfig is the config of the test plugin below: tag is what its
// command, tool and resource answer; fail makes Apply fail after it
// registered all three, as a plugin written from docs/writing-plugins.md
// does when its new config turns out wrong half-way through.
type failConfig struct {
	Tag  string `yaml:"tag"`
	Fail bool   `yaml:"fail"`
}

func registerFailing(name string, overlap bool) {
	host.Register(host.Definition[failConfig]{
		Name:    name,
		Overlap: overlap,
		Inject:  []host.Dep{host.Require(tools.Key), host.Require(settings.Key), host.Optional(commands.Key), host.Require(resources.Key)},
		Apply: func(s *host.Scope, cfg failConfig) error {
			tag := cfg.Tag
			if _, err := host.Get(s, commands.Key).Register(s, commands.Command{Name: s.ID(),
				Handler: commands.Func(func(context.Context, string) (string, error) { return tag, nil })}); err != nil {
				return err
			}
			if _, err := host.Get(s, tools.Key).Register(s, tools.Func(s.ID()+"_tag", "The tag.",
				func(context.Context, struct{}) (any, error) { return tag, nil })); err != nil {
				return err
			}
			src, err := host.Get(s, resources.Key).Register(s, resources.Provider{Server: s.ID(),
				Read: func(context.Context, string, *tools.Channels) (*mcp.ReadResourceResult, error) {
					return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "tag://" + s.ID(), Text: tag}}}, nil
				}})
			if err != nil {
				return err
			}
			src.Set([]*mcp.Resource{{URI: "tag://" + s.ID(), Name: "tag"}}, nil)
			if cfg.Fail {
				return errors.New("the new config is wrong")
			}
			return nil
		},
	})
}

func init() {
	registerFailing("test-fails-after-registering", false)
	registerFailing("test-fails-after-registering-beside", true)
}

// TestFailedReloadKeepsTheOldInstance: a plugin whose Apply registers a
// command, a tool and a resource and then fails on its new config is put
// back on its previous config by a saved edit of the composition file:
// its command, tool and resource answer from the instance the host runs,
// an explicit reload that retries the failing config does the same, and
// the next edit applies.
func TestFailedReloadKeepsTheOldInstance(t *testing.T) {
	for _, plugin := range []string{"test-fails-after-registering", "test-fails-after-registering-beside"} {
		t.Run(plugin, func(t *testing.T) {
			var logs mcptest.SyncBuffer
			h := hosttest.Start(t, "plugins: []\n", hosttest.Logger(slog.New(slog.NewTextHandler(&logs, nil))))
			t.Cleanup(func() {
				// Nothing the host had to catch: the run it replaces is
				// disposed before the new config starts.
				if strings.Contains(logs.String(), "level=ERROR") {
					t.Errorf("errors logged:\n%s", logs.String())
				}
			})
			path := filepath.Join(t.TempDir(), "composition.yml")
			entry := func(cfg string) string {
				return "plugins:\n  - {id: clock, name: " + plugin + ", config: {" + cfg + "}}\n"
			}
			// Saved by rename: written in place, the watcher could read
			// the empty file between the truncate and the write, a failed
			// reload that waitReloads would count for the edit's.
			write := func(text string) {
				t.Helper()
				if err := os.WriteFile(path+".tmp", []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(path+".tmp", path); err != nil {
					t.Fatal(err)
				}
			}
			write(entry("tag: a"))
			base := h.Reloads().Applied + h.Reloads().Failed
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- h.Watch(ctx, path) }()
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Watch: %v", err)
				}
			})
			waitReloads := func(n int) {
				t.Helper()
				wctx, wcancel := context.WithTimeout(context.Background(), hosttest.WaitTimeout)
				defer wcancel()
				err := h.WaitStatus(wctx, func([]host.InstanceStatus) bool {
					r := h.Reloads()
					return r.Applied+r.Failed >= base+n
				})
				if err != nil {
					t.Fatalf("reload %d never came: %v; %+v", n, err, h.Reloads())
				}
			}
			answers := func(want string) {
				t.Helper()
				if st := host.Find(h.Status(), "clock"); st.State != host.StateActive {
					t.Fatalf("clock is %s: %s", st.State, st.Err)
				}
				if got := h.Command("/clock"); got.Error || got.Text != want {
					t.Errorf("/clock = %+v, want %q", got, want)
				}
				if got := h.Call("clock_tag", ""); got.Err != nil || hosttest.Text(got) != want {
					t.Errorf("clock_tag = %q (%v), want %q", hosttest.Text(got), got.Err, want)
				}
				reg, _ := host.Lookup(h.Host, resources.Key)
				res, err := reg.Read(context.Background(), "tag://clock", nil)
				if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != want {
					t.Errorf("tag://clock = %+v (%v), want %q", res, err, want)
				}
			}
			waitReloads(1)
			answers("a")

			write(entry("tag: b, fail: true"))
			waitReloads(2)
			st := host.Find(h.Status(), "clock")
			if st.Kept == "" || strings.Contains(st.Err, "failed too") {
				t.Errorf("after the failed edit clock is %+v; want its previous config kept", st)
			}
			answers("a")

			// An explicit reload (SIGHUP, `dsh-host reload`) retries the
			// new config, which fails again: the previous one is back.
			h.Reload()
			waitReloads(3)
			st = host.Find(h.Status(), "clock")
			if st.Kept == "" || strings.Contains(st.Err, "failed too") {
				t.Errorf("after the explicit reload clock is %+v; want its previous config kept", st)
			}
			answers("a")

			write(entry("tag: c"))
			waitReloads(4)
			answers("c")
			if strings.Contains(host.Find(h.Status(), "clock").Kept, "wrong") {
				t.Errorf("the good edit still says the bad one is kept: %+v", host.Find(h.Status(), "clock"))
			}
		})
	}
}
