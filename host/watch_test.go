package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// watch starts h.Watch on path in the background and waits for its first
// load. The returned stop ends the watch and waits for it.
func watch(t *testing.T, h *Host, path string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Watch(ctx, path) }()
	err := h.WaitStatus(waitCtx(t), func([]InstanceStatus) bool {
		select {
		case err := <-done:
			done <- err
			return true
		default:
		}
		return h.Reloads().Applied+h.Reloads().Failed > 0
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		cancel()
		t.Fatalf("Watch returned at once: %v", err)
	default:
	}
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// replaceFile saves data to path by renaming a temporary file over it, so
// that a reader never sees it half written.
func replaceFile(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".tmp"
	writeFile(t, tmp, data)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// waitReloads waits until cond holds for h.Reloads().
func waitReloads(t *testing.T, h *Host, cond func(ReloadStats) bool) {
	t.Helper()
	err := h.WaitStatus(waitCtx(t), func([]InstanceStatus) bool { return cond(h.Reloads()) })
	if err != nil {
		t.Fatalf("%v; reloads: %+v", err, h.Reloads())
	}
}

func TestWatchEditorSaves(t *testing.T) {
	const v1 = "plugins:\n  - {id: a, name: test-noop, config: {greeting: v1}}\n  - {id: b, name: test-noop}\n"
	const v2 = "plugins:\n  - {id: a, name: test-noop, config: {greeting: v2}}\n  - {id: b, name: test-noop}\n"
	saves := []struct {
		name string
		save func(t *testing.T, path, data string)
	}{
		{"write in place", func(t *testing.T, path, data string) { writeFile(t, path, data) }},
		{"rename over", func(t *testing.T, path, data string) {
			tmp := filepath.Join(filepath.Dir(path), ".composition.yml.swp")
			writeFile(t, tmp, data)
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"delete and create", func(t *testing.T, path, data string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			writeFile(t, path, data)
		}},
		{"truncate then write", func(t *testing.T, path, data string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for _, line := range strings.SplitAfter(data, "\n") {
				if _, err := f.WriteString(line); err != nil {
					t.Fatal(err)
				}
			}
		}},
	}
	for _, sv := range saves {
		t.Run(sv.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "composition.yml")
			writeFile(t, path, v1)
			// The debounce is long next to a save, so that a stalled
			// machine does not split one into a read of a half-written
			// file (a failed reload) and another (a rename waits 20ms
			// only, whatever the debounce).
			h := newHost(t, &Options{Debounce: time.Second})
			stop := watch(t, h, path)
			b := scopes(h)["b"]

			sv.save(t, path, v2)
			err := h.WaitStatus(waitCtx(t), func(st []InstanceStatus) bool {
				return h.Reloads().Applied == 2 && Find(st, "a").State == StateActive
			})
			if err != nil {
				t.Fatalf("%v; reloads %+v", err, h.Reloads())
			}
			stop()
			if err := h.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			want := []string{"apply a v1", "apply b hello", "dispose a", "apply a v2"}
			got := rec.take()
			if diff := cmp.Diff(sorted(want), sorted(got[:len(got)-2])); diff != "" {
				t.Errorf("events before shutdown (-want +got):\n%s", diff)
			}
			if st := h.Reloads(); st.Applied != 2 || st.Failed != 0 {
				t.Errorf("reloads = %+v; want the save applied exactly once, no failure", st)
			}
			if !b.disposedNow() || slices.Contains(got[:len(got)-2], "dispose b") {
				t.Errorf("events %q: b was touched before shutdown", got)
			}
		})
	}
}

func TestWatchBadFileChangesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "composition.yml")
	writeFile(t, path, "plugins:\n  - {id: a, name: test-noop, config: {greeting: v1}}\n")
	h := newHost(t, nil)
	watch(t, h, path)
	rec.take()
	before := scopes(h)

	// Renamed into place: written in place, a reload could read the
	// empty file between the truncate and the write and fail on that
	// first, with another error.
	replaceFile(t, path, "plugins:\n  - id: a\n    name: test-noop\n    config:\n      greting: v2\n")
	waitReloads(t, h, func(st ReloadStats) bool { return st.Failed == 1 })
	err := h.Reloads().LastError
	for _, w := range []string{path + ":5:", `entry "a"`, "greting"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("last error %v lacks %q", err, w)
		}
	}
	if got := rec.take(); len(got) != 0 {
		t.Errorf("a bad file touched instances: %q", got)
	}
	if diff := cmp.Diff(before, scopes(h), sameScope); diff != "" {
		t.Errorf("running set changed (-before +after):\n%s", diff)
	}

	// An empty file (an editor's truncate before its write) is bad too.
	writeFile(t, path, "")
	waitReloads(t, h, func(st ReloadStats) bool { return st.Failed == 2 })
	if got := rec.take(); len(got) != 0 {
		t.Errorf("an empty file touched instances: %q", got)
	}

	// The next good save applies.
	writeFile(t, path, "plugins:\n  - {id: a, name: test-noop, config: {greeting: v3}}\n")
	waitReloads(t, h, func(st ReloadStats) bool { return st.Applied == 2 })
	if diff := cmp.Diff([]string{"dispose a", "apply a v3"}, rec.take()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if h.Reloads().LastError != nil {
		t.Errorf("last error not cleared: %v", h.Reloads().LastError)
	}
}

