package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// overlapConfig drives test-overlap: what its instance does once applied.
type overlapConfig struct {
	ServerName string `yaml:"serverName"`
	Version    string `yaml:"version"`
	// Mode: "" gets ready, "fail-apply" fails in Apply, "fail-ready"
	// reports failure after Apply, "silent" never says anything, "gate"
	// gets ready once readyGate is closed.
	Mode string `yaml:"mode"`
}

// readyGate holds test-overlap (mode gate) and test-ready-provider
// instances back from Ready until it is closed.
var readyGate atomic.Pointer[chan struct{}]

func init() {
	Register(Definition[overlapConfig]{
		Name:         "test-overlap",
		ReportsReady: true,
		Overlap:      true,
		Claims: func(c *overlapConfig) []Claim {
			return []Claim{{Kind: "serverName", Value: c.ServerName, Key: "serverName"}}
		},
		Apply: func(s *Scope, c overlapConfig) error {
			rec.add("apply %s %s staged=%v", s.ID(), c.Version, s.Staged())
			s.OnDispose("record", func() error { rec.add("dispose %s %s", s.ID(), c.Version); return nil })
			s.OnLive(func() { rec.add("live %s %s", s.ID(), c.Version) })
			switch c.Mode {
			case "fail-apply":
				return errors.New("told to fail in apply")
			case "fail-ready":
				s.Go("fail", func(context.Context) { s.Fail(errors.New("told to fail after apply")) })
			case "silent":
			case "gate":
				g := readyGate.Load()
				s.Go("ready", func(ctx context.Context) {
					select {
					case <-*g:
						s.Ready()
					case <-ctx.Done():
					}
				})
			default:
				s.Ready() // during Apply: counts when Apply returns
			}
			return nil
		},
	})
	Register(Definition[providerConfig]{
		Name:   "test-config-consumer",
		Inject: []Dep{Require(testKey)},
		Apply: func(s *Scope, c providerConfig) error {
			rec.add("apply %s %s %s", s.ID(), c.Greeting, Get(s, testKey).greeting)
			if c.Fail {
				return errors.New("consumer told to fail")
			}
			return nil
		},
	})
	Register(Definition[providerConfig]{
		Name:         "test-ready-provider",
		Provides:     []AnyKey{testKey},
		ReportsReady: true,
		Apply: func(s *Scope, c providerConfig) error {
			rec.add("apply %s %s", s.ID(), c.Greeting)
			s.OnDispose("record", func() error { rec.add("dispose %s %s", s.ID(), c.Greeting); return nil })
			if err := Provide(s, testKey, &greeter{c.Greeting}); err != nil {
				return err
			}
			g := readyGate.Load()
			s.Go("ready", func(ctx context.Context) {
				select {
				case <-*g:
					rec.add("ready %s %s", s.ID(), c.Greeting)
					s.Ready()
				case <-ctx.Done():
				}
			})
			return nil
		},
	})
}

func overlapYAML(version, mode string) string {
	return "plugins:\n  - id: srv\n    name: test-overlap\n    config: {serverName: fx, version: " + version + ", mode: " + mode + "}\n"
}

func claimHolder(h *Host, value string) *Scope {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.claims[Claim{Kind: "serverName", Value: value}]
}

func outcome(h *Host, id string) Outcome {
	for _, o := range h.Reloads().Outcomes {
		if o.ID == id {
			return o
		}
	}
	return Outcome{}
}

// An edit of an entry whose plugin overlaps starts the new instance
// beside the old one, staged; once ready it goes live, takes the claim,
// and only then is the old one disposed.
func TestOverlapSwapsOnceReady(t *testing.T) {
	h := newHost(t, nil)
	apply(t, h, overlapYAML("v1", `""`))
	old := scopes(h)["srv"]
	rec.take()

	apply(t, h, overlapYAML("v2", `""`))
	cur := scopes(h)["srv"]
	if cur == old {
		t.Fatal("the entry still runs its old scope after a good edit")
	}
	<-old.Context().Done() // retired, then disposed once drained
	if got := claimHolder(h, "fx"); got != cur {
		t.Errorf("serverName claim held by %v, want the new run", got)
	}
	if !cur.Serving() || old.Serving() {
		t.Errorf("serving: new %v, old %v; want true, false", cur.Serving(), old.Serving())
	}
	waitEvents(t, "dispose srv v1")
	got := rec.take()
	want := []string{"apply srv v2 staged=true", "live srv v2", "dispose srv v1"}
	if !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if o := outcome(h, "srv"); o.Result != "restarted" {
		t.Errorf("outcome %+v, want restarted", o)
	}
	if st := Find(h.Status(), "srv"); st.State != StateActive || st.Kept != "" {
		t.Errorf("status %+v, want active, nothing kept", st)
	}
}

