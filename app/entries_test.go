package app_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// TestSetDisabled: disabling an entry edits its line of the file (a
// comment and every other line kept) and the host disposes it; enabling
// it again starts it; an id the file does not hold, or holds in flow
// style, is refused with nothing written.
func TestSetDisabled(t *testing.T) {
	composition := "# my servers\n" + strings.Replace(fixtureComposition(t, nil), "  - id: fx\n", "  - id: fx # the fixture\n", 1) +
		"  - {id: flow, name: mcp-client, disabled: true, config: {serverName: flow, transport: stdio, command: nope}}\n"
	both(t, composition, func(t *testing.T, e *env) {
		ctx := t.Context()
		res, err := e.SetDisabled(ctx, app.EntryRequest{ID: "fx", Disabled: true})
		if err != nil || res.Error != "" {
			t.Fatalf("disable fx: %+v, %v", res, err)
		}
		if fx := host.Find(res.Instances, "fx"); fx.State != host.StateDisabled {
			t.Errorf("after disabling, fx is %s", fx.State)
		}
		b, _ := os.ReadFile(e.File)
		want := strings.Replace(composition, "  - id: fx # the fixture\n", "  - id: fx # the fixture\n    disabled: true\n", 1)
		if string(b) != want {
			t.Errorf("the file after disabling fx:\n%s\nwant\n%s", b, want)
		}
		res, err = e.SetDisabled(ctx, app.EntryRequest{ID: "fx", Disabled: false})
		if err != nil || res.Error != "" {
			t.Fatalf("enable fx: %+v, %v", res, err)
		}
		if fx := host.Find(res.Instances, "fx"); fx.State != host.StateActive {
			t.Errorf("after enabling, fx is %s", fx.State)
		}
		b, _ = os.ReadFile(e.File)
		if !strings.Contains(string(b), "  - id: fx # the fixture\n    disabled: false\n") || !strings.HasPrefix(string(b), "# my servers\n") {
			t.Errorf("the file after enabling fx:\n%s", b)
		}
		before, _ := os.ReadFile(e.File)
		for _, id := range []string{"nope", "flow"} {
			if _, err := e.SetDisabled(ctx, app.EntryRequest{ID: id, Disabled: false}); err == nil || !strings.Contains(err.Error(), id) {
				t.Errorf("%s: %v; want an error naming it", id, err)
			}
		}
		if after, _ := os.ReadFile(e.File); string(after) != string(before) {
			t.Errorf("a refused edit changed the file:\n%s", after)
		}
	})
}

// TestSetDisabledConcurrent: front ends disabling entries at once each
// read, edit and write the file: none's edit is lost to another's write.
func TestSetDisabledConcurrent(t *testing.T) {
	fx := mcptest.FixtureBinary(t)
	composition := "plugins:\n"
	var ids []string
	for i := range 8 {
		id := fmt.Sprintf("b%d", i)
		ids = append(ids, id)
		composition += fmt.Sprintf("  - id: %s\n    name: mcp-client\n    config:\n      serverName: %s\n      transport: stdio\n      command: %q\n      args: [-crash-on-start]\n      reconnect: {enabled: false}\n", id, id, fx)
	}
	h, file := start(t, composition)
	e := &app.Local{Host: h, File: file}
	{
		var wg sync.WaitGroup
		for _, id := range ids {
			wg.Go(func() {
				if _, err := e.SetDisabled(t.Context(), app.EntryRequest{ID: id, Disabled: true}); err != nil {
					t.Errorf("disable %s: %v", id, err)
				}
			})
		}
		wg.Wait()
		b, _ := os.ReadFile(e.File)
		if n := strings.Count(string(b), "disabled: true"); n != len(ids) {
			t.Errorf("%d of %d entries disabled in the file:\n%s", n, len(ids), b)
		}
	}
}
