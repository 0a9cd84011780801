package chatui

// What chat shows: for scripts under -p, the turn as JSON in Claude Code's
// shapes (--output-format json: one object; stream-json: one event per
// line); on a terminal, one line per tool call with its outcome. And where
// -p's prompt comes from: the argument, stdin, or both.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/termsafe"
)

// The values of --output-format.
const (
	FormatText       = "text"
	FormatJSON       = "json"
	FormatStreamJSON = "stream-json"
)

// maxStdinPrompt bounds what -p reads from stdin: a diff or a log fits, a
// runaway pipe fails clearly instead of filling memory.
const maxStdinPrompt = 8 << 20

// StdinWait is how long -p with a prompt waits for stdin's first byte. A
// program that starts chat with a pipe it never writes nor closes (a
// child process's default stdin in Node or Python) would otherwise hang
// it forever; git diff and the like write well within it.
const StdinWait = 3 * time.Second

// PipedInput returns what stdin holds when it is a pipe or a file (`git
// diff | dsh-host chat -p "review this"`): nothing from a terminal or a
// device such as /dev/null, which a script's stdin often is. With wait >
// 0, a stdin that sends nothing within wait is left alone (waited says
// so); once it sends, it is read to its end.
func PipedInput(in io.Reader, wait time.Duration) (text string, waited bool, err error) {
	if in == nil {
		return "", false, nil
	}
	if f, ok := in.(*os.File); ok {
		st, err := f.Stat()
		if err != nil || st.Mode()&os.ModeCharDevice != 0 || st.Mode()&os.ModeDevice != 0 {
			return "", false, nil
		}
	}
	type read struct {
		b   []byte
		err error
	}
	began := make(chan struct{})
	done := make(chan read, 1)
	go func() {
		var b []byte
		r := io.LimitReader(in, maxStdinPrompt+1)
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if len(b) == 0 && (n > 0 || err != nil) {
				close(began)
			}
			b = append(b, buf[:n]...)
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				done <- read{b, err}
				return
			}
		}
	}()
	if wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-began:
		case <-timer.C:
			return "", true, nil
		}
	}
	r := <-done
	if r.err != nil {
		return "", false, fmt.Errorf("read the prompt's input from stdin: %w", r.err)
	}
	if len(r.b) > maxStdinPrompt {
		return "", false, fmt.Errorf("stdin holds more than %d MiB: too much for one prompt", maxStdinPrompt>>20)
	}
	return string(r.b), false, nil
}

// WithPiped is the prompt with stdin's content after it, Claude Code's
// way; stdin alone when the prompt is empty.
func WithPiped(prompt, piped string) string {
	switch {
	case strings.TrimSpace(piped) == "":
		return prompt
	case strings.TrimSpace(prompt) == "":
		return piped
	}
	return prompt + "\n\n" + piped
}

// jsonUsage is a turn's usage in Claude Code's names: input_tokens counts
// the prompt tokens not read from the cache, as the Anthropic API does.
type jsonUsage struct {
	InputTokens          int64 `json:"input_tokens"`
	CacheReadInputTokens int64 `json:"cache_read_input_tokens"`
	OutputTokens         int64 `json:"output_tokens"`
}

func usageJSON(u app.ChatUsage) jsonUsage {
	return jsonUsage{InputTokens: u.Prompt - u.CachedPrompt, CacheReadInputTokens: u.CachedPrompt, OutputTokens: u.Completion}
}

