package main

// What a person sees of a tool call while it runs: its live progress line,
// and the questions a server asks through the elicitation service (the
// console asks them on the terminal; one-shot commands decline them, or
// accept the defaults with --elicit defaults).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	neturl "net/url"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/termsafe"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/policy"
	"github.com/dsh-host/dsh-host/services/tools"
)

// installAnswerer installs a on h's elicitation service and returns its
// removal; without the service (a composition that disabled it) nothing
// is installed.
func installAnswerer(h *host.Host, a elicit.Answerer) (remove func()) {
	svc, ok := host.Lookup(h, elicit.Key)
	if !ok || svc == nil {
		return func() {}
	}
	return svc.Install(a)
}

// progressLine is a call's live progress on a terminal: one line, rewritten
// in place at each report and erased when the call ends. w is the raw
// terminal (the line's own \r and erase codes must reach it); the server's
// message is escaped.
type progressLine struct {
	mu    sync.Mutex
	w     io.Writer
	label string
	shown bool
}

// progressWidth caps the line, so that it never wraps on a common terminal
// (a wrapped line cannot be rewritten with \r).
const progressWidth = 78

func newProgressLine(w io.Writer, label string) *progressLine {
	return &progressLine{w: w, label: label}
}

// report shows p.
func (l *progressLine) report(p tools.Progress) {
	text := l.label + ": " + progressText(p)
	if utf8.RuneCountInString(text) > progressWidth {
		r := []rune(text)
		text = string(r[:progressWidth-1]) + "…"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "\r\x1b[K%s", text)
	l.shown = true
}

// clear erases the line, if one is shown.
func (l *progressLine) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown {
		fmt.Fprint(l.w, "\r\x1b[K")
		l.shown = false
	}
}

// progressText is "3/5 (60%) message", "3 message" without a total.
func progressText(p tools.Progress) string {
	s := trimFloat(p.Progress)
	if p.Total > 0 {
		s += fmt.Sprintf("/%s (%d%%)", trimFloat(p.Total), int(100*p.Progress/p.Total))
	}
	if msg := strings.Join(strings.Fields(p.Message), " "); msg != "" {
		s += " " + termsafe.Escape(msg)
	}
	return s
}

func trimFloat(f float64) string { return strings.TrimSuffix(fmt.Sprintf("%.2f", f), ".00") }

// liveTerminal returns w when s takes it for a terminal, where a live
// progress line may go, else nil.
func (s Stdio) liveTerminal(w io.Writer) io.Writer {
	if s.terminal(w) {
		return w
	}
	return nil
}

// progressLine returns what shows a call's progress on w, a terminal (a
// call's progress channel), and the function that erases the line when the
// call is over. With a nil w (not a terminal) progress is not shown: the
// channel is nil.
func progressLineOn(w io.Writer, label string) (report func(tools.Progress), clear func()) {
	if w == nil {
		return nil, func() {}
	}
	l := newProgressLine(w, label)
	return l.report, l.clear
}

// lineSource hands the console's input lines out: to a question being
// asked (an elicitation) first, then to the command loop.
type lineSource struct {
	mu      sync.Mutex
	queue   []string
	ended   bool
	full    bool          // feed waits for the queue to drain
	asking  int           // questions waiting for a line
	changed chan struct{} // closed and replaced at every change
}

// maxQueuedLines is how many lines are read ahead of the command loop;
// past it feed stops reading, so that pasted or piped input waits in its
// pipe rather than in memory.
const maxQueuedLines = 64

func newLineSource() *lineSource { return &lineSource{changed: make(chan struct{})} }

// feed reads in until its end (or stop), queueing its lines, at most
// maxQueuedLines at a time.
func (s *lineSource) feed(in io.Reader, stop <-chan struct{}) {
	sc := newLineScanner(in)
	for sc.Scan() {
		s.mu.Lock()
		for len(s.queue) >= maxQueuedLines {
			s.full = true
			ch := s.changed
			s.mu.Unlock()
			select {
			case <-stop:
				return
			case <-ch:
			}
			s.mu.Lock()
		}
		s.full = false
		s.queue = append(s.queue, sc.Text())
		s.signal()
		s.mu.Unlock()
		select {
		case <-stop:
			return
		default:
		}
	}
	s.mu.Lock()
	s.ended = true
	s.signal()
	s.mu.Unlock()
}

// signal wakes every waiter; s.mu is held.
func (s *lineSource) signal() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// next returns the next line, for a question (ask) or the command loop;
// false when the input ended or ctx is done. The loop gets no line while a
// question waits for one.
func (s *lineSource) next(ctx context.Context, ask bool) (string, bool) {
	s.mu.Lock()
	if ask {
		s.asking++
		defer func() {
			s.mu.Lock()
			s.asking--
			s.signal()
			s.mu.Unlock()
		}()
	}
	for {
		if len(s.queue) > 0 && (ask || s.asking == 0) {
			line := s.queue[0]
			s.queue = s.queue[1:]
			s.signal() // feed may wait for room
			s.mu.Unlock()
			return line, true
		}
		if s.ended && len(s.queue) == 0 {
			s.mu.Unlock()
			return "", false
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return "", false
		case <-ch:
		}
		s.mu.Lock()
	}
}

// dropTypeAhead drops the lines read but not yet taken, and returns how
// many. A question calls it when it starts: lines typed before it was
// shown were meant for the command loop (or nothing), not as its answer.
func (s *lineSource) dropTypeAhead() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.queue)
	if n > 0 {
		s.queue = nil
		s.signal()
	}
	return n
}

// errInputEnded cancels a question whose answer can no longer come.
var errInputEnded = errors.New("the console's input ended before the answer")

// consoleAsker asks a server's questions at the console, one at a time.
type consoleAsker struct {
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
func (a *consoleAsker) Answer(ctx context.Context, req elicit.Request) (elicit.Result, error) {
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
func (a *consoleAsker) describe(fd *elicit.Field) {
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
func (a *consoleAsker) prompt(fd *elicit.Field) string {
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
func (a *consoleAsker) url(ctx context.Context, req elicit.Request) (elicit.Result, error) {
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

func webURL(u string) bool {
	return strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")
}

// newLineScanner scans lines of up to 1 MiB.
func newLineScanner(in io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	return sc
}

// lockedWriter serializes writes: the console's replies and the questions
// asked from a server's request share one output.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// approve asks whether a tool call may run: `Allow TOOL {args}? [y]es
// once / [s]ession / [a]lways / [n]o`, with the arguments escaped and cut.
// Enter says no.
func (a *consoleAsker) approve(ctx context.Context, ap *elicit.Approval, dropped int) (elicit.Result, error) {
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
	question := fmt.Sprintf("Allow %s %s? %s: ", termsafe.Escape(ap.Tool), termsafe.Escape(policy.ShowArgs(ap.Args, 200)), strings.Join(hints, " / "))
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
