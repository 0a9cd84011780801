package chatui

// The chat console's line editor on a terminal (package lineedit), and
// what Tab completes: commands, @server:uri mentions and file paths.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/internal/dshhome"
	"github.com/dsh-host/dsh-host/internal/lineedit"
)

// HistoryFile is the chat console's history under $DSH_HOME.
const HistoryFile = "chat_history"

// newEditor returns a line editor when std's input and output are a
// terminal, nil elsewhere (a pipe, a test's buffer: plain lines). An
// editor that cannot start is said on warn, and the lines are plain.
func newEditor(ctx context.Context, std console.Stdio, a app.App, warn io.Writer) *lineedit.Editor {
	in, ok := std.In.(*os.File)
	if !ok || !std.IsTerminal(in) || !std.IsTerminal(std.Out) {
		return nil
	}
	history, err := dshhome.Path(HistoryFile)
	if err != nil {
		fmt.Fprintf(warn, "no input history: %v\n", err)
		history = ""
	}
	ed, err := lineedit.New(lineedit.Config{In: in, Out: std.Out, History: history, Complete: completer(ctx, a)})
	if err != nil {
		fmt.Fprintf(warn, "no line editor (%v); lines are read as typed\n", err)
		return nil
	}
	return ed
}

// editorHook is the console's Editor hook: the editor's Ctrl-C at an
// empty prompt as the console's.
func editorHook(ed *lineedit.Editor) func() (string, error) {
	return func() (string, error) {
		line, err := ed.ReadLine()
		if errors.Is(err, lineedit.ErrInterrupt) {
			return "", console.ErrInterrupt
		}
		return line, err
	}
}

// completeWait bounds a completion that asks the host (commands,
// resources): Tab never hangs the prompt.
const completeWait = 2 * time.Second

// completer returns the candidates for the word before the cursor: a
// command for a first word starting with /, a resource for one starting
// with @, a file path for one with a / or starting with . or ~.
func completer(ctx context.Context, a app.App) func(string) (string, []string) {
	return func(before string) (string, []string) {
		word := before[strings.LastIndexAny(before, " \t\n")+1:]
		switch {
		case strings.HasPrefix(word, "/") && word == before:
			return word, commandNames(ctx, a)
		case strings.HasPrefix(word, "@"):
			return word, mentions(ctx, a)
		case strings.ContainsRune(word, '/') || strings.HasPrefix(word, ".") || strings.HasPrefix(word, "~"):
			return word, paths(word)
		}
		return word, nil
	}
}

func commandNames(ctx context.Context, a app.App) []string {
	names := console.BuiltinNames()
	for _, c := range chatCommands() {
		name, _, _ := strings.Cut(c[0], " ")
		names = append(names, name)
	}
	ctx, cancel := context.WithTimeout(ctx, completeWait)
	defer cancel()
	if cmds, err := a.Commands(ctx); err == nil {
		for _, c := range cmds {
			names = append(names, "/"+c.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// mentions are the servers' resources as @server:uri, as a turn reads
// them.
func mentions(ctx context.Context, a app.App) []string {
	ctx, cancel := context.WithTimeout(ctx, completeWait)
	defer cancel()
	list, err := a.Resources(ctx, app.ResourcesRequest{})
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range list.Resources {
		out = append(out, "@"+r.Server+":"+r.URI)
	}
	return out
}

// maxPathCandidates bounds a directory's listing offered at once.
const maxPathCandidates = 200

// paths are the entries of word's directory that start with its last
// element, directories with a trailing /.
func paths(word string) []string {
	dir, base := filepath.Split(word)
	look := dir
	if strings.HasPrefix(look, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			look = filepath.Join(home, look[2:])
		}
	}
	if look == "" {
		look = "."
	}
	entries, err := os.ReadDir(look)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, base) || strings.HasPrefix(name, ".") && !strings.HasPrefix(base, ".") {
			continue
		}
		if e.IsDir() {
			name += "/"
		}
		out = append(out, dir+name)
		if len(out) == maxPathCandidates {
			break
		}
	}
	return out
}
