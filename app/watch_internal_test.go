package app

import (
	"context"
	"fmt"
	"testing"

	"github.com/dsh-host/dsh-host/host"
)

// TestFollowDropsAndCounts: a follower that does not read never holds up
// the host's hook: past the buffer, changes are dropped, and the next one
// delivered says how many were lost. Ending ctx closes the channel and
// unhooks.
func TestFollowDropsAndCounts(t *testing.T) {
	var hook func(host.InstanceStatus)
	removed := false
	subscribe := func(fn func(host.InstanceStatus)) func() {
		hook = fn
		return func() { removed = true }
	}
	ctx, cancel := context.WithCancel(t.Context())
	ch := follow(ctx, 4, subscribe)
	for i := range 10 {
		hook(host.InstanceStatus{ID: fmt.Sprint(i)}) // returns: nobody reads yet
	}
	for i := range 4 {
		if ev := <-ch; ev.Instance.ID != fmt.Sprint(i) || ev.Dropped != 0 {
			t.Errorf("event %d: %+v", i, ev)
		}
	}
	hook(host.InstanceStatus{ID: "next"})
	if ev := <-ch; ev.Instance.ID != "next" || ev.Dropped != 6 {
		t.Errorf("after the drops: %+v, want next with 6 dropped", ev)
	}
	cancel()
	if _, open := <-ch; open {
		t.Error("the channel is open after ctx ended")
	}
	hook(host.InstanceStatus{ID: "late"}) // a late change does not panic
	if !removed {
		t.Error("the hook was not removed")
	}
}