func TestWatchFirstLoadError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "composition.yml")
	writeFile(t, path, "plugins:\n  - {id: a, name: test-nope}\n")
	h := newHost(t, nil)
	err := h.Watch(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), path+":2:") {
		t.Fatalf("Watch = %v; want the load error with file:line", err)
	}
}

// TestWatchReloadDuringSlowStart pins that a change arriving while an apply
// is still starting instances waits for it, and that the reload after it
// reads the file as it is then: the intermediate version is never applied.
func TestWatchReloadDuringSlowStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "composition.yml")
	writeFile(t, path, "plugins:\n  - {id: n, name: test-noop, config: {greeting: v1}}\n")
	h := newHost(t, nil)
	watch(t, h, path)

	gate := make(chan struct{})
	applyGate.Store(&gate)
	defer applyGate.Store(nil)
	writeFile(t, path, "plugins:\n  - {id: n, name: test-noop, config: {greeting: v1}}\n  - {id: s, name: test-slow}\n")
	err := h.WaitStatus(waitCtx(t), func(st []InstanceStatus) bool { return Find(st, "s").State == StateStarting })
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, "plugins:\n  - {id: n, name: test-noop, config: {greeting: v3}}\n  - {id: s, name: test-slow}\n")
	h.Reload() // must not block on the slow apply
	writeFile(t, path, "plugins:\n  - {id: n, name: test-noop, config: {greeting: v4}}\n  - {id: s, name: test-slow}\n")
	close(gate)
	err = h.WaitStatus(waitCtx(t), func(st []InstanceStatus) bool {
		return Find(st, "s").State == StateActive && rec.count("apply n v4") == 1
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := rec.count("apply n v3"); n != 0 {
		t.Errorf("the intermediate version was applied %d times", n)
	}
}

func TestReloadForcesReapply(t *testing.T) {
	path := filepath.Join(t.TempDir(), "composition.yml")
	writeFile(t, path, "plugins:\n  - {id: a, name: test-noop}\n")
	h := newHost(t, nil)
	watch(t, h, path)
	a := scopes(h)["a"]
	h.Reload()
	waitReloads(t, h, func(st ReloadStats) bool { return st.Applied == 2 })
	if scopes(h)["a"] != a {
		t.Error("a forced reload of an unchanged file restarted an instance")
	}
}

func TestDisposeLeavesNoGoroutine(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	h := New(&Options{Logger: testLogger(t)})
	apply(t, h, "plugins:\n  - {id: a, name: test-noop}\n  - {id: p, name: test-provider}\n  - {id: c, name: test-consumer}\n  - {id: f, name: test-fail}\n")
	apply(t, h, "plugins:\n  - {id: a, name: test-noop}\n")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, ignore)
}

