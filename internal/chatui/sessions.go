package chatui

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/console"
)

// Sessions is where chat saves its conversations, and the composition
// file they belong to (--continue picks the last one of it).
type Sessions struct {
	dir, composition string
}

// NewSessions is where the conversations of the composition in file go.
func NewSessions(file string) (Sessions, error) {
	dir, abs, err := app.SessionsOf(file)
	if err != nil {
		return Sessions{}, err
	}
	return Sessions{dir: dir, composition: abs}, nil
}

// chatCommands are chat's own slash commands, for /help.
func chatCommands() [][2]string {
	return [][2]string{
		{"/sessions", "saved conversations: id, last turn, first line, turns"},
		{"/resume ID", "switch to a saved conversation"},
		{"/retry", "send again the message of the last turn that failed or was cancelled"},
		{"/mcp__SERVER__PROMPT ARGS", "insert an MCP prompt's messages as turns; the model answers"},
	}
}

// command runs chat's own slash commands.
func (f *chatFront) command(ctx context.Context, name, rest string) bool {
	switch name {
	case "/sessions":
		f.listSessions(ctx)
	case "/resume":
		f.resume(ctx, rest)
	case "/retry":
		f.retry(ctx)
	default:
		return f.promptTurn(ctx, name, rest)
	}
	return true
}

func (f *chatFront) listSessions(ctx context.Context) {
	list, err := f.app.ChatSessions(ctx, app.ChatSessionsRequest{Conversation: f.conversation()})
	if err != nil {
		fmt.Fprintf(f.out, "error: %v\n", err)
		return
	}
	for _, w := range list.Warnings {
		fmt.Fprintf(f.out, "warning: %s\n", w)
	}
	if len(list.Sessions) == 0 {
		fmt.Fprintf(f.out, "no saved conversations in %s\n", list.Dir)
		return
	}
	tw := tabwriter.NewWriter(f.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLAST TURN\tTURNS\tFIRST LINE")
	for _, s := range list.Sessions {
		mark := ""
		if s.Current {
			mark = " (this one)"
		}
		if s.Composition != f.sessions.composition {
			mark += " (" + s.Composition + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s%s\n", s.ID, s.Updated.Local().Format("2006-01-02 15:04"), s.Turns, console.OneLine(s.FirstLine, 60), mark)
	}
	tw.Flush()
}

func (f *chatFront) resume(ctx context.Context, id string) {
	if id == "" {
		fmt.Fprintln(f.out, "usage: /resume ID (/sessions lists them)")
		return
	}
	info, err := f.app.ChatSession(ctx, app.ChatSessionRequest{Resume: id, Conversation: f.conversation()})
	if errors.Is(err, app.ErrNoConversation) {
		// The host dropped the console's conversation: the session
		// resumes in a new one.
		info, err = f.app.ChatSession(ctx, app.ChatSessionRequest{Resume: id})
	}
	switch {
	case errors.Is(err, app.ErrNoAgent):
		fmt.Fprintln(f.out, "the agent is not running; /status says why")
		return
	case err != nil:
		fmt.Fprintf(f.out, "error: %v\n", err)
		return
	}
	f.setConversation(info.Conversation)
	for _, w := range info.Warnings {
		fmt.Fprintf(f.out, "warning: %s\n", w)
	}
	fmt.Fprintf(f.out, "resumed session %s (%d turns)\n", info.Session, info.Turns)
	showTranscript(f.out, info, f.cols())
	f.setPending(info.Pending)
}
