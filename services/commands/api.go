// Package commands is the slash-command service: front ends (the console,
// `dsh-host command`) run commands that plugins register.
//
// # Registering
//
// A plugin that injects [Key] registers a [Command] on its scope; the command
// goes away with the scope, with no teardown to write:
//
//	cmds, ok := host.Lookup(s, commands.Key)
//	if ok {
//		_, err := cmds.Register(s, commands.Command{Name: "mcp", ...})
//	}
//
// # Running
//
// A front end passes the user's line to [Registry.Run]; the reply is text
// plus an error flag, never a Go error, so every front end renders it the
// same way.
package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Key is the commands service.
var Key = host.NewKey[*Registry]("commands")

// Command is one slash command.
type Command struct {
	Name        string // NameRule, without the slash
	Description string
	Usage       string // hint for the arguments, e.g. "[list [server|tool] | config]"
	Handler     Handler
	// Complete, when set, suggests values for the last word of input (the
	// text after the name, as typed so far); /complete and front ends ask
	// it. Nil: the command completes nothing.
	Complete func(ctx context.Context, input string) ([]string, error)
}

// Handler runs a command.
type Handler func(ctx context.Context, inv Invocation) Reply

// Func adapts fn to a Handler: fn gets the text after the command's name
// and answers with text, or with an error the front end shows as one.
func Func(fn func(ctx context.Context, input string) (string, error)) Handler {
	return func(ctx context.Context, inv Invocation) Reply {
		text, err := fn(ctx, inv.Input)
		if err != nil {
			return Reply{Text: err.Error(), Error: true}
		}
		return Reply{Text: text}
	}
}

// Invocation is one run of a command.
type Invocation struct {
	// Input is the text after "/name", trimmed.
	Input string
	// Caller is who runs it (its mask limits the tools it sees).
	Caller tools.Caller
	// Channels are the caller's back-channels (who answers a question the
	// command asks), as a tool call's are; nil when the caller gave none.
	Channels *tools.Channels
}

// Reply is a command's answer: text, and whether it is an error.
type Reply struct {
	Text  string
	Error bool
}

// Registry holds the commands. It is safe for concurrent use; the zero
// value is ready to use.
type Registry struct {
	mu   sync.RWMutex
	cmds map[string]*entry
	// staged holds the commands of instances started beside the one they
	// replace, until they go live (stage.go).
	staged map[*host.Scope][]*entry
	// instances is the host's status (Scope.Instances), nil outside a
	// host: an unknown command names the instance that is not running.
	instances func() []host.InstanceStatus
}

// entry is a registered command; removal compares the pointer so that a
// stale remove never deletes a later registration of the same name.
type entry struct {
	cmd   Command
	owner string // the id of the scope that registered it, for clashes
	scope *host.Scope
}

// NameRule is the pattern every command name must match: a letter, then
// the characters of the tool name contract (services/tools.NamePattern),
// at most 64 in all, so that an MCP server's prompt can be the command
// /mcp__<serverName>__<prompt>, named like its tools. The length is
// checked apart (maxName): a counted repetition compiles to a 60 KB
// program that every command's start would allocate.
var NameRule = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// maxName is the longest command name.
const maxName = 64

// New returns an empty registry.
func New() *Registry { return &Registry{} }

// Register adds c on behalf of the plugin instance whose scope is s: the
// command goes away when s is disposed, or earlier by remove. A taken or
// invalid name is an error; a nil s panics (a registration must belong to
// someone; in a test, use host.NewScope).
func (r *Registry) Register(s *host.Scope, c Command) (remove func(), err error) {
	if s == nil {
		panic("commands: Register needs the registering plugin's *host.Scope, got nil (in a test, use host.NewScope)")
	}
	if len(c.Name) > maxName || !NameRule.MatchString(c.Name) {
		return nil, fmt.Errorf("command name %q must match %s (a letter, then letters, digits, _ or -; at most 64; no slash)", c.Name, NameRule)
	}
	if c.Handler == nil {
		return nil, fmt.Errorf("command /%s has no handler", c.Name)
	}
	e := &entry{cmd: c, owner: s.ID(), scope: s}
	if s.Retired() {
		return func() {}, nil // replaced and draining: not served
	}
	r.mu.Lock()
	if s.Staged() {
		return r.stage(s, e) // unlocks
	}
	if held, taken := r.cmds[c.Name]; taken {
		r.mu.Unlock()
		return nil, fmt.Errorf("command /%s is already registered by instance %q: pick another name or remove the other registration", c.Name, held.owner)
	}
	if r.cmds == nil {
		r.cmds = map[string]*entry{}
	}
	r.cmds[c.Name] = e
	r.mu.Unlock()

	return s.Effect("command /"+c.Name, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.cmds[c.Name] == e {
			delete(r.cmds, c.Name)
		}
		r.unstageLocked(e)
	}), nil
}

// Run parses line ("/name input") and runs the command. An unknown command
// is an error reply listing the known ones. The leading slash is optional.
// A handler that panics yields an error reply instead of taking the front
// end down. The command runs with no back-channels: a question it asks goes
// to the elicitation service's installed answerer (see RunWith).
func (r *Registry) Run(ctx context.Context, caller tools.Caller, line string) Reply {
	return r.RunWith(ctx, caller, line, nil)
}

