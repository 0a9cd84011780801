package gateway

// What the gateway logs of go-sdk, and its tallies: one line per
// interval for a flood of alike events.

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// sdkLogger is the logger handed to go-sdk: the gateway's, with go-sdk's
// routine records demoted to debug.
func (g *Gateway) sdkLogger() *slog.Logger {
	return slog.New(quietInfo{g.logger.Handler(), g.undelivered, g.uninitialized})
}

// quietInfo demotes go-sdk's info records (every session connecting and
// disconnecting) to debug, so that the gateway's own log stays readable,
// and counts its per-session warnings of an undelivered notification into
// undelivered instead of writing them: go-sdk writes one per session
// without a GET stream, 40,000 lines for one change with 40,000 sessions.
// Its errors about a client's requests out of order are counted into
// outOfOrder: a client without a token could otherwise write one line per
// request.
type quietInfo struct {
	slog.Handler
	undelivered, outOfOrder *tally
}

// outOfOrder reports whether msg is one of go-sdk's error records about a
// client's requests sent out of order: the client's fault, and answered
// with an error already.
func outOfOrder(msg string) bool {
	switch msg {
	case "method invalid during initialization",
		"initialized before initialize",
		"duplicate initialized notification",
		"duplicate initialize request",
		"method removed in the new protocol":
		return true
	}
	return false
}

func (q quietInfo) Enabled(ctx context.Context, l slog.Level) bool {
	return q.Handler.Enabled(ctx, demote(l))
}

func (q quietInfo) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn && strings.HasPrefix(r.Message, "calling notifications/") {
		q.undelivered.Add()
		return nil
	}
	if r.Level == slog.LevelError && outOfOrder(r.Message) {
		q.outOfOrder.Add()
		return nil
	}
	r.Level = demote(r.Level)
	return q.Handler.Handle(ctx, r)
}

func (q quietInfo) WithAttrs(as []slog.Attr) slog.Handler {
	return quietInfo{q.Handler.WithAttrs(as), q.undelivered, q.outOfOrder}
}
func (q quietInfo) WithGroup(name string) slog.Handler {
	return quietInfo{q.Handler.WithGroup(name), q.undelivered, q.outOfOrder}
}

// tallyInterval is the shortest time between two log lines of one tally.
const tallyInterval = 5 * time.Second

// tally counts repeated events (refused connections, undelivered
// notifications) and logs them as one line per interval with the number
// since the last line, so that a flood cannot flood the log.
type tally struct {
	emit func(n int)

	mu       sync.Mutex
	interval time.Duration
	n        int
	timer    *time.Timer // pending line; nil when none
	stopped  bool
}

func newTally(interval time.Duration, emit func(n int)) *tally {
	return &tally{interval: interval, emit: emit}
}

// Add counts one event; its line is written at most interval later.
func (t *tally) Add() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.n++
	if t.timer == nil {
		t.timer = time.AfterFunc(t.interval, t.flush)
	}
}

func (t *tally) flush() {
	t.mu.Lock()
	n := t.n
	t.n, t.timer = 0, nil
	t.mu.Unlock()
	if n > 0 {
		t.emit(n)
	}
}

// Stop writes the pending count now and counts nothing more.
func (t *tally) Stop() {
	t.mu.Lock()
	t.stopped = true
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	n := t.n
	t.n = 0
	t.mu.Unlock()
	if n > 0 {
		t.emit(n)
	}
}

// setInterval changes the interval of the lines to come (tests).
func (t *tally) setInterval(d time.Duration) {
	t.mu.Lock()
	t.interval = d
	t.mu.Unlock()
}

func demote(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}
