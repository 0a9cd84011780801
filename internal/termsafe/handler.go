package termsafe

import (
	"context"
	"encoding"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
)

// Handler wraps a log handler that writes to a terminal: the message and
// every string-like attribute value (strings, errors, byte slices, text
// marshalers, anything else formatted with %+v, inside groups too) reach it
// escaped (Escape). Numbers, booleans, times and durations pass unchanged,
// and so do keys, which the program chooses. A server's stderr line logged
// as an attribute is therefore shown, not executed.
//
// The wrapped handler's own escape sequences (tint's colours) are its own and
// stay. Because a colouring handler such as tint turns the text `\x1b` of a
// quoted value back into ESC, a literal `\x1b` in a value is written with its
// backslash escaped (`\u005cx1b`).
type Handler struct {
	next slog.Handler
}

// NewHandler returns next behind the escaping.
func NewHandler(next slog.Handler) *Handler { return &Handler{next: next} }

// Enabled reports what the wrapped handler does.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle passes r on with its message and attributes escaped.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, logSafe(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(escapeAttr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs escapes attrs, which the wrapped handler may format at once.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	esc := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		esc[i] = escapeAttr(a)
	}
	return &Handler{next: h.next.WithAttrs(esc)}
}

// WithGroup opens a group on the wrapped handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name)}
}

// logSafe is Escape for a log value; see Handler for the `\x1b` case.
func logSafe(s string) string {
	return strings.ReplaceAll(Escape(s), `\x1b`, `\u005cx1b`)
}

func escapeAttr(a slog.Attr) slog.Attr {
	return slog.Attr{Key: a.Key, Value: escapeValue(a.Value.Resolve())}
}

func escapeValue(v slog.Value) slog.Value {
	switch v.Kind() {
	case slog.KindString:
		return slog.StringValue(logSafe(v.String()))
	case slog.KindGroup:
		attrs := v.Group()
		esc := make([]slog.Attr, len(attrs))
		for i, a := range attrs {
			esc[i] = escapeAttr(a)
		}
		return slog.GroupValue(esc...)
	case slog.KindAny:
		return escapeAny(v.Any())
	}
	return v
}

// escapeAny turns an arbitrary value into the text a handler would print for
// it, escaped. An error stays an error (handlers colour errors), with an
// escaped message.
func escapeAny(x any) (v slog.Value) {
	// Formatting an arbitrary value may panic (a nil pointer behind an
	// interface); show it as the handlers in log/slog do.
	defer func() {
		if r := recover(); r != nil {
			v = slog.StringValue(logSafe(fmt.Sprintf("!PANIC: %v", r)))
		}
	}()
	switch x := x.(type) {
	case nil:
		return slog.AnyValue(nil)
	case error:
		return slog.AnyValue(escapedError{err: x, msg: logSafe(x.Error())})
	case encoding.TextMarshaler:
		b, err := x.MarshalText()
		if err != nil {
			return slog.StringValue(logSafe("!ERROR:" + err.Error()))
		}
		return slog.StringValue(logSafe(string(b)))
	case []byte:
		return slog.StringValue(logSafe(string(x)))
	}
	if rv := reflect.ValueOf(x); rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8 {
		return slog.StringValue(logSafe(string(rv.Bytes())))
	}
	return slog.StringValue(logSafe(fmt.Sprintf("%+v", x)))
}

// escapedError is an error whose message is escaped; errors.Is and As still
// see the original.
type escapedError struct {
	err error
	msg string
}

func (e escapedError) Error() string { return e.msg }
func (e escapedError) Unwrap() error { return e.err }