// jsonToolCall is one call of the turn with its outcome.
type jsonToolCall struct {
	ID      string          `json:"id"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Result  string          `json:"result"`
	IsError bool            `json:"is_error"`
}

// jsonResult is --output-format json's object and stream-json's last event.
type jsonResult struct {
	Type       string         `json:"type"`
	Subtype    string         `json:"subtype"`
	IsError    bool           `json:"is_error"`
	DurationMs int64          `json:"duration_ms"`
	NumTurns   int            `json:"num_turns"`
	Result     string         `json:"result"`
	Error      string         `json:"error,omitempty"`
	SessionID  string         `json:"session_id"`
	Model      string         `json:"model"`
	Usage      jsonUsage      `json:"usage"`
	ToolCalls  []jsonToolCall `json:"tool_calls"`
}

// scriptOutput writes a -p turn as JSON on w (stdout, raw: JSON escapes
// control characters). The plain call lines still go to status (stderr).
type scriptOutput struct {
	w         io.Writer
	stream    bool
	status    io.Writer
	sessionID string
	model     string
	start     time.Time

	mu    sync.Mutex
	calls []jsonToolCall
	steps int
}

func newScriptOutput(w, status io.Writer, format, sessionID, model string, resumed bool, tools []string) *scriptOutput {
	s := &scriptOutput{w: w, stream: format == FormatStreamJSON, status: status, sessionID: sessionID, model: model, start: time.Now()}
	if s.stream {
		cwd, _ := os.Getwd()
		s.line(map[string]any{"type": "system", "subtype": "init", "session_id": sessionID, "model": model, "cwd": cwd, "resumed": resumed, "tools": tools})
	}
	return s
}

// line writes v as one line of JSON (a diff's <, > and & as they are).
func (s *scriptOutput) line(v any) {
	enc := json.NewEncoder(s.w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		enc.Encode(map[string]string{"type": "error", "error": err.Error()})
	}
}

// event is the turn's Events callback for its steps and calls.
func (s *scriptOutput) event(e app.ChatEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e.Kind {
	case app.ChatStep:
		s.steps++
		if !s.stream {
			return
		}
		content := []map[string]any{}
		if e.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": e.Text})
		}
		for _, c := range e.Calls {
			content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.Input()})
		}
		var u app.ChatUsage
		if e.Usage != nil {
			u = *e.Usage
		}
		s.line(map[string]any{"type": "assistant", "session_id": s.sessionID,
			"message": map[string]any{"role": "assistant", "model": s.model, "content": content, "usage": usageJSON(u)}})
	case app.ChatCallStart:
		plainCalls{s.status}.event(e)
	case app.ChatCallDone:
		plainCalls{s.status}.event(e)
		c := jsonToolCall{ID: e.Call.ID, Name: e.Call.Name, Input: e.Call.Input(), Result: e.Result, IsError: e.Error != ""}
		s.calls = append(s.calls, c)
		if s.stream {
			s.line(map[string]any{"type": "user", "session_id": s.sessionID,
				"message": map[string]any{"role": "user", "content": []map[string]any{
					{"type": "tool_result", "tool_use_id": c.ID, "content": c.Result, "is_error": c.IsError},
				}}})
		}
	}
}

// finish writes the result: the one object (json) or the last event.
func (s *scriptOutput) finish(res app.ChatResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := jsonResult{Type: "result", Subtype: "success", DurationMs: time.Since(s.start).Milliseconds(), NumTurns: s.steps,
		Result: res.Answer, SessionID: s.sessionID, Model: s.model, Usage: usageJSON(res.Usage), ToolCalls: s.calls}
	if r.ToolCalls == nil {
		r.ToolCalls = []jsonToolCall{}
	}
	switch {
	case res.Error != "":
		r.IsError, r.Subtype, r.Error = true, "error_during_execution", res.Error
		if res.MaxSteps {
			r.Subtype = "error_max_turns"
		}
	case res.Cut:
		// The answer so far is the result; a script must not take it
		// for a whole one.
		r.IsError, r.Subtype, r.Error = true, "error_max_tokens", app.ErrCut.Error()
	}
	s.line(r)
}

// plainCalls shows a turn's tool calls where no terminal is: a line as a
// call starts (→) and one with its outcome (←).
type plainCalls struct{ out io.Writer }

func (p plainCalls) event(e app.ChatEvent) {
	switch e.Kind {
	case app.ChatCallStart:
		fmt.Fprintf(p.out, "→ %s %s\n", e.Call.Name, flatLine(e.Call.Arguments, 120))
	case app.ChatCallDone:
		fmt.Fprintln(p.out, "← "+callOutcome(e))
	}
}

// callOutcome is "NAME: N characters" or "NAME: error: …".
func callOutcome(e app.ChatEvent) string {
	if e.Error != "" {
		return fmt.Sprintf("%s: error: %s", e.Call.Name, flatLine(e.Error, 200))
	}
	return fmt.Sprintf("%s: %d characters", e.Call.Name, len(e.Result))
}

// flatLine returns s on one line, cut to n runes with "…".
func flatLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// terminalCalls shows a turn's tool calls on a terminal: a live line while
// a step's calls run, then one line per call with its outcome, ✓ or ✗.
type terminalCalls struct {
	out  io.Writer // the display writer (escapes), before the live line
	live *liveProgress
}

func (t terminalCalls) event(e app.ChatEvent) {
	switch e.Kind {
	case app.ChatCallStart:
		t.live.say("… " + termsafe.Escape(e.Call.Name+" "+flatLine(e.Call.Arguments, 60)))
	case app.ChatCallDone:
		mark := "✓"
		if e.Error != "" {
			mark = "✗"
		}
		line := fmt.Sprintf("%s %s %s → ", mark, e.Call.Name, flatLine(e.Call.Arguments, 80))
		if e.Error != "" {
			line += "error: " + flatLine(e.Error, 160)
		} else {
			line += fmt.Sprintf("%d characters", len(e.Result))
		}
		fmt.Fprintln(t.out, line)
	}
}

// say shows text on the live line, cut to the line's width.
func (l *liveProgress) say(text string) {
	if l.term == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.line == nil {
		l.newLine("")
	}
	l.line.Say(text)
}

// failedResult writes the result object of a -p run that failed before
// its turn's result (format json or stream-json; nothing in text).
func failedResult(w io.Writer, format, model string, err error) {
	if format != FormatJSON && format != FormatStreamJSON {
		return
	}
	s := &scriptOutput{w: w, model: model}
	s.line(jsonResult{Type: "result", Subtype: "error_during_execution", IsError: true, Error: err.Error(),
		Model: model, ToolCalls: []jsonToolCall{}})
}