func TestReloadRetriesFailedInstances(t *testing.T) {
	flakyFails.Store(true)
	defer flakyFails.Store(false)
	path := filepath.Join(t.TempDir(), "composition.yml")
	writeFile(t, path, "plugins:\n  - {id: f, name: test-flaky}\n  - {id: a, name: test-noop, config: {greeting: v1}}\n")
	h := newHost(t, nil)
	watch(t, h, path)
	if st := Find(h.Status(), "f"); st.State != StateFailed || st.Err != "server is down" {
		t.Fatalf("f = %+v; want failed", st)
	}
	flakyFails.Store(false)

	// A change on disk leaves the unchanged, failed instance alone.
	writeFile(t, path, "plugins:\n  - {id: f, name: test-flaky}\n  - {id: a, name: test-noop, config: {greeting: v2}}\n")
	waitReloads(t, h, func(st ReloadStats) bool { return st.Applied == 2 })
	if n := rec.count("apply f"); n != 1 {
		t.Errorf("f applied %d times after a file change; want once (at the start)", n)
	}

	// An explicit reload retries it, and only it.
	a := scopes(h)["a"]
	h.Reload()
	if err := h.WaitStatus(waitCtx(t), func(st []InstanceStatus) bool { return Find(st, "f").State == StateActive }); err != nil {
		t.Fatal(err)
	}
	if scopes(h)["a"] != a {
		t.Error("Reload restarted an instance that had not failed")
	}
}

func TestWatchAfterUpdateKeepsRunningOnBadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "composition.yml")
	writeFile(t, path, "plugins:\n  - {id: a, name: test-noop}\n")
	h := newHost(t, nil)
	c, err := ReadComposition(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	a := scopes(h)["a"]
	// The file goes bad before Watch starts: Watch keeps watching.
	writeFile(t, path, "plugins:\n  - {id: a, name: test-nope}\n")
	watch(t, h, path)
	if st := h.Reloads(); st.Failed != 1 || st.LastError == nil || !strings.Contains(st.LastError.Error(), path+":2:") {
		t.Errorf("reloads = %+v; want the bad file reported", st)
	}
	if scopes(h)["a"] != a {
		t.Error("a bad file touched the running instance")
	}
	writeFile(t, path, "plugins:\n  - {id: a, name: test-noop, config: {greeting: fixed}}\n")
	waitReloads(t, h, func(st ReloadStats) bool { return st.Applied == 1 })
	if !slices.Contains(rec.take(), "apply a fixed") {
		t.Error("the fixed file was not applied")
	}
}

func TestWatchBurstOfSavesEndsAtTheLast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "composition.yml")
	version := func(i int) string {
		return fmt.Sprintf("plugins:\n  - {id: a, name: test-noop, config: {greeting: v%d}}\n  - {id: b, name: test-noop}\n", i)
	}
	writeFile(t, path, version(0))
	h := newHost(t, &Options{Debounce: 5 * time.Millisecond})
	watch(t, h, path)
	b := scopes(h)["b"]
	const last = 30
	for i := 1; i <= last; i++ {
		replaceFile(t, path, version(i))
	}
	want := fmt.Sprintf("apply a v%d", last)
	if err := h.WaitStatus(waitCtx(t), func([]InstanceStatus) bool { return rec.count(want) == 1 }); err != nil {
		t.Fatal(err)
	}
	if st := h.Reloads(); st.Applied > last+1 || st.Failed != 0 {
		t.Errorf("reloads = %+v; want at most one per save, none failed", st)
	}
	if scopes(h)["b"] != b {
		t.Error("the unchanged instance was restarted during the burst")
	}
}

