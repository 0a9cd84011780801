package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
)

// Execute runs one call through the pipeline: pre-execute hooks, guards, the
// tool, output validation, render, post-execute hooks. ctx cancels it: a
// call whose ctx is done before dispatch never reaches the tool, and the
// tool's ctx is ctx itself. Nil or empty args become `{}`. Execute holds no
// lock while hooks or the tool run.
//
// Result.Err tells the outcomes apart: nil on success; errors.Is ErrRefused
// for a policy refusal (*RefusalError); errors.Is ErrUnknownTool for a name
// that is not registered or not visible to caller; errors.Is
// context.Canceled or context.DeadlineExceeded when ctx ended the call;
// errors.Is ErrInvalidArguments for arguments that are not one readable
// object or do not match the InputSchema (*ArgumentsError);
// errors.Is ErrInvalidOutput for a value that fails the OutputSchema; and a
// *ToolError (errors.As) wrapping what the tool returned.
//
// Finish hooks (OnFinish) see every call's end, refusals included.
func (r *Registry) Execute(ctx context.Context, caller Caller, name string, args json.RawMessage) Result {
	return r.run(ctx, caller, name, args, nil)
}

// Run is Execute of call (its Caller, Name and Args) with its back-channels
// (call.Channels): what the tool sends while it runs and who answers what
// it asks reach the caller through them.
func (r *Registry) Run(ctx context.Context, call Call) Result {
	return r.run(ctx, call.Caller, call.Name, call.Args, call.Channels)
}

func (r *Registry) run(ctx context.Context, caller Caller, name string, args json.RawMessage, ch *Channels) Result {
	if r.tracer != nil || r.metrics != nil {
		return r.observed(ctx, caller, name, args, ch)
	}
	return r.unobserved(ctx, caller, name, args, ch)
}

// unobserved is Run without telemetry.
func (r *Registry) unobserved(ctx context.Context, caller Caller, name string, args json.RawMessage, ch *Channels) Result {
	if fin := r.hookSet().finish; len(fin) > 0 {
		return r.finishing(ctx, fin, caller, name, args, ch)
	}
	return r.execute(ctx, caller, name, args, ch)
}

// execute is Run without the finish hooks.
func (r *Registry) execute(ctx context.Context, caller Caller, name string, args json.RawMessage, ch *Channels) Result {
	e, entered := r.enter(name)
	if e == nil {
		return errorResult(fmt.Errorf("%w %q", ErrUnknownTool, name))
	}
	if entered != nil {
		defer entered.Leave()
	}
	if !caller.Mask.Allows(name) {
		return errorResult(&RefusalError{Stage: StageMask, Tool: name, Reason: ErrUnknownTool})
	}
	if err := ctx.Err(); err != nil {
		return errorResult(canceledBeforeDispatch(ctx, name))
	}
	call := Call{Caller: caller, Name: name, Args: normalizeArgs(args), Channels: ch}
	hooks := e.hooksFor(r.hookSet())

	if len(hooks.pre) > 0 {
		// A separate variable, so that only calls with pre-execute hooks
		// pay for the heap copy the hooks' *Call needs.
		pc := new(Call)
		*pc = call
		for _, fn := range hooks.pre {
			if err := r.runPre(ctx, fn, pc); err != nil {
				return errorResult(r.refusal(ctx, StagePreExecute, name, err))
			}
			pc.Name, pc.Caller = name, caller
		}
		call = *pc
		call.Args = normalizeArgs(call.Args)
	}
	// After the pre-execute hooks: what the guards judge, and the schema
	// checks, is what the tool receives.
	if err := r.checkArgs(e, &call); err != nil {
		if !r.offered(caller, e) {
			// A tool hidden from the caller (a changed definition the
			// policy holds) answers with its guards' refusal: the schema's
			// error would quote the definition it may not see.
			for _, fn := range hooks.guard {
				if gerr := r.runGuard(ctx, fn, call); gerr != nil {
					return errorResult(r.refusal(ctx, StageGuard, name, gerr))
				}
			}
		}
		return errorResult(err)
	}
	for _, fn := range hooks.guard {
		if err := r.runGuard(ctx, fn, call); err != nil {
			return errorResult(r.refusal(ctx, StageGuard, name, err))
		}
	}
	if ctx.Err() != nil {
		return errorResult(canceledBeforeDispatch(ctx, name))
	}

	out, err := r.runTool(ctx, e, call)
	if err != nil {
		return errorResult(err)
	}
	if err := ctx.Err(); err != nil {
		// The caller gave up while the tool ran; the result reaches no one.
		return errorResult(fmt.Errorf("tool call %q aborted: %w", name, ctxErr(ctx)))
	}
	if e.output != nil {
		if err := validateOutput(e.output, name, out.Value); err != nil {
			return errorResult(err)
		}
	}
	res := Result{Value: out.Value, Content: out.Content, Failed: out.Failed}
	if res.Content == nil {
		if res.Content, err = r.render(e, res.Value); err != nil {
			return errorResult(err)
		}
	}

	if len(hooks.post) > 0 {
		pr := new(Result)
		*pr = res
		for _, fn := range hooks.post {
			before := *pr
			if err := r.runPost(ctx, fn, call, pr); err != nil {
				return errorResult(r.refusal(ctx, StagePostExecute, name, err))
			}
			pr.Err = nil
			// A replaced value invalidates whatever content described the
			// old one (the tool's projection included), unless the hook
			// also supplied content of its own.
			if pr.Content == nil || !sameValue(before.Value, pr.Value) && sameContent(before.Content, pr.Content) {
				if pr.Content, err = r.render(e, pr.Value); err != nil {
					return errorResult(err)
				}
			}
		}
		res = *pr
	}
	return res
}

