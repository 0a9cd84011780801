package main

// What the subcommands of this package take from the console
// (internal/console): the terminal decision and a call's progress line.

import (
	"io"

	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/services/tools"
)

// front is s as the front-end packages take it.
func (s Stdio) front() console.Stdio {
	return console.Stdio{In: s.In, Out: s.Out, Err: s.Err, Terminal: s.terminal}
}

// liveTerminal returns w when s takes it for a terminal, where a live
// progress line may go, else nil.
func (s Stdio) liveTerminal(w io.Writer) io.Writer { return s.front().LiveTerminal(w) }

func progressLineOn(w io.Writer, label string) (report func(tools.Progress), clear func()) {
	return console.ProgressLineOn(w, label)
}
