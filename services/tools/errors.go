package tools

import (
	"errors"
	"fmt"
)

var (
	// ErrRefused marks a policy refusal: a pre-execute hook, a guard, a
	// post-execute block, or the caller's mask. Test with errors.Is; the
	// error is a *RefusalError.
	ErrRefused = errors.New("refused")
	// ErrUnknownTool marks a call to a name that is not registered (or not
	// visible to the caller).
	ErrUnknownTool = errors.New("unknown tool")
	// ErrDuplicateName marks a registration under a name already taken.
	ErrDuplicateName = errors.New("tool name already registered")
	// ErrInvalidDefinition marks a definition Register rejects for another
	// reason than its name (no Execute, a malformed schema).
	ErrInvalidDefinition = errors.New("invalid tool definition")
	// ErrInvalidOutput marks a tool whose Output.Value does not satisfy its
	// OutputSchema.
	ErrInvalidOutput = errors.New("invalid tool output")
)

// Stage names the pipeline step that refused a call.
type Stage string

// The stages that can refuse a call.
const (
	StageMask        Stage = "mask"
	StagePreExecute  Stage = "pre-execute"
	StageGuard       Stage = "guard"
	StagePostExecute Stage = "post-execute"
)

// RefusalError is a policy refusal. errors.Is(err, ErrRefused) holds for
// every RefusalError; errors.Is and errors.As also reach Reason.
type RefusalError struct {
	Stage Stage
	// Tool is the name the caller asked for.
	Tool string
	// Reason is what the hook returned. For StageMask it is ErrUnknownTool:
	// a tool hidden by the caller's mask is unknown to that caller, and the
	// message does not tell it apart from one that does not exist.
	Reason error
}

func (e *RefusalError) Error() string {
	switch e.Stage {
	case StageMask:
		return fmt.Sprintf("%v %q", ErrUnknownTool, e.Tool)
	case StageGuard:
		return fmt.Sprintf("call to %q denied by a guard: %v", e.Tool, e.Reason)
	case StagePostExecute:
		return fmt.Sprintf("result of %q blocked by a post-execute hook: %v", e.Tool, e.Reason)
	default:
		return fmt.Sprintf("call to %q refused by a %s hook: %v", e.Tool, e.Stage, e.Reason)
	}
}

// Is makes every RefusalError match ErrRefused.
func (e *RefusalError) Is(target error) bool { return target == ErrRefused }

// Unwrap returns the reason.
func (e *RefusalError) Unwrap() error { return e.Reason }

// ToolError is an error returned (or a panic raised) by a tool's Execute.
// Its message is the tool's own, unchanged: the model reads
// "Error: <message>". errors.As reaches the tool's error through Unwrap.
type ToolError struct {
	Tool string
	Err  error
}

func (e *ToolError) Error() string { return e.Err.Error() }

// Unwrap returns the tool's error.
func (e *ToolError) Unwrap() error { return e.Err }

// errorResult is the Result of a failed call.
func errorResult(err error) Result {
	return Result{Content: []Content{Text("Error: " + err.Error())}, Err: err}
}
