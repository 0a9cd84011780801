package host

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// factsConfig is the config of test-facts, a plugin that publishes what
// its config says through the Scope's typed setters.
type factsConfig struct {
	Server    string `yaml:"server"`
	Lazy      bool   `yaml:"lazy"`
	Endpoint  string `yaml:"endpoint"`
	Dormant   bool   `yaml:"dormant"`
	LastError string `yaml:"lastError"`
	Sandbox   string `yaml:"sandbox"`
	Fail      bool   `yaml:"fail"`
	// FailAs fails Apply with this error, after the instance id as many
	// a plugin writes it.
	FailAs string `yaml:"failAs"`
	// FailRaw fails Apply with this error as it is.
	FailRaw string `yaml:"failRaw"`
}

func init() {
	Register(Definition[factsConfig]{
		Name: "test-facts",
		Claims: func(c *factsConfig) []Claim {
			return []Claim{{Kind: "serverName", Value: c.Server, Key: "server", ToolPrefix: "mcp__" + c.Server + "__"}}
		},
		Lazy: func(c *factsConfig) bool { return c.Lazy },
		Apply: func(s *Scope, c factsConfig) error {
			s.SetEndpoint(c.Endpoint)
			s.SetDormant(c.Dormant)
			s.SetLastError(c.LastError)
			s.SetSandbox(c.Sandbox)
			if c.Fail {
				return errors.New("told to fail")
			}
			if c.FailRaw != "" {
				return errors.New(c.FailRaw)
			}
			if c.FailAs != "" {
				return fmt.Errorf("%s: %s", s.ID(), c.FailAs)
			}
			return nil
		},
	})
}

// TestStatusFacts: what an instance publishes through its scope reaches
// Status as typed fields, and so do its claims and laziness, which the
// host knows from the config: a front end parses no Detail. A failed
// instance keeps what its run published, and its claims.
func TestStatusFacts(t *testing.T) {
	h := newHost(t, nil)
	var starting []InstanceStatus
	defer h.OnStatus(func(st InstanceStatus) {
		if st.State == StateStarting && st.ID != "test-builtin" {
			starting = append(starting, st)
		}
	})()
	apply(t, h, `plugins:
  - {id: web, name: test-facts, config: {server: w, endpoint: "http://127.0.0.1:1/mcp", sandbox: "landlock", lastError: "reconnecting"}}
  - {id: later, name: test-facts, config: {server: l, lazy: true, dormant: true}}
  - {id: broken, name: test-facts, config: {server: b, fail: true, lastError: "no answer"}}
  - {id: off, name: test-facts, disabled: true, config: {server: o, lazy: true}}
`)
	claim := func(s string) []Claim {
		return []Claim{{Kind: "serverName", Value: s, Key: "server", ToolPrefix: "mcp__" + s + "__"}}
	}
	want := map[string]InstanceStatus{
		"web":    {State: StateActive, Endpoint: "http://127.0.0.1:1/mcp", Sandbox: "landlock", LastError: "reconnecting", Claims: claim("w")},
		"later":  {State: StateActive, Lazy: true, Dormant: true, Claims: claim("l")},
		"broken": {State: StateFailed, LastError: "no answer", Claims: claim("b")},
		"off":    {State: StateDisabled, Lazy: true, Claims: claim("o")},
	}
	for id, w := range want {
		got := Find(h.Status(), id)
		got.ID, got.Plugin, got.Since, got.Err, got.Detail = "", "", w.Since, "", ""
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", id, diff)
		}
	}
	// Lazy is known before the instance starts, when a front end decides
	// whether to show it connecting.
	lazy := map[string]bool{}
	for _, st := range starting {
		lazy[st.ID] = st.Lazy
	}
	if diff := cmp.Diff(map[string]bool{"web": false, "later": true, "broken": false}, lazy); diff != "" {
		t.Errorf("Lazy in the starting notes (-want +got):\n%s", diff)
	}
	// A snapshot is the caller's to change.
	st := Find(h.Status(), "web")
	st.Claims[0].Value = "changed"
	if got := Find(h.Status(), "web").Claims[0].Value; got != "w" {
		t.Errorf("changing a snapshot's claims changed the host's: %q", got)
	}
}

// TestOwner: a tool's owner comes from the claims, by serverName and not
// by entry id, for a failed instance too; an exact tool claim beats a
// prefix, and the longest prefix wins.
func TestOwner(t *testing.T) {
	h := newHost(t, nil)
	apply(t, h, `plugins:
  - {id: github-entry, name: test-facts, config: {server: gh, fail: true}}
  - {id: nested, name: test-facts, config: {server: gh__x}}
  - {id: claimer, name: test-claimer, config: {serverName: c}}
`)
	for _, tc := range []struct{ tool, want string }{
		{"mcp__gh__issues", "github-entry"},
		{"mcp__gh__x__list", "nested"},
		{"claimer_tool", "claimer"},
		{"mcp__github-entry__issues", ""},
		{"mcp__gh", ""},
		{"", ""},
	} {
		got, ok := h.Owner(tc.tool)
		if got.ID != tc.want || ok != (tc.want != "") {
			t.Errorf("Owner(%q) = %q, %v; want %q", tc.tool, got.ID, ok, tc.want)
		}
	}
	if got, _ := h.Owner("mcp__gh__issues"); got.State != StateFailed || got.Err == "" {
		t.Errorf("the failed owner's status = %+v; want failed with its error", got)
	}
}

// TestFailedErrorNamesTheInstanceOnce: a plugin's error that starts with
// its instance id (clock: …) is the instance's error without it: the
// status and every front end name the instance before it, and "clock:
// clock: …" read twice. An error that only starts like the id keeps it.
func TestFailedErrorNamesTheInstanceOnce(t *testing.T) {
	h := newHost(t, nil)
	apply(t, h, `plugins:
  - {id: clock, name: test-facts, config: {server: c, failAs: "no zone"}}
  - {id: clo, name: test-facts, config: {server: d, failRaw: "clock: kept"}}
`)
	for id, want := range map[string]string{"clock": "no zone", "clo": "clock: kept"} {
		if st := Find(h.Status(), id); st.State != StateFailed || st.Err != want {
			t.Errorf("%s: %s %q, want failed %q", id, st.State, st.Err, want)
		}
	}
}
