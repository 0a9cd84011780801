package console

// The questions a server asks through the elicitation service (forms and
// URLs) and the policy's approvals, asked at the console.

import (
	"context"
	"errors"
	"fmt"
	"io"
	neturl "net/url"
	"strings"
	"sync"

	"github.com/dsh-host/dsh-host/internal/termsafe"
	"github.com/dsh-host/dsh-host/services/elicit"
)

// errInputEnded cancels a question whose answer can no longer come.
var errInputEnded = errors.New("the console's input ended before the answer")

// asker asks a server's questions at the console, one at a time.
type asker struct {
	mu    sync.Mutex
	out   io.Writer
	lines *lineSource
	// clear erases a live progress line before a question is printed.
	clear func()
	// browser opens a URL; nil prints it only.
	browser func(url string) error
	// fedAnswers keeps the lines read ahead of a question as its answers:
	// the input is a script's (not a terminal), which feeds them in order.
	fedAnswers bool
}

// Answer asks req at the console.
func (a *asker) Answer(ctx context.Context, req elicit.Request) (elicit.Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.clear != nil {
		a.clear()
	}
	dropped := 0
	if !a.fedAnswers {
		dropped = a.lines.dropTypeAhead()
	}
	if req.Approval != nil {
		return a.approve(ctx, req.Approval, dropped)
	}
	fmt.Fprintf(a.out, "\n%s asks: %s\n", req.Server, req.Message)
	if dropped > 0 {
		fmt.Fprintf(a.out, "(%d line(s) typed before this question were dropped)\n", dropped)
	}
	if req.Mode == elicit.ModeURL {
		return a.url(ctx, req)
	}
	fmt.Fprintln(a.out, "(Enter keeps the default shown in brackets; /decline or /cancel at any question)")
	content := map[string]any{}
	for i := range req.Form.Fields {
		fd := &req.Form.Fields[i]
		a.describe(fd)
		for {
			fmt.Fprint(a.out, a.prompt(fd))
			line, ok := a.lines.next(ctx, true)
			if !ok {
				return elicit.Result{}, inputEnded(ctx)
			}
			line = strings.TrimSpace(line)
			switch line {
			case "/decline":
				return elicit.Result{Action: elicit.Decline}, nil
			case "/cancel":
				return elicit.Result{Action: elicit.Cancel}, nil
			case "":
				if fd.Default == nil && fd.Required {
					fmt.Fprintln(a.out, "  this answer is required")
					continue
				}
			default:
				v, err := fd.Parse(line)
				if err != nil {
					fmt.Fprintf(a.out, "  %v\n", err)
					continue
				}
				content[fd.Name] = v
			}
			break
		}
	}
	fmt.Fprintln(a.out, "sent")
	return elicit.Result{Action: elicit.Accept, Content: content}, nil
}

func inputEnded(ctx context.Context) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errInputEnded
}

// describe prints a field's description and choices.
func (a *asker) describe(fd *elicit.Field) {
	if fd.Description != "" {
		fmt.Fprintf(a.out, "  %s\n", fd.Description)
	}
	for i, o := range fd.Options {
		if o.Title != o.Value {
			fmt.Fprintf(a.out, "    %d) %s [%s]\n", i+1, o.Title, o.Value)
		} else {
			fmt.Fprintf(a.out, "    %d) %s\n", i+1, o.Title)
		}
	}
}

// prompt is "Name (text, required) [default]: ".
func (a *asker) prompt(fd *elicit.Field) string {
	var hints []string
	switch {
	case fd.Type == "boolean":
		hints = append(hints, "y/n")
	case fd.Type == "array":
		hints = append(hints, "choices, comma-separated")
	case len(fd.Options) > 0:
		hints = append(hints, "a choice")
	case fd.Type == "integer":
		hints = append(hints, "whole number")
	case fd.Type == "number":
		hints = append(hints, "number")
	case fd.Format != "":
		hints = append(hints, fd.Format)
	}
	if fd.Minimum != nil || fd.Maximum != nil {
		hints = append(hints, bounds(fd.Minimum, fd.Maximum))
	}
	if fd.Required {
		hints = append(hints, "required")
	}
	p := "  " + fd.Label()
	if len(hints) > 0 {
		p += " (" + strings.Join(hints, ", ") + ")"
	}
	if fd.Default != nil {
		p += fmt.Sprintf(" [%s]", defaultText(fd))
	}
	return p + ": "
}

func bounds(lo, hi *float64) string {
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf("%g to %g", *lo, *hi)
	case lo != nil:
		return fmt.Sprintf("at least %g", *lo)
	}
	return fmt.Sprintf("at most %g", *hi)
}

