package chatui

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/app"
)

// fakeMarkdown is a markdownStream on a buffer 40x10 whose renderer marks
// each block it gets, and records them.
func fakeMarkdown() (*markdownStream, *strings.Builder, *[]string) {
	var screen strings.Builder
	var blocks []string
	m := &markdownStream{raw: &screen, size: func() (int, int) { return 40, 10 }, render: func(md string, cols int) (string, error) {
		blocks = append(blocks, md)
		return "\n  <" + strings.TrimSuffix(md, "\n") + ">   \n\n", nil
	}}
	return m, &screen, &blocks
}

// TestMarkdownStreamBlocks: the stream is shown plain as it comes, and each
// block, once it ends, is erased (as many rows up as it took) and replaced
// by its rendering; a fence holds its blank lines; Flush ends the last.
func TestMarkdownStreamBlocks(t *testing.T) {
	m, screen, blocks := fakeMarkdown()
	for _, chunk := range []string{
		"Hello **wor", "ld**,\nsecond line.\n", "\n",
		"```go\nx := 1\n\ny := 2\n``", "`\n",
		"# He", "ad\n",
		"- a\n- b", // no end: Flush renders it
	} {
		m.Write([]byte(chunk))
	}
	m.Flush()
	want := []string{"Hello **world**,\nsecond line.\n", "```go\nx := 1\n\ny := 2\n```\n", "# Head\n", "- a\n- b\n"}
	if strings.Join(*blocks, "|") != strings.Join(want, "|") {
		t.Errorf("rendered blocks %q, want %q", *blocks, want)
	}
	for _, w := range []string{
		// shown plain as it came, then two rows up, erased, rendered
		"Hello **world**,\nsecond line.\n\r\x1b[2A\x1b[J  <Hello **world**,\nsecond line.>\n\n",
		// the fence's lines up to its half-written end: four rows up
		"y := 2\n``\r\x1b[4A\x1b[J  <```go",
		// a heading is a block of its own line, its shown start erased
		"```>\n\n# He\r\x1b[J  <# Head>\n\n- a",
		// the open tail's cursor is on its own row: one row up
		"- a\n- b\r\x1b[1A\x1b[J  <- a\n- b>\n\n",
	} {
		if !strings.Contains(screen.String(), w) {
			t.Errorf("the screen lacks %q:\n%q", w, screen.String())
		}
	}
}

// TestMarkdownStreamWrappedRows: a line longer than the terminal takes
// several rows, all erased.
func TestMarkdownStreamWrappedRows(t *testing.T) {
	m, screen, _ := fakeMarkdown()
	long := strings.Repeat("word ", 17) // 85 columns: three rows of 40, the cursor on the third
	m.Write([]byte(long))
	m.Write([]byte("\n\n"))
	if !strings.HasPrefix(screen.String(), long+"\r\x1b[2A\x1b[J") {
		t.Errorf("want three rows erased:\n%q", screen.String())
	}
}

// TestMarkdownStreamTallBlockStaysPlain: a block taller than the screen
// cannot be erased: it stays plain, and the next one renders.
func TestMarkdownStreamTallBlockStaysPlain(t *testing.T) {
	m, screen, blocks := fakeMarkdown()
	tall := strings.Repeat("line\n", 12)
	m.Write([]byte(tall))
	m.Write([]byte("\nAfter.\n\n"))
	if len(*blocks) != 1 || (*blocks)[0] != "After.\n" {
		t.Errorf("rendered %q, want only the block after the tall one", *blocks)
	}
	if !strings.HasPrefix(screen.String(), tall+"\n") || strings.Contains(screen.String(), "\x1b[12A") {
		t.Errorf("the tall block is not left plain:\n%q", screen.String())
	}
}

// TestMarkdownStreamEscapes: the model's control characters reach the
// terminal escaped; only the renderer's own codes are raw.
func TestMarkdownStreamEscapes(t *testing.T) {
	m, screen, blocks := fakeMarkdown()
	m.Write([]byte("red \x1b[31mtext\x07\n"))
	m.Flush()
	if strings.Contains((*blocks)[0], "\x1b") || strings.Contains(screen.String(), "\x1b[31m") || strings.Contains(screen.String(), "\x07") {
		t.Errorf("a control character passed: blocks %q, screen %q", *blocks, screen.String())
	}
}

// TestMarkdownStreamAround: a step's end and any other line of the turn
// render the open block first, so that nothing is written between a
// block's plain rows and their erasure.
func TestMarkdownStreamAround(t *testing.T) {
	m, screen, blocks := fakeMarkdown()
	var events []string
	o := m.around(turnEvents{status: screen, calls: func(e app.ChatEvent) { events = append(events, e.Kind) }})
	o.event(app.ChatEvent{Kind: app.ChatText, Text: "Let me look"})
	o.event(app.ChatEvent{Kind: app.ChatStep})
	if len(*blocks) != 1 {
		t.Fatalf("the step's end did not render its text: %q", *blocks)
	}
	o.event(app.ChatEvent{Kind: app.ChatText, Text: "Almost"})
	o.event(app.ChatEvent{Kind: app.ChatStatus, Text: "retrying\n"})
	if len(*blocks) != 2 || !strings.HasSuffix(screen.String(), "<Almost>\n\nretrying\n") {
		t.Errorf("a status line came before the open block was rendered: %q", screen.String())
	}
	if len(events) != 1 || events[0] != app.ChatStep {
		t.Errorf("the front end's events = %v, want the step passed on", events)
	}
}

// TestMdRenderRenders: the real renderer turns Markdown into terminal text
// without its marks, with nothing but text around the block, and NO_COLOR
// leaves no escape in it.
func TestMdRenderRenders(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	out, err := mdRender()("# Title\n\nSome **bold** text.\n\n- one\n- two\n", 40)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("an escape under NO_COLOR:\n%q", out)
	}
	for _, w := range []string{"Title", "Some bold text.", "• one", "• two"} {
		if !strings.Contains(out, w) {
			t.Errorf("rendering lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "**") {
		t.Errorf("the marks stayed:\n%s", out)
	}
	if got := tidyRendering(out); strings.HasPrefix(got, "\n") || !strings.HasSuffix(got, "• two\n\n") {
		t.Errorf("tidied: %q", got)
	}
}

// BenchmarkMarkdownStream streams a 2 KB answer of 40 blocks in the 4-byte
// pieces the scripted server sends, rendered by mdterm at 100 columns.
func BenchmarkMarkdownStream(b *testing.B) {
	var answer strings.Builder
	for i := range 10 {
		fmt.Fprintf(&answer, "## Part %d\n\nA paragraph with **bold**, `code` and a [link](https://example.com), long enough to wrap once or twice on a terminal of a hundred columns.\n\n- one\n- two\n\n```go\nfunc f() int { return %d }\n```\n\n", i, i)
	}
	text := answer.String()
	render := mdRender()
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		m := &markdownStream{raw: io.Discard, size: func() (int, int) { return 100, 50 }, render: render}
		for i := 0; i < len(text); i += 4 {
			m.Write([]byte(text[i:min(i+4, len(text))]))
		}
		m.Flush()
	}
}