// RunWith runs line as Run does, with the caller's back-channels ch
// (Invocation.Channels): who answers a question the command, or a server
// it reaches, asks while it runs (nil: none, as Run).
func (r *Registry) RunWith(ctx context.Context, caller tools.Caller, line string, ch *tools.Channels) (reply Reply) {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "/")
	name, input := line, ""
	if i := strings.IndexFunc(line, unicode.IsSpace); i >= 0 {
		name, input = line[:i], strings.TrimSpace(line[i:])
	}
	if name == "" {
		return Reply{Text: "no command given — " + r.known(), Error: true}
	}
	r.mu.RLock()
	e, ok := r.cmds[name]
	r.mu.RUnlock()
	if !ok {
		return Reply{Text: r.unknown(name), Error: true}
	}
	defer func() {
		if p := recover(); p != nil {
			slog.Default().Error("command panicked", "command", "/"+name, "panic", p, "stack", string(debug.Stack()))
			reply = Reply{Text: fmt.Sprintf("/%s failed: %v — a bug in the plugin that registered it; the log has the stack to report", name, p), Error: true}
		}
	}()
	return e.cmd.Handler(ctx, Invocation{Input: input, Caller: caller, Channels: ch})
}

// unknown says that /name is not registered, and why when the instance it
// would come from is not running.
func (r *Registry) unknown(name string) string {
	msg := "unknown command /" + name
	if r.instances != nil {
		if why := notRunning(r.instances(), name); why != "" {
			msg += ": " + why
		}
	}
	return msg + " — " + r.known()
}

// notRunning names the instance that would register the command name, when
// it is not active: the one claiming it (a Claim of Kind "command"), else
// the one whose entry id is the name, as a plugin names its command after
// its instance; "" when there is none.
func notRunning(st []host.InstanceStatus, name string) string {
	var owner *host.InstanceStatus
	for i, s := range st {
		if slices.ContainsFunc(s.Claims, func(c host.Claim) bool { return c.Kind == "command" && c.Value == name }) {
			owner = &st[i]
			break
		}
		if s.ID == name && owner == nil {
			owner = &st[i]
		}
	}
	if owner == nil || owner.State == host.StateActive {
		return ""
	}
	text := fmt.Sprintf("instance %q (%s) is %s", owner.ID, owner.Plugin, owner.State)
	if owner.State == host.StateFailed {
		text = fmt.Sprintf("instance %q (%s) failed", owner.ID, owner.Plugin)
	}
	if owner.Err != "" {
		text += ": " + owner.Err
	}
	return text
}

// known lists the registered commands for an error reply.
func (r *Registry) known() string {
	list := r.List()
	if len(list) == 0 {
		return "no commands are registered"
	}
	names := make([]string, len(list))
	for i, c := range list {
		names[i] = "/" + c.Name
	}
	return "known commands: " + strings.Join(names, ", ")
}

// List returns the commands sorted by name.
func (r *Registry) List() []Command {
	r.mu.RLock()
	out := make([]Command, 0, len(r.cmds))
	for _, e := range r.cmds {
		out = append(out, e.cmd)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Complete suggests completions for line as typed so far ("/name input"):
// command names while the name is being typed, else what the command's
// Complete offers for the last word of its input. A command without
// Complete offers nothing.
func (r *Registry) Complete(ctx context.Context, line string) ([]string, error) {
	line = strings.TrimLeftFunc(line, unicode.IsSpace)
	line = strings.TrimPrefix(line, "/")
	i := strings.IndexFunc(line, unicode.IsSpace)
	if i < 0 {
		var out []string
		for _, c := range r.List() {
			if strings.HasPrefix(c.Name, line) {
				out = append(out, "/"+c.Name)
			}
		}
		return out, nil
	}
	name, input := line[:i], strings.TrimLeftFunc(line[i:], unicode.IsSpace)
	r.mu.RLock()
	e, ok := r.cmds[name]
	r.mu.RUnlock()
	if !ok {
		return nil, errors.New(r.unknown(name))
	}
	if e.cmd.Complete == nil {
		return nil, nil
	}
	return e.cmd.Complete(ctx, input)
}

// SplitArgs splits a command's input into words: separated by spaces, with
// "double" or 'single' quotes keeping spaces inside a word and a backslash
// escaping the next character (outside single quotes). An unclosed quote is
// an error.
func SplitArgs(input string) ([]string, error) {
	words, open := splitWords(input)
	if open != 0 {
		return nil, fmt.Errorf("unclosed %c quote in %q", open, input)
	}
	return words, nil
}

// LastWord splits input as SplitArgs does, tolerating an unclosed quote,
// and returns the words before the last one and the last one, which is
// empty when input ends in a space (a new word is starting).
func LastWord(input string) (before []string, last string) {
	words, open := splitWords(input)
	if open == 0 && (input == "" || unicode.IsSpace(rune(input[len(input)-1]))) {
		return words, ""
	}
	if len(words) == 0 {
		return nil, ""
	}
	return words[:len(words)-1], words[len(words)-1]
}

// splitWords does the splitting; open is the quote left unclosed, or 0.
func splitWords(input string) (words []string, open rune) {
	var b strings.Builder
	inWord, escaped := false, false
	for _, c := range input {
		switch {
		case escaped:
			b.WriteRune(c)
			escaped = false
		case open != 0:
			if c == open {
				open = 0
			} else if c == '\\' && open == '"' {
				escaped = true
			} else {
				b.WriteRune(c)
			}
		case c == '\\':
			escaped, inWord = true, true
		case c == '"' || c == '\'':
			open, inWord = c, true
		case unicode.IsSpace(c):
			if inWord {
				words = append(words, b.String())
				b.Reset()
				inWord = false
			}
		default:
			b.WriteRune(c)
			inWord = true
		}
	}
	if inWord || open != 0 {
		words = append(words, b.String())
	}
	return words, open
}