// A new instance that fails (in Apply, after it, or by saying nothing
// within the ready timeout) is disposed; the old one keeps running
// untouched and Status says why. A later good edit is tried again.
func TestOverlapKeepsTheOldOneWhenTheNewFails(t *testing.T) {
	// Only the silent instance meets the ready timeout: the others fail on
	// their own, and a short timeout could beat fail-ready's goroutine on a
	// loaded machine and fail it for the wrong reason.
	for _, tc := range []struct {
		mode, why string
		timeout   time.Duration
	}{
		{"fail-apply", "told to fail in apply", time.Minute},
		{"fail-ready", "told to fail after apply", time.Minute},
		{"silent", "not ready within", 200 * time.Millisecond},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			h := newHost(t, &Options{ReadyTimeout: tc.timeout})
			apply(t, h, overlapYAML("v1", `""`))
			old := scopes(h)["srv"]
			rec.take()

			var notes []InstanceStatus
			var notesMu sync.Mutex
			off := h.OnStatus(func(st InstanceStatus) {
				notesMu.Lock()
				notes = append(notes, st)
				notesMu.Unlock()
			})
			apply(t, h, overlapYAML("v2", tc.mode))
			off()
			notesMu.Lock()
			if len(notes) != 1 || notes[0].ID != "srv" || notes[0].State != StateActive || !strings.Contains(notes[0].Kept, tc.why) {
				t.Errorf("OnStatus got %+v, want one note: srv active, kept", notes)
			}
			notesMu.Unlock()
			if cur := scopes(h)["srv"]; cur != old {
				t.Fatal("the old run was replaced by one that failed")
			}
			if old.Context().Err() != nil || !old.Serving() {
				t.Fatal("the old run was disturbed")
			}
			if got := claimHolder(h, "fx"); got != old {
				t.Errorf("serverName claim held by %v, want the old run", got)
			}
			st := Find(h.Status(), "srv")
			if st.State != StateActive || !strings.HasPrefix(st.Kept, "kept the previous config: the new one failed: ") || !strings.Contains(st.Kept, tc.why) {
				t.Errorf("status %+v, want active, kept because %q", st, tc.why)
			}
			if o := outcome(h, "srv"); o.Result != "kept" || !strings.Contains(o.Why, tc.why) {
				t.Errorf("outcome %+v, want kept: %s", o, tc.why)
			}
			events := rec.take()
			if !slices.Contains(events, "dispose srv v2") || slices.Contains(events, "dispose srv v1") || slices.Contains(events, "live srv v2") {
				t.Errorf("events %q: want v2 disposed without going live, v1 untouched", events)
			}

			// The same file again changes nothing; an edit is tried.
			apply(t, h, overlapYAML("v2", tc.mode))
			if n := len(rec.take()); n != 0 {
				t.Errorf("an unchanged file started something")
			}
			apply(t, h, overlapYAML("v3", `""`))
			<-old.Context().Done()
			if st := Find(h.Status(), "srv"); st.State != StateActive || st.Kept != "" {
				t.Errorf("after a good edit: %+v, want active, nothing kept", st)
			}
		})
	}
}

// The old instance is disposed only once the calls that entered it have
// left; a call that comes after the drain is refused, to be sent to the
// new instance.
func TestOverlapDrainsCallsInFlight(t *testing.T) {
	h := newHost(t, nil)
	apply(t, h, overlapYAML("v1", `""`))
	old := scopes(h)["srv"]
	if !old.Enter() {
		t.Fatal("a serving scope refused a call")
	}
	apply(t, h, overlapYAML("v2", `""`))
	if old.Context().Err() != nil {
		t.Fatal("the old run was disposed with a call in flight")
	}
	if !old.Retired() {
		t.Fatal("the old run is not retired after the swap")
	}
	if old.Enter() {
		t.Error("a retired scope accepted a new call")
	}
	old.Leave()
	<-old.Context().Done()
}

