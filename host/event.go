package host

import (
	"context"
	"sync"
)

// hookList is an ordered, concurrency-safe list of handlers. Handlers run in
// registration order; removal is by identity and idempotent.
type hookList[H any] struct {
	mu      sync.RWMutex
	entries []*hookEntry[H]
}

type hookEntry[H any] struct{ fn H }

func (l *hookList[H]) add(s *Scope, label string, fn H) (remove func()) {
	e := &hookEntry[H]{fn: fn}
	l.mu.Lock()
	l.entries = append(l.entries, e)
	l.mu.Unlock()
	undo := func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for i, x := range l.entries {
			if x == e {
				l.entries = append(l.entries[:i:i], l.entries[i+1:]...)
				return
			}
		}
	}
	if s != nil {
		return s.Effect(label, undo)
	}
	var once sync.Once
	return func() { once.Do(undo) }
}

func (l *hookList[H]) snapshot() []H {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]H, len(l.entries))
	for i, e := range l.entries {
		out[i] = e.fn
	}
	return out
}

// Event is a typed, ordered notification: every handler sees every value,
// in registration order. The zero value is ready to use. An Event belongs to
// whoever emits it (usually a service); handlers bind to a scope and go away
// with it.
type Event[T any] struct {
	name  string
	hooks hookList[func(T)]
}

// NewEvent returns an event called name (the name labels handlers in logs and
// disposal traces).
func NewEvent[T any](name string) *Event[T] { return &Event[T]{name: name} }

// On registers fn. With a non-nil scope the handler is removed when the scope
// is disposed; remove may also be called earlier (it is idempotent).
func (e *Event[T]) On(s *Scope, fn func(T)) (remove func()) {
	return e.hooks.add(s, "on "+e.name, fn)
}

// Emit calls every handler with v, synchronously, in registration order.
func (e *Event[T]) Emit(v T) {
	for _, fn := range e.hooks.snapshot() {
		fn(v)
	}
}

// Next continues a waterfall with (possibly transformed) value v.
type Next[V any] func(ctx context.Context, v V) (V, error)

// WaterfallHandler transforms a value: it may change v before calling next,
// change what next returns, or not call next at all.
type WaterfallHandler[V any] func(ctx context.Context, v V, next Next[V]) (V, error)

// Waterfall is a typed middleware chain. The earlier-registered handler is
// the outer one: it runs first and sees the result of every later one.
// The zero value is ready to use.
type Waterfall[V any] struct {
	name  string
	hooks hookList[WaterfallHandler[V]]
}

// NewWaterfall returns a waterfall called name.
func NewWaterfall[V any](name string) *Waterfall[V] { return &Waterfall[V]{name: name} }

// On registers fn as the innermost handler so far. With a non-nil scope the
// handler is removed when the scope is disposed.
func (w *Waterfall[V]) On(s *Scope, fn WaterfallHandler[V]) (remove func()) {
	return w.hooks.add(s, "waterfall "+w.name, fn)
}

// Run passes v through every handler, outermost first, and finally through
// last (which may be nil: the value then comes back as it is).
func (w *Waterfall[V]) Run(ctx context.Context, v V, last Next[V]) (V, error) {
	handlers := w.hooks.snapshot()
	var step func(i int) Next[V]
	step = func(i int) Next[V] {
		return func(ctx context.Context, v V) (V, error) {
			if i == len(handlers) {
				if last == nil {
					return v, nil
				}
				return last(ctx, v)
			}
			return handlers[i](ctx, v, step(i+1))
		}
	}
	return step(0)(ctx, v)
}
