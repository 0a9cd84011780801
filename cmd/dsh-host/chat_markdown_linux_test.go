package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

// openPTY opens a pseudo-terminal of cols x rows: the terminal side (what
// chat writes to) and everything written to it, read from the other side
// as it comes.
func openPTY(t *testing.T, cols, rows uint16) (tty *os.File, screen *mcptest.SyncBuffer) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(ptmx.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows}); err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	screen = new(mcptest.SyncBuffer)
	read := make(chan struct{})
	go func() { defer close(read); io.Copy(screen, ptmx) }()
	t.Cleanup(func() { tty.Close(); ptmx.Close(); <-read })
	return tty, screen
}

// TestChatRendersMarkdownOnATerminal: in the console on a terminal the
// answer streams plain, and each block is then replaced by mdterm's
// rendering (the bold's stars gone, the list's bullets drawn, the block's
// rows erased with the width the terminal reports).
func TestChatRendersMarkdownOnATerminal(t *testing.T) {
	answer := "# Plan\n\nSome **bold** words.\n\n- one\n- two\n"
	srv := openaitest.New(t, openaitest.Turn{Content: answer, Usage: &openaitest.Usage{PromptTokens: 9, CompletionTokens: 9}})
	file, _ := chatComposition(t, srv)
	t.Setenv("DSH_HOME", t.TempDir())
	tty, screen := openPTY(t, 60, 20)
	code := runChat(context.Background(), []string{"-c", file}, Stdio{In: strings.NewReader("Plan it.\n"), Out: tty, Err: tty}, make(chan os.Signal), func(bool) {})
	if code != exitOK {
		t.Fatalf("exit %d:\n%q", code, screen.String())
	}
	mcptest.WaitFor(t, 10*time.Second, "the usage line", func() bool { return strings.Contains(screen.String(), "tokens: 9 prompt") })
	raw := strings.ReplaceAll(screen.String(), "\r\n", "\n")
	text := sgr.ReplaceAllString(raw, "")
	// The paragraph streamed plain (stars and all), was erased and came
	// back rendered; the heading's plain start was erased too.
	plainAt, renderedAt := strings.Index(text, "Some **bold** words."), strings.Index(text, "\x1b[J  Some bold words.\n")
	if plainAt < 0 || renderedAt < plainAt || strings.Contains(text, "# Plan") {
		t.Errorf("the paragraph was not streamed plain, then replaced by its rendering:\n%q", raw)
	}
	for _, w := range []string{"• one", "• two", "Plan"} {
		if !strings.Contains(text, w) {
			t.Errorf("the screen lacks %q:\n%q", w, raw)
		}
	}
}

// TestChatPrintRendersOnATerminal: chat -p whose stdout is a terminal
// renders the answer; piped, it stays the Markdown (TestChatPrintExitCodes).
func TestChatPrintRendersOnATerminal(t *testing.T) {
	srv := openaitest.New(t, openaitest.Turn{Content: "Some **bold** words.\n\n- one"})
	file, _ := chatComposition(t, srv)
	t.Setenv("DSH_HOME", t.TempDir())
	tty, screen := openPTY(t, 60, 20)
	var stderr strings.Builder
	code := runChat(context.Background(), []string{"-c", file, "-p", "hi"}, Stdio{In: strings.NewReader(""), Out: tty, Err: &stderr}, make(chan os.Signal), func(bool) {})
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	mcptest.WaitFor(t, 10*time.Second, "the answer", func() bool { return strings.Contains(screen.String(), "one") })
	text := sgr.ReplaceAllString(strings.ReplaceAll(screen.String(), "\r\n", "\n"), "")
	if !strings.Contains(text, "  Some bold words.\n\n  • one\n") {
		t.Errorf("not rendered:\n%q", screen.String())
	}
}