// Shutdown while a new instance waits for its readiness gives up on it
// without waiting for the ready timeout.
func TestOverlapShutdownWhileStaged(t *testing.T) {
	gate := make(chan struct{})
	readyGate.Store(&gate)
	t.Cleanup(func() { readyGate.Store(nil) })
	h := New(&Options{Logger: testLogger(t), LookupEnv: func(string) (string, bool) { return "", false }})
	apply(t, h, overlapYAML("v1", `""`))
	rec.take()
	done := make(chan error, 1)
	go func() { done <- h.Update(context.Background(), parse(t, overlapYAML("v2", "gate"))) }()
	waitEvents(t, "apply srv v2 staged=true")
	if err := h.Shutdown(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	<-done
	rec.take()
}

// A plugin that cannot overlap is disposed, started with its new config,
// and started again with the previous one when the new one fails.
func TestRestoreThePreviousConfig(t *testing.T) {
	h := newHost(t, nil)
	yaml := func(greeting string, fail bool) string {
		f := "false"
		if fail {
			f = "true"
		}
		return "plugins:\n  - id: p\n    name: test-provider\n    config: {greeting: " + greeting + ", fail: " + f + "}\n  - id: c\n    name: test-consumer\n"
	}
	apply(t, h, yaml("one", false))
	rec.take()
	apply(t, h, yaml("two", true))
	got := rec.take()
	want := []string{"dispose c", "dispose p", "apply p two", "dispose p", "apply p one", "apply c one"}
	if !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	st := Find(h.Status(), "p")
	if st.State != StateActive || !strings.Contains(st.Kept, "provider told to fail") {
		t.Errorf("status %+v, want active, kept", st)
	}
	if o := outcome(h, "p"); o.Result != "kept" {
		t.Errorf("outcome %+v, want kept", o)
	}
	// The previous config is the last one that was ready: a second bad
	// edit restores "one" again.
	apply(t, h, yaml("three", true))
	if got := rec.take(); !slices.Contains(got, "apply p one") {
		t.Errorf("events %q: want the last ready config (one) restored", got)
	}
}

// A changed provider that reports readiness lets its dependents start
// again only once it is ready.
func TestDependentsWaitForTheNewProvidersReadiness(t *testing.T) {
	gate := make(chan struct{})
	readyGate.Store(&gate)
	t.Cleanup(func() { readyGate.Store(nil) })
	open := make(chan struct{})
	close(open)
	readyGate.Store(&open)
	h := newHost(t, nil)
	yaml := func(greeting string) string {
		return "plugins:\n  - id: p\n    name: test-ready-provider\n    config: {greeting: " + greeting + "}\n  - id: c\n    name: test-consumer\n"
	}
	apply(t, h, yaml("one"))
	rec.take()
	readyGate.Store(&gate)
	done := make(chan error, 1)
	go func() { done <- h.Update(context.Background(), parse(t, yaml("two"))) }()
	if err := h.WaitStatus(waitCtx(t), func(st []InstanceStatus) bool {
		return Find(st, "p").State == StateStarting
	}); err != nil {
		t.Fatal(err)
	}
	if st := Find(h.Status(), "c"); st.State == StateActive {
		t.Fatalf("consumer %+v active before its provider is ready", st)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := rec.take()
	want := []string{"dispose c", "dispose p one", "apply p two", "ready p two", "apply c two"}
	if !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

// waitEvents waits until rec holds an event equal to want.
func waitEvents(t *testing.T, want string) {
	t.Helper()
	ctx := waitCtx(t)
	for {
		rec.mu.Lock()
		found := slices.Contains(rec.events, want)
		rec.mu.Unlock()
		if found {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no event %q", want)
		case <-time.After(time.Millisecond):
		}
	}
}

// An instance kept on its previous config that restarts because its
// provider changed starts that config again, not the one that failed.
func TestKeptConfigSurvivesAProviderRestart(t *testing.T) {
	h := newHost(t, nil)
	yaml := func(provider, consumer string, fail bool) string {
		return fmt.Sprintf("plugins:\n  - id: p\n    name: test-provider\n    config: {greeting: %s}\n  - id: c\n    name: test-config-consumer\n    config: {greeting: %s, fail: %v}\n", provider, consumer, fail)
	}
	apply(t, h, yaml("one", "v1", false))
	apply(t, h, yaml("one", "v2", true))
	if st := Find(h.Status(), "c"); st.State != StateActive || st.Kept == "" {
		t.Fatalf("consumer %+v, want active, kept", st)
	}
	rec.take()
	apply(t, h, yaml("two", "v2", true))
	if got := rec.take(); !slices.Contains(got, "apply c v1 two") || slices.Contains(got, "apply c v2 two") {
		t.Errorf("events %q: want the kept config v1 started on the new provider", got)
	}
	if st := Find(h.Status(), "c"); st.State != StateActive || !strings.Contains(st.Kept, "consumer told to fail") {
		t.Errorf("consumer %+v, want active, still kept", st)
	}
}

// TestReadinessWaitsForTheFirstStartOnly: Scope.Readiness (a gateway's
// /readyz) is false while an instance of the first composition is
// starting, true once it is ready, and stays true while a reload restarts
// an entry.
func TestReadinessWaitsForTheFirstStartOnly(t *testing.T) {
	gate := make(chan struct{})
	readyGate.Store(&gate)
	t.Cleanup(func() { readyGate.Store(nil) })
	h := newHost(t, nil)
	yaml := func(greeting string) string {
		return "plugins:\n  - id: p\n    name: test-ready-provider\n    config: {greeting: " + greeting + "}\n"
	}
	done := make(chan error, 1)
	go func() { done <- h.Update(context.Background(), parse(t, yaml("one"))) }()
	if err := h.WaitStatus(waitCtx(t), func(st []InstanceStatus) bool {
		return Find(st, "p").State == StateStarting
	}); err != nil {
		t.Fatal(err)
	}
	p := scopes(h)["p"]
	if ready, why := p.Readiness(); ready || why == "" {
		t.Errorf("Readiness while p starts: %v %q, want false with a reason", ready, why)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ready, why := p.Readiness(); !ready {
		t.Errorf("Readiness once p is ready: false (%q)", why)
	}

	again := make(chan struct{})
	readyGate.Store(&again)
	go func() { done <- h.Update(context.Background(), parse(t, yaml("two"))) }()
	if err := h.WaitStatus(waitCtx(t), func(st []InstanceStatus) bool {
		return Find(st, "p").State == StateStarting
	}); err != nil {
		t.Fatal(err)
	}
	if ready, why := scopes(h)["p"].Readiness(); !ready {
		t.Errorf("Readiness during a reload: false (%q), want true", why)
	}
	close(again)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rec.take()
}

// TestWaitReadinessWakesWhenTheFirstStartEnds: Scope.WaitReadiness (a
// gateway's first lists) waits while an instance of the first composition
// starts, bounded by its context, and returns once the composition is
// applied, which changes no instance's state.
func TestWaitReadinessWakesWhenTheFirstStartEnds(t *testing.T) {
	gate := make(chan struct{})
	readyGate.Store(&gate)
	t.Cleanup(func() { readyGate.Store(nil) })
	h := newHost(t, nil)
	done := make(chan error, 1)
	go func() {
		done <- h.Update(context.Background(), parse(t, "plugins:\n  - id: p\n    name: test-ready-provider\n    config: {greeting: one}\n"))
	}()
	if err := h.WaitStatus(waitCtx(t), func(st []InstanceStatus) bool {
		return Find(st, "p").State == StateStarting
	}); err != nil {
		t.Fatal(err)
	}
	p := scopes(h)["p"]
	short, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.WaitReadiness(short); err == nil {
		t.Error("WaitReadiness while p starts, with its context ended: nil, want the context's error")
	}
	waited := make(chan error, 1)
	go func() { waited <- p.WaitReadiness(waitCtx(t)) }()
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Errorf("WaitReadiness once the composition is applied: %v", err)
	}
	rec.take()
}

// TestReadinessWaitsForInstancesOfALaterWave: between two waves of the
// first start (a provider active, its consumer not yet started) nothing is
// starting, yet the composition is not up: Readiness says so, naming an
// entry not started yet. It once latched ready there, and a gateway started beside an MCP
// server said /readyz 200 with none of the server's tools.
func TestReadinessWaitsForInstancesOfALaterWave(t *testing.T) {
	open := make(chan struct{})
	close(open)
	readyGate.Store(&open)
	t.Cleanup(func() { readyGate.Store(nil) })
	h := newHost(t, nil)
	type seen struct {
		ready bool
		why   string
	}
	got := make(chan seen, 1)
	remove := h.OnStatus(func(st InstanceStatus) {
		if st.ID != "p" || st.State != StateActive {
			return
		}
		// Delivered before the next wave starts c.
		ready, why := scopes(h)["p"].Readiness()
		select {
		case got <- seen{ready, why}:
		default:
		}
	})
	defer remove()
	apply(t, h, "plugins:\n  - id: p\n    name: test-ready-provider\n    config: {greeting: one}\n  - id: c\n    name: test-consumer\n")
	// The builtin, started beside p, may still be starting then: the
	// reason names whichever entry the host meets first.
	if s := <-got; s.ready || !(strings.Contains(s.why, "not started yet") || strings.Contains(s.why, "is starting")) || !strings.HasPrefix(s.why, "entry ") {
		t.Errorf("Readiness once p is active and c not started yet: %v %q, want false, naming an entry not started yet or starting", s.ready, s.why)
	}
	if ready, why := scopes(h)["p"].Readiness(); !ready {
		t.Errorf("Readiness once the composition is applied: false (%q)", why)
	}
	rec.take()
}
