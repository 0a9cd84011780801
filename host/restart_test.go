package host

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestRestartReplacesLikeAnEdit: Restart runs the entry's same config
// anew, beside the old run for an overlapping plugin (the claim passes
// once the new run is live, then the old one goes); an unknown id and a
// disabled entry are errors naming the id and change nothing.
func TestRestartReplacesLikeAnEdit(t *testing.T) {
	h := newHost(t, nil)
	apply(t, h, overlapYAML("v1", `""`)+"  - {id: off, name: test-overlap, disabled: true, config: {serverName: off, version: v1}}\n")
	old := scopes(h)["srv"]
	rec.take()

	o, err := h.Restart(context.Background(), "srv")
	if err != nil || o.ID != "srv" || o.Result != "restarted" {
		t.Fatalf("Restart: %+v, %v; want srv restarted", o, err)
	}
	cur := scopes(h)["srv"]
	if cur == old || cur == nil {
		t.Fatal("the entry still runs its old scope after a restart")
	}
	<-old.Context().Done()
	waitEvents(t, "dispose srv v1")
	if got, want := rec.take(), []string{"apply srv v1 staged=true", "live srv v1", "dispose srv v1"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if got := claimHolder(h, "fx"); got != cur {
		t.Errorf("serverName claim held by %v, want the new run", got)
	}
	if st := Find(h.Status(), "srv"); st.State != StateActive || st.Kept != "" {
		t.Errorf("after the restart: %+v", st)
	}

	for id, want := range map[string]string{"nope": `no entry "nope"`, "off": `restart "off": the entry is disabled`} {
		if _, err := h.Restart(context.Background(), id); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Restart(%q): %v; want an error containing %q", id, err, want)
		}
	}
	if scopes(h)["srv"] != cur || len(rec.take()) != 0 {
		t.Error("a refused restart changed something")
	}
}
