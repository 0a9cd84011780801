package app

import (
	"context"
	"sync"

	"github.com/dsh-host/dsh-host/host"
)

// watchBuffer is how many changes a follower may be behind before the
// next ones are dropped (and counted).
const watchBuffer = 64

// Watch follows the host's status changes until ctx ends.
func (l *Local) Watch(ctx context.Context) (<-chan StatusEvent, error) {
	return follow(ctx, watchBuffer, l.Host.OnStatus), nil
}

// follow relays what subscribe reports into a channel of size n, closed
// once ctx ends. A report that finds the channel full is dropped and
// counted in the next one that fits: the host's hooks never wait for a
// follower.
func follow(ctx context.Context, n int, subscribe func(func(host.InstanceStatus)) func()) <-chan StatusEvent {
	out := make(chan StatusEvent, n)
	var mu sync.Mutex
	closed, dropped := false, 0
	remove := subscribe(func(st host.InstanceStatus) {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return
		}
		select {
		case out <- StatusEvent{Instance: st, Dropped: dropped}:
			dropped = 0
		default:
			dropped++
		}
	})
	context.AfterFunc(ctx, func() {
		remove()
		mu.Lock()
		defer mu.Unlock()
		closed = true
		close(out)
	})
	return out
}
