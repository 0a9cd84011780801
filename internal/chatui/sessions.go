package chatui

import (
	"context"
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/console"
	"github.com/dsh-host/dsh-host/plugins/agent"
	"github.com/dsh-host/dsh-host/plugins/agent/sessions"
)

// Sessions is where chat saves its conversations, and the composition
// file they belong to (--continue picks the last one of it).
type Sessions struct {
	dir, composition string
}

// NewSessions is where the conversations of the composition in file go.
func NewSessions(file string) (Sessions, error) {
	dir, err := sessions.Dir()
	if err != nil {
		return Sessions{}, err
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return Sessions{}, fmt.Errorf("resolve %s: %w", file, err)
	}
	return Sessions{dir: dir, composition: abs}, nil
}

// start saves conv's turns in a new session; the zero Sessions saves
// nothing.
func (s Sessions) start(conv *agent.Conversation, model string) error {
	if s.dir == "" {
		return nil
	}
	sess, err := sessions.New(s.dir, s.composition, model)
	if err != nil {
		return err
	}
	conv.Record(sess)
	return nil
}

// chatCommands are chat's own slash commands, for /help.
func chatCommands() [][2]string {
	return [][2]string{
		{"/sessions", "saved conversations: id, last turn, first line, turns"},
		{"/resume ID", "switch to a saved conversation"},
		{"/mcp__SERVER__PROMPT ARGS", "insert an MCP prompt's messages as turns; the model answers"},
	}
}

// command runs chat's own slash commands.
func (f *chatFront) command(ctx context.Context, name, rest string) bool {
	switch name {
	case "/sessions":
		f.listSessions()
	case "/resume":
		f.resume(rest)
	default:
		return f.promptTurn(ctx, name, rest)
	}
	return true
}

func (f *chatFront) listSessions() {
	list, warnings, err := sessions.List(f.sessions.dir)
	if err != nil {
		fmt.Fprintf(f.out, "error: %v\n", err)
		return
	}
	for _, w := range warnings {
		fmt.Fprintf(f.out, "warning: %s\n", w)
	}
	if len(list) == 0 {
		fmt.Fprintf(f.out, "no saved conversations in %s\n", f.sessions.dir)
		return
	}
	current := ""
	if a, ok := host.Lookup(f.h, agent.Key); ok {
		if s := a.Main().Session(); s != nil {
			current = s.ID
		}
	}
	tw := tabwriter.NewWriter(f.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLAST TURN\tTURNS\tFIRST LINE")
	for _, s := range list {
		mark := ""
		if s.ID == current {
			mark = " (this one)"
		}
		if s.Composition != f.sessions.composition {
			mark += " (" + s.Composition + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s%s\n", s.ID, s.Updated.Local().Format("2006-01-02 15:04"), s.Turns, console.OneLine(s.FirstLine, 60), mark)
	}
	tw.Flush()
}

func (f *chatFront) resume(id string) {
	if id == "" {
		fmt.Fprintln(f.out, "usage: /resume ID (/sessions lists them)")
		return
	}
	a, ok := host.Lookup(f.h, agent.Key)
	if !ok {
		fmt.Fprintln(f.out, "the agent is not running; /status says why")
		return
	}
	ls, err := sessions.Open(f.sessions.dir, id)
	if err != nil {
		fmt.Fprintf(f.out, "error: %v\n", err)
		return
	}
	for _, w := range ls.Warnings {
		fmt.Fprintf(f.out, "warning: %s\n", w)
	}
	if err := a.Main().Resume(ls); err != nil {
		fmt.Fprintf(f.out, "error: %v\n", err)
		return
	}
	f.agent = a
	fmt.Fprintf(f.out, "resumed session %s (%d turns)\n", ls.ID, ls.Info.Turns)
}