// TestWatchDebounceHasAMaximum rewrites the file without pause, faster than
// the debounce: with an hour-long debounce, only the maximum wait lets a
// reload through while the writes go on.
func TestWatchDebounceHasAMaximum(t *testing.T) {
	path := filepath.Join(t.TempDir(), "composition.yml")
	writeFile(t, path, "plugins:\n  - {id: a, name: test-noop, config: {greeting: v0}}\n")
	h := newHost(t, &Options{Debounce: time.Hour, DebounceMax: 20 * time.Millisecond})
	watch(t, h, path)

	stop := make(chan struct{})
	written := make(chan error, 1)
	go func() {
		for i := 1; ; i++ {
			select {
			case <-stop:
				written <- nil
				return
			default:
			}
			data := fmt.Sprintf("plugins:\n  - {id: a, name: test-noop, config: {greeting: v%d}}\n", i)
			if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
				written <- err
				return
			}
		}
	}()
	err := h.WaitStatus(waitCtx(t), func([]InstanceStatus) bool { return h.Reloads().Applied >= 2 })
	close(stop)
	if werr := <-written; werr != nil {
		t.Fatal(werr)
	}
	if err != nil {
		t.Fatalf("a file rewritten without pause was never reloaded: %v", err)
	}
}

// TestReloadTicketAnswersAfterTheEdit: a front end that edits the file
// and asks for a reload while a save's load is still applying the file as
// it was before gets its answer from a load that read its edit, not from
// the one under way (app's SetDisabled saw the entry still disabled).
func TestReloadTicketAnswersAfterTheEdit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "composition.yml")
	writeFile(t, path, "plugins:\n  - {id: n, name: test-noop, config: {greeting: v1}}\n")
	h := newHost(t, nil)
	watch(t, h, path)

	gate := make(chan struct{})
	applyGate.Store(&gate)
	defer applyGate.Store(nil)
	writeFile(t, path, "plugins:\n  - {id: n, name: test-noop, config: {greeting: v2}}\n  - {id: s, name: test-slow}\n")
	if err := h.WaitStatus(waitCtx(t), func(st []InstanceStatus) bool { return Find(st, "s").State == StateStarting }); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, "plugins:\n  - {id: n, name: test-noop, config: {greeting: v3}}\n  - {id: s, name: test-slow}\n")
	ticket, ok := h.RequestReload()
	if !ok || ticket == 0 {
		t.Fatalf("RequestReload = %d, %v", ticket, ok)
	}
	if th := h.Reloads().Through; th >= ticket {
		t.Fatalf("Through %d before the load that answers ticket %d", th, ticket)
	}
	close(gate)
	var applied int
	err := h.WaitStatus(waitCtx(t), func([]InstanceStatus) bool {
		if h.Reloads().Through < ticket {
			return false
		}
		applied = rec.count("apply n v3")
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if applied != 1 {
		t.Errorf("ticket %d answered with v3 applied %d times; want the edit applied by then", ticket, applied)
	}
	if next, _ := h.RequestReload(); next != ticket+1 {
		t.Errorf("the next ticket is %d, want %d", next, ticket+1)
	}
}

// TestReloadTicketDroppedWhenWatchEnds: a ticket asked of a Watch that ends
// before a load answers it is marked dropped, so a caller waiting on it
// (app's Reload, whose context may have no deadline) hears that no answer
// will come instead of waiting forever.
func TestReloadTicketDroppedWhenWatchEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "composition.yml")
	writeFile(t, path, "plugins:\n  - {id: n, name: test-noop}\n")
	h := newHost(t, nil)
	stop := watch(t, h, path)

	gate := make(chan struct{})
	applyGate.Store(&gate)
	defer applyGate.Store(nil)
	writeFile(t, path, "plugins:\n  - {id: n, name: test-noop}\n  - {id: s, name: test-slow}\n")
	if err := h.WaitStatus(waitCtx(t), func(st []InstanceStatus) bool { return Find(st, "s").State == StateStarting }); err != nil {
		t.Fatal(err)
	}
	// The worker is held in the save's load: the request is queued, then
	// Watch ends before the worker comes back for it.
	ticket, ok := h.RequestReload()
	if !ok {
		t.Fatal("RequestReload: no Watch")
	}
	stop()
	close(gate)
	err := h.WaitStatus(waitCtx(t), func([]InstanceStatus) bool {
		st := h.Reloads()
		return st.Through >= ticket || st.Dropped >= ticket
	})
	if err != nil {
		t.Fatalf("ticket %d neither answered nor dropped after Watch ended: %v", ticket, err)
	}
	if st := h.Reloads(); st.Through >= ticket {
		t.Errorf("ticket %d answered (Through %d) by a load that never ran", ticket, st.Through)
	}
}
