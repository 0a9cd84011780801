package debounce

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
)

func TestMain(m *testing.M) {
	leaks.VerifyTestMain(m)
}

// The tests run in a synctest bubble, where time is virtual: the times they
// assert are exact.

// recorder records when its func is called, relative to begin.
type recorder struct {
	begin time.Time
	calls chan time.Duration
}

func newRecorder() *recorder {
	return &recorder{begin: time.Now(), calls: make(chan time.Duration, 100)}
}

func (r *recorder) fn() { r.calls <- time.Since(r.begin) }

// times returns the calls recorded so far.
func (r *recorder) times() []time.Duration {
	var out []time.Duration
	for {
		select {
		case d := <-r.calls:
			out = append(out, d)
		default:
			return out
		}
	}
}

// TestSchedule triggers at the given offsets and checks when the func runs.
func TestSchedule(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		var out []time.Duration
		for _, v := range n {
			out = append(out, time.Duration(v)*time.Millisecond)
		}
		return out
	}
	// every returns offsets from 0 every step ms, n of them.
	every := func(step, n int) []time.Duration {
		var out []time.Duration
		for i := range n {
			out = append(out, time.Duration(i*step)*time.Millisecond)
		}
		return out
	}
	tests := []struct {
		name           string
		delay, maxWait time.Duration
		triggers       []time.Duration
		want           []time.Duration
	}{
		{"one trigger", 100 * time.Millisecond, time.Second, ms(0), ms(100)},
		{"a burst is one call", 100 * time.Millisecond, time.Second, ms(0, 10, 50, 120), ms(220)},
		{"two bursts", 100 * time.Millisecond, time.Second, ms(0, 50, 300, 350), ms(150, 450)},
		// An event every 70ms for 2.24s: the maximum wait calls twice while
		// they last, the delay once after (filewatch's schedule).
		{"maximum wait", 100 * time.Millisecond, time.Second, every(70, 33), ms(1000, 2050, 2340)},
		{"no maximum", 100 * time.Millisecond, 0, every(70, 33), ms(2340)},
		{"maximum shorter than the delay", time.Second, 100 * time.Millisecond, ms(0, 50), ms(100)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRecorder()
				d := New(tt.delay, tt.maxWait, r.fn)
				defer d.Stop()
				for _, at := range tt.triggers {
					time.Sleep(at - time.Since(r.begin))
					d.Trigger()
				}
				time.Sleep(time.Hour)
				synctest.Wait()
				if diff := cmp.Diff(tt.want, r.times()); diff != "" {
					t.Errorf("call times (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// TestRetriggerAtTheDeadline re-arms the timer in the instant it expires:
// the func runs once, at the new deadline.
func TestRetriggerAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		d := New(100*time.Millisecond, time.Second, r.fn)
		defer d.Stop()
		d.Trigger()
		time.Sleep(100 * time.Millisecond)
		// The timer has expired; its func may not have run yet.
		d.Trigger()
		time.Sleep(time.Hour)
		synctest.Wait()
		got := r.times()
		if len(got) == 0 || len(got) > 2 || got[len(got)-1] != 200*time.Millisecond {
			t.Errorf("call times %v, want the last at 200ms and at most one before", got)
		}
	})
}

func TestStopCancelsAPendingCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		d := New(100*time.Millisecond, 0, r.fn)
		d.Trigger()
		time.Sleep(50 * time.Millisecond)
		d.Stop()
		d.Trigger() // ignored after Stop
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := r.times(); len(got) != 0 {
			t.Errorf("called at %v after Stop, want never", got)
		}
		d.Stop() // idempotent
	})
}

func TestStopWaitsForARunningCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release, entered := make(chan struct{}), make(chan struct{})
		d := New(10*time.Millisecond, 0, func() {
			close(entered)
			<-release
		})
		d.Trigger()
		<-entered
		stopped := make(chan struct{})
		go func() {
			d.Stop()
			close(stopped)
		}()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("Stop returned while the call was running")
		default:
		}
		close(release)
		<-stopped
	})
}

func TestSignal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := make(chan struct{}, 1)
		d := New(10*time.Millisecond, 0, Signal(c))
		defer d.Stop()
		for range 3 {
			d.Trigger()
			time.Sleep(time.Second) // each trigger is a burst of its own
		}
		// Three calls, one signal: the two unreceived coalesced.
		n := 0
		for len(c) > 0 {
			<-c
			n++
		}
		if n != 1 {
			t.Errorf("%d signals pending, want 1", n)
		}
	})
}

// TestTriggerAfter: a trigger with its own delay is due after it, sooner
// than the Debouncer's delay, and a plain Trigger after it postpones the
// call by the whole delay again.
func TestTriggerAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		d := New(100*time.Millisecond, time.Second, r.fn)
		defer d.Stop()
		d.TriggerAfter(10 * time.Millisecond)
		time.Sleep(time.Hour)
		synctest.Wait()
		d.TriggerAfter(10 * time.Millisecond)
		time.Sleep(5 * time.Millisecond)
		d.Trigger()
		time.Sleep(time.Hour)
		synctest.Wait()
		if got, want := r.times(), []time.Duration{10 * time.Millisecond, time.Hour + 105*time.Millisecond}; !slices.Equal(got, want) {
			t.Errorf("call times %v, want %v", got, want)
		}
	})
}