// normalizeArgs turns absent arguments into an empty object.
func normalizeArgs(args json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(args)) == 0 {
		return json.RawMessage{'{', '}'}
	}
	return args
}

func canceledBeforeDispatch(ctx context.Context, name string) error {
	return fmt.Errorf("tool call %q canceled before dispatch: %w", name, ctxErr(ctx))
}

// ctxErr is ctx.Err() (so errors.Is finds context.Canceled or
// DeadlineExceeded) with the cancellation's cause, when one was given, also
// reachable and in the message.
func ctxErr(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("%w (%w)", err, cause)
	}
	return err
}

// refusal classifies a hook's error: the caller's own cancellation stays a
// cancellation, a hook's panic stays an internal error, anything else is a
// refusal at stage.
func (r *Registry) refusal(ctx context.Context, stage Stage, name string, err error) error {
	var p *hookPanic
	switch {
	case errors.As(err, &p):
		return err
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return fmt.Errorf("tool call %q canceled in %s: %w", name, stage, err)
	}
	return &RefusalError{Stage: stage, Tool: name, Reason: err}
}

// hookPanic is a panic recovered from a hook or render. The call fails
// closed: it is not a refusal, it is a bug in the hook.
type hookPanic struct {
	what  string
	tool  string
	value any
}

func (p *hookPanic) Error() string {
	return fmt.Sprintf("%s for %q panicked: %v", p.what, p.tool, p.value)
}

func (r *Registry) recovered(what, tool string, v any) error {
	r.log().Error(what+" panicked", "tool", tool, "panic", v, "stack", string(debug.Stack()))
	r.metrics.panicked()
	return &hookPanic{what: what, tool: tool, value: v}
}

func (r *Registry) runPre(ctx context.Context, fn PreExecuteHook, call *Call) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = r.recovered("pre-execute hook", call.Name, p)
		}
	}()
	return fn(ctx, call)
}

func (r *Registry) runGuard(ctx context.Context, fn GuardHook, call Call) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = r.recovered("guard", call.Name, p)
		}
	}()
	return fn(ctx, call)
}

func (r *Registry) runPost(ctx context.Context, fn PostExecuteHook, call Call, res *Result) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = r.recovered("post-execute hook", call.Name, p)
		}
	}()
	return fn(ctx, call, res)
}

func (r *Registry) runTool(ctx context.Context, e *entry, call Call) (out Output, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.log().Error("tool panicked", "tool", call.Name, "panic", p, "stack", string(debug.Stack()))
			r.metrics.panicked()
			out, err = Output{}, &ToolError{Tool: call.Name, Err: fmt.Errorf("tool %q panicked: %v", call.Name, p)}
		}
	}()
	out, err = e.def.Execute(ctx, call)
	if err == nil {
		return out, nil
	}
	te := &ToolError{Tool: call.Name, Err: err}
	if ctx.Err() != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		// Keep both the cancellation and the tool's own error reachable.
		return Output{}, fmt.Errorf("tool call %q aborted: %w: %w", call.Name, ctxErr(ctx), te)
	}
	return Output{}, te
}

// render projects value with the definition's Render, or by default: a
// string as its text, anything else as JSON text.
func (r *Registry) render(e *entry, value any) (content []Content, err error) {
	if e.def.Render == nil {
		if s, ok := value.(string); ok {
			return []Content{Text(s)}, nil
		}
		return renderJSON(value)
	}
	defer func() {
		if p := recover(); p != nil {
			err = r.recovered("render", e.def.Name, p)
		}
	}()
	content = e.def.Render(value)
	if content == nil {
		content = []Content{}
	}
	return content, nil
}

// renderJSON is the default render of a value that is not a string: one
// JSON text block, without HTML escaping (the model reads it, not a
// browser).
func renderJSON(value any) ([]Content, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(value); err != nil {
		return nil, fmt.Errorf("render the tool's value as JSON: %w", err)
	}
	return []Content{Text(string(bytes.TrimSuffix(b.Bytes(), []byte{'\n'})))}, nil
}

// sameValue reports whether a post-execute hook left the value as it was:
// the same comparable value, or the same map, slice or pointer. A hook
// replaces a value by assigning a new one; mutating it in place is not a
// replacement.
func sameValue(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	t := reflect.TypeOf(a)
	if t != reflect.TypeOf(b) {
		return false
	}
	switch t.Kind() {
	case reflect.Map, reflect.Pointer, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	case reflect.Slice:
		va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
		return va.UnsafePointer() == vb.UnsafePointer() && va.Len() == vb.Len()
	}
	if t.Comparable() {
		if eq, ok := safeEqual(a, b); ok {
			return eq
		}
	}
	// A struct or array holding maps or slices: equal contents mean the
	// hook kept it.
	return reflect.DeepEqual(a, b)
}

// safeEqual compares two values of a comparable type, which can still
// panic when an interface field holds an incomparable value.
func safeEqual(a, b any) (eq, ok bool) {
	defer func() {
		if recover() != nil {
			eq, ok = false, false
		}
	}()
	return a == b, true
}

// sameContent reports whether b is the very slice a (not a copy).
func sameContent(a, b []Content) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0]
}
