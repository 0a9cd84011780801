package console

// A one-shot call's outcome as `dsh-host call` prints it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/cli"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// CallJSON is what `call --json` prints.
type CallJSON struct {
	Tool    string          `json:"tool"`
	Content []tools.Content `json:"content"`
	Value   any             `json:"value"`
	Error   string          `json:"error,omitempty"`
	Refused bool            `json:"refused,omitempty"`
	// Failed: the tool answered with its own explanation of a failure
	// (tools.Result.Failed, such as mcp_call's refusals): content says why.
	Failed bool `json:"failed,omitempty"`
}

// ReportCall prints res, the result of calling tool on a (the host of the
// composition file): its content, or with asJSON its CallJSON, to stdout,
// what went wrong to stderr, and returns the exit code.
func ReportCall(ctx context.Context, std Stdio, a app.App, file, tool string, res tools.Result, asJSON bool) int {
	screen := std.Display()
	if asJSON {
		out := CallJSON{Tool: tool, Content: res.Content, Value: res.Value, Failed: res.Failed}
		if res.Err != nil {
			out.Error = res.Err.Error()
			out.Refused = errors.Is(res.Err, tools.ErrRefused)
		}
		if err := WriteJSON(std.Out, out); err != nil {
			fmt.Fprintf(screen.Err, "dsh-host call: %v\n", err)
			return cli.ExitFail
		}
	} else if res.Err == nil {
		WriteContent(screen.Out, res.Content)
	}
	switch {
	case errors.Is(res.Err, tools.ErrUnknownTool):
		// A tool is unknown most often because its instance is not
		// running: say which, and why, rather than only that.
		if st, err := a.Status(ctx); err == nil {
			if why := NotRunning(st.Instances, tool); why != "" {
				fmt.Fprintf(screen.Err, "dsh-host call: %v; %s (see dsh-host status -c %s)\n", res.Err, why, file)
				return cli.ExitFail
			}
		}
		fmt.Fprintf(screen.Err, "dsh-host call: %v (list them with: dsh-host tools -c %s)\n", res.Err, file)
	case res.Err != nil:
		fmt.Fprintf(screen.Err, "dsh-host call: %s: %v\n", tool, res.Err)
	case res.Failed:
		// The tool's own explanation is on stdout, as the model reads it.
		fmt.Fprintf(screen.Err, "dsh-host call: %s failed\n", tool)
	default:
		return cli.ExitOK
	}
	return cli.ExitFail
}

// NotRunning names the instance that owns tool (host.Owner: by its
// claims, such as the serverName mcp__github__x is named after) when it is
// not running, with why, else every failed or pending one; "" when every
// instance runs.
func NotRunning(st []host.InstanceStatus, tool string) string {
	says := func(s host.InstanceStatus) string {
		text := fmt.Sprintf("instance %q (%s) is %s", s.ID, s.Plugin, s.State)
		if s.State == host.StateFailed {
			text = fmt.Sprintf("instance %q (%s) failed", s.ID, s.Plugin)
		}
		if s.Err != "" {
			text += ": " + s.Err
		}
		return text
	}
	if owner, ok := host.Owner(st, tool); ok && owner.State != host.StateActive {
		return says(owner)
	}
	var down []string
	for _, s := range st {
		if s.State != host.StateActive && s.State != host.StateDisabled {
			down = append(down, says(s))
		}
	}
	if len(down) > 0 {
		return "not running: " + strings.Join(down, "; ")
	}
	return ""
}

// WriteReply prints a command's reply text, an error's to stderr with
// exit 1, ending it with a newline.
func WriteReply(std Stdio, text string, isError bool) int {
	screen := std.Display()
	w := screen.Out
	if isError {
		w = screen.Err
	}
	fmt.Fprint(w, text)
	if !strings.HasSuffix(text, "\n") {
		fmt.Fprintln(w)
	}
	if isError {
		return cli.ExitFail
	}
	return cli.ExitOK
}

// WriteResourcesJSON prints l as `resources --json` does: {resources,
// templates, instances}, the instances as app.Rows.
func WriteResourcesJSON(w io.Writer, l app.ResourceList) error {
	return WriteJSON(w, struct {
		Resources []resources.Resource `json:"resources"`
		Templates []resources.Template `json:"templates"`
		Instances []app.InstanceRow    `json:"instances"`
	}{l.Resources, l.Templates, app.Rows(l.Instances)})
}
