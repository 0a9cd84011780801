package greeter_test

import (
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/host/hosttest"
	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
	_ "github.com/dsh-host/dsh-host/plugins/greeter"
)

func TestMain(m *testing.M) { leaks.VerifyTestMain(m) }

// TestGreeterThroughHost runs the plugin as the binary does: from a
// composition, on a host, called through the registry; a changed config
// restarts it with the new greeting, and a removed entry takes the tool away.
func TestGreeterThroughHost(t *testing.T) {
	h := hosttest.Start(t, "plugins: []\n")

	steps := []struct {
		name, composition, args, want string
		wantErr                       bool
	}{
		{"default greeting", "plugins:\n  - id: hi\n    name: greeter\n", `{"name":"Ada"}`, "Hello, Ada!", false},
		{"configured greeting", "plugins:\n  - id: hi\n    name: greeter\n    config:\n      greeting: Hej\n", `{"name":"Ada"}`, "Hej, Ada!", false},
		{"arguments of the wrong type", "plugins:\n  - id: hi\n    name: greeter\n    config:\n      greeting: Hej\n", `{"name":1}`, "", true},
		{"entry removed", "plugins: []\n", `{"name":"Ada"}`, "", true},
	}
	for _, st := range steps {
		h.Apply(st.composition)
		res := h.Call("greet", st.args)
		if st.wantErr {
			if res.Err == nil {
				t.Errorf("%s: got %v, want an error", st.name, res.Content)
			}
			continue
		}
		if res.Err != nil || len(res.Content) != 1 || res.Content[0].Text != st.want || res.Value != st.want {
			t.Errorf("%s: got %+v, want %q", st.name, res, st.want)
		}
	}
}

// TestGreeterConfigIsStrict: an unknown key is an error naming it, before
// anything starts.
func TestGreeterConfigIsStrict(t *testing.T) {
	c, err := host.ParseComposition("composition.yml", []byte("plugins:\n  - id: hi\n    name: greeter\n    config:\n      greting: Hej\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = host.Check(c)
	if err == nil || !strings.Contains(err.Error(), "greting") || !strings.Contains(err.Error(), "composition.yml:5") {
		t.Errorf("Check = %v, want an error naming greting at composition.yml:5", err)
	}
}

// TestTwoGreetersAreAConfigError: the tool name is claimed, so a second
// greeter entry is refused with both entries named, before anything starts
// (no race over which one gets the name).
func TestTwoGreetersAreAConfigError(t *testing.T) {
	c, err := host.ParseComposition("composition.yml", []byte("plugins:\n  - {id: a, name: greeter}\n  - {id: b, name: greeter}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `composition.yml:3: entry "b": tool "greet" is already claimed by entry "a" (composition.yml:2)`
	if err := host.Check(c); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Check = %v, want %q", err, want)
	}
}