func defaultText(fd *elicit.Field) string {
	title := func(v any) string {
		s := fmt.Sprint(v)
		for _, o := range fd.Options {
			if o.Value == s {
				return o.Title
			}
		}
		return s
	}
	switch v := fd.Default.(type) {
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = title(x)
		}
		return strings.Join(parts, ", ")
	case bool:
		if v {
			return "y"
		}
		return "n"
	}
	return title(fd.Default)
}

// url shows a URL request with its host, opens the page only once the
// person agreed (the 2025-11-25 spec: show the target and get consent
// before navigating), and asks whether they went through with it.
func (a *asker) url(ctx context.Context, req elicit.Request) (elicit.Result, error) {
	fmt.Fprintf(a.out, "  %s\n", req.URL)
	if u, err := neturl.Parse(req.URL); err == nil && u.Host != "" {
		fmt.Fprintf(a.out, "  on %s\n", u.Host)
	}
	fmt.Fprint(a.out, "  Open it? [y/N]: ")
	line, ok := a.lines.next(ctx, true)
	if !ok {
		return elicit.Result{}, inputEnded(ctx)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
	case "/cancel":
		return elicit.Result{Action: elicit.Cancel}, nil
	default:
		return elicit.Result{Action: elicit.Decline}, nil
	}
	switch {
	case a.browser == nil || !webURL(req.URL):
		fmt.Fprintln(a.out, "  open it in a browser")
	default:
		if err := a.browser(req.URL); err != nil {
			fmt.Fprintf(a.out, "  could not open a browser (%v); open it yourself\n", err)
		} else {
			fmt.Fprintln(a.out, "  opened in your browser")
		}
	}
	for {
		fmt.Fprint(a.out, "  Done? y (accept), n (decline), c (cancel): ")
		line, ok := a.lines.next(ctx, true)
		if !ok {
			return elicit.Result{}, inputEnded(ctx)
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return elicit.Result{Action: elicit.Accept}, nil
		case "n", "no", "/decline":
			return elicit.Result{Action: elicit.Decline}, nil
		case "c", "cancel", "/cancel":
			return elicit.Result{Action: elicit.Cancel}, nil
		}
	}
}

// previewLines bounds the preview an approval shows (a diff may be long).
const previewLines = 40

// showPreview prints what the call would do, one escaped line at a time
// (the tool's text comes from the model's arguments), cut at previewLines.
func showPreview(out io.Writer, preview string) {
	lines := strings.Split(strings.TrimRight(preview, "\n"), "\n")
	for i, l := range lines {
		if i == previewLines {
			fmt.Fprintf(out, "  … %d more lines\n", len(lines)-i)
			break
		}
		fmt.Fprintf(out, "  %s\n", termsafe.Escape(l))
	}
}

func webURL(u string) bool {
	return strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")
}

// approve asks whether a tool call may run: `Allow TOOL {args}? [y]es
// once / [s]ession / [a]lways / [n]o`, with the arguments escaped and cut.
// Enter says no.
func (a *asker) approve(ctx context.Context, ap *elicit.Approval, dropped int) (elicit.Result, error) {
	keys := map[string]string{"y": elicit.ApproveOnce, "yes": elicit.ApproveOnce}
	hints := []string{"[y]es once"}
	for _, c := range ap.Choices {
		switch c {
		case elicit.ApproveSession:
			keys["s"], keys["session"] = c, c
			hints = append(hints, "[s]ession")
		case elicit.ApproveAlways:
			keys["a"], keys["always"] = c, c
			hints = append(hints, "[a]lways")
		}
	}
	hints = append(hints, "[n]o")
	fmt.Fprintf(a.out, "\n(policy %s)\n", termsafe.Escape(ap.Rule))
	if dropped > 0 {
		fmt.Fprintf(a.out, "(%d line(s) typed before this question were dropped)\n", dropped)
	}
	if ap.Preview != "" {
		showPreview(a.out, ap.Preview)
	}
	question := fmt.Sprintf("Allow %s %s? %s: ", termsafe.Escape(ap.Tool), termsafe.Escape(elicit.ShowArgs(ap.Args, 200)), strings.Join(hints, " / "))
	for {
		fmt.Fprint(a.out, question)
		line, ok := a.lines.next(ctx, true)
		if !ok {
			return elicit.Result{}, inputEnded(ctx)
		}
		if a.fedAnswers {
			fmt.Fprintln(a.out, line) // no terminal echoed it
		}
		answer := strings.ToLower(strings.TrimSpace(line))
		if c, ok := keys[answer]; ok {
			return elicit.Result{Action: elicit.Accept, Content: map[string]any{elicit.ApprovalField: c}}, nil
		}
		switch answer {
		case "", "n", "no", "/decline":
			return elicit.Result{Action: elicit.Decline}, nil
		case "/cancel":
			return elicit.Result{Action: elicit.Cancel}, nil
		}
		fmt.Fprintf(a.out, "  answer %s\n", strings.Join(hints, ", "))
	}
}
