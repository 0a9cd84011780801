package chatui

// The model's answer as Markdown on a terminal, rendered as it streams.
//
// mdterm renders a whole block, so the stream is cut into blocks (a
// paragraph, a heading, a fenced code block, a run of list lines): the
// open block is shown plain as it comes, and when it ends (a blank line, a
// closing fence, a heading's line) its plain rows are erased and its
// rendering takes their place. A block taller than the screen cannot be
// erased, so it stays plain.

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/mattn/go-runewidth"
	"golang.org/x/term"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/mdterm"
	"github.com/dsh-host/dsh-host/internal/termsafe"
)

// markdownStream is an io.Writer for an answer's text; Flush ends the
// answer (or a step's part of it).
type markdownStream struct {
	raw    io.Writer               // the terminal: the rendering's escapes reach it
	size   func() (cols, rows int) // the terminal's, read at each block
	render func(md string, cols int) (string, error)

	mu    sync.Mutex
	block strings.Builder // the open block's complete lines
	tail  string          // the line being written, not yet ended
	shown string          // what of the open block is on the screen, plain
	fence string          // the open code fence's marker, "" outside one
	plain bool            // the open block outgrew the screen: it stays plain
}

// newMarkdownStream renders onto raw, a terminal of the given size.
func newMarkdownStream(raw io.Writer, size func() (cols, rows int)) *markdownStream {
	return &markdownStream{raw: raw, size: size, render: mdRender()}
}

// terminalSize returns the size of w when it is a terminal, else (or when
// it cannot be read) 80x24.
func terminalSize(w any) func() (int, int) {
	return func() (int, int) {
		if f, ok := w.(*os.File); ok {
			if c, r, err := term.GetSize(int(f.Fd())); err == nil && c > 0 && r > 0 {
				return c, r
			}
		}
		return 80, 24
	}
}

// mdRender renders with mdterm, wrapped to the terminal's width, styled
// unless NO_COLOR is set or TERM is dumb. A panic in the renderer is an
// error: the block is then shown plain, and the chat goes on.
func mdRender() func(string, int) (string, error) {
	styled := os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
	return func(md string, cols int) (out string, err error) {
		defer func() {
			if p := recover(); p != nil {
				out, err = "", fmt.Errorf("rendering Markdown: %v", p)
			}
		}()
		return mdterm.Render(md, mdterm.Options{Width: cols, Styled: styled}), nil
	}
}

func (m *markdownStream) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// The model's control characters are shown, not executed, before
	// the renderer adds its own.
	text := m.tail + strings.ReplaceAll(termsafe.Escape(string(p)), "\r\n", "\n")
	for {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			break
		}
		m.line(text[:i+1])
		text = text[i+1:]
	}
	m.tail = text
	m.show()
	return len(p), nil
}

// Flush renders what is open, the last line too.
func (m *markdownStream) Flush() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tail != "" {
		m.block.WriteString(m.tail + "\n")
		m.tail = ""
	}
	m.end()
}

// line takes one complete line, and ends the block where it does.
func (m *markdownStream) line(l string) {
	trimmed := strings.TrimSpace(l)
	if m.fence != "" {
		m.block.WriteString(l)
		if strings.HasPrefix(trimmed, m.fence) && strings.Trim(trimmed, m.fence[:1]) == "" {
			m.fence = ""
			m.end()
		}
		return
	}
	switch {
	case trimmed == "":
		if m.block.Len() > 0 {
			m.end()
		}
	case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
		m.end()
		m.fence = trimmed[:3]
		m.block.WriteString(l)
	case strings.HasPrefix(trimmed, "#"):
		m.end()
		m.block.WriteString(l)
		m.end()
	default:
		m.block.WriteString(l)
	}
}

// show writes what of the open block is not on the screen yet, plain. A
// block that would outgrow the screen is kept plain to its end.
func (m *markdownStream) show() {
	cur := m.block.String() + m.tail
	if !strings.HasPrefix(cur, m.shown) {
		return // a block ended past what was shown; end wrote it
	}
	if !m.plain {
		cols, rows := m.size()
		if rowsAbove(cur, cols) >= rows-1 {
			m.plain = true
		}
	}
	io.WriteString(m.raw, cur[len(m.shown):])
	m.shown = cur
}

// end replaces the open block's plain rows by its rendering.
func (m *markdownStream) end() {
	md := m.block.String()
	m.block.Reset()
	if strings.TrimSpace(md) == "" {
		return // what is shown, if anything, is the next block's start
	}
	shown := m.shown
	m.shown = ""
	if m.plain {
		// Kept plain: what was not shown yet follows; what was shown past
		// the block is the next block's start.
		m.plain = false
		if len(shown) > len(md) {
			m.shown = shown[len(md):]
			return
		}
		io.WriteString(m.raw, md[len(shown):]+"\n")
		return
	}
	cols, _ := m.size()
	out, err := m.render(md, cols)
	if err != nil {
		out = md // shown plain, as a terminal without the renderer would
	}
	var b strings.Builder
	if shown != "" {
		b.WriteString("\r")
		if up := rowsAbove(shown, cols); up > 0 {
			b.WriteString("\x1b[" + strconv.Itoa(up) + "A")
		}
		b.WriteString("\x1b[J")
	}
	b.WriteString(tidyRendering(out))
	io.WriteString(m.raw, b.String())
}

// rowsAbove is how many rows above the cursor's text begins once text
// is written from a line's start on a terminal cols wide.
func rowsAbove(text string, cols int) int {
	if cols < 1 {
		cols = 80
	}
	lines := strings.Split(text, "\n")
	up := 0
	for i, l := range lines {
		w := displayWidth(l)
		if i < len(lines)-1 {
			up += max(1, (w+cols-1)/cols)
		} else if w > 0 {
			up += (w+cols-1)/cols - 1
		}
	}
	return up
}

// displayWidth is l's width in columns, a tab to the next multiple of 8.
func displayWidth(l string) int {
	w := 0
	for _, r := range l {
		if r == '\t' {
			w += 8 - w%8
			continue
		}
		w += runewidth.RuneWidth(r)
	}
	return w
}

// tidyRendering drops a rendering's padding: spaces ending a line and
// the blank lines around the block; one blank line follows it, as in the
// source.
func tidyRendering(out string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n\n"
}

// around returns t with its text rendered by m: every other line of the
// turn (reasoning, status, a call's line) first renders the open block,
// and so does the end of each step.
func (m *markdownStream) around(t turnEvents) turnEvents {
	t.text = m
	t.reasoning = flushFirst{m, t.reasoning}
	t.status = flushFirst{m, t.status}
	calls := t.calls
	t.calls = func(e app.ChatEvent) {
		if e.Kind == app.ChatStep {
			m.Flush()
		}
		if calls != nil {
			calls(e)
		}
	}
	return t
}

// flushFirst renders the open block before writing to w.
type flushFirst struct {
	m *markdownStream
	w io.Writer
}

func (f flushFirst) Write(p []byte) (int, error) {
	f.m.Flush()
	if f.w == nil {
		return len(p), nil
	}
	return f.w.Write(p)
}
