package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/agent"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/policy/pins"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// ErrNoTools, ErrNoCommands and ErrNoResources: a service the composition
// does not run.
var (
	ErrNoTools     = errors.New("the tools service is not running (check the composition's status)")
	ErrNoCommands  = errors.New("the commands service is not running (check the composition's status)")
	ErrNoResources = errors.New("the resources service is not running (check the composition's status)")
	// ErrNotWatched: Reload on a host that does not follow its file.
	ErrNotWatched = errors.New("this host does not follow its composition file (only dsh-host run and serve do): nothing to reload")
)

// Local answers from a host in this process.
type Local struct {
	Host *host.Host
	File string // the composition file, as the user named it
	// AuditDir is the policy's trail (its audit.dir), for an Audit that
	// names none; empty: $DSH_HOME/audit.
	AuditDir string

	// editMu serializes SetDisabled's read, edit and write of File: two
	// front ends' edits at once would each write over the other's.
	editMu sync.Mutex

	chatMu    sync.Mutex
	chatAgent *agent.Agent  // the agent of the main conversation's last turn or session
	convs     conversations // the front ends' own (conversations.go)
}

var _ App = (*Local)(nil)

// lookup is host.Lookup that also refuses a nil service.
func lookup[T comparable](h *host.Host, k host.Key[T]) (T, bool) {
	v, ok := host.Lookup(h, k)
	var zero T
	return v, ok && v != zero
}

func (l *Local) registry() (*tools.Registry, error) {
	if r, ok := lookup(l.Host, tools.Key); ok {
		return r, nil
	}
	return nil, ErrNoTools
}

// Status returns the host's instances.
func (l *Local) Status(context.Context) (Status, error) {
	reg, _ := l.registry()
	return Status{PID: os.Getpid(), File: l.File, Instances: l.Host.Status(), ToolCounts: CountTools(reg)}, nil
}

// Tools lists the tools req's caller sees.
func (l *Local) Tools(ctx context.Context, req ToolsRequest) (ToolList, error) {
	reg, err := l.registry()
	if err != nil {
		return ToolList{}, err
	}
	caller, err := frontEnd(req.Caller)
	if err != nil {
		return ToolList{}, err
	}
	rows, err := ListTools(ctx, reg, caller)
	if err != nil {
		return ToolList{}, err
	}
	return ToolList{Tools: rows, Instances: l.Host.Status()}, nil
}

// Call runs req through the registry's pipeline.
func (l *Local) Call(ctx context.Context, req CallRequest) (tools.Result, error) {
	reg, err := l.registry()
	if err != nil {
		return tools.Result{}, err
	}
	caller, err := frontEnd(req.Caller)
	if err != nil {
		return tools.Result{}, err
	}
	caller.ImageInput = req.ImageInput
	ch := &tools.Channels{Progress: req.Progress}
	if req.Answer != nil {
		// Someone answers: the policy asks them, as it asks a console,
		// unless --yes approved ahead.
		ch.Answerer = req.Answer
		if req.Yes {
			ch.OneShot = &tools.OneShot{Yes: true}
		}
	} else {
		// A one-shot command: nobody is there to answer an approval, so
		// --yes does; a server's questions get the --elicit answer.
		ch.Answerer, ch.OneShot = elicitAnswerer(req.Elicit), &tools.OneShot{Yes: req.Yes}
	}
	return reg.Run(ctx, tools.Call{Caller: caller, Name: req.Tool, Args: req.Args, Channels: ch}), nil
}

// Prompt assembles the tools array req's caller's model sees.
func (l *Local) Prompt(ctx context.Context, req ToolsRequest) (Prompt, error) {
	reg, err := l.registry()
	if err != nil {
		return Prompt{}, err
	}
	caller, err := frontEnd(req.Caller)
	if err != nil {
		return Prompt{}, err
	}
	asm, err := reg.Assemble(ctx, caller)
	if err != nil {
		return Prompt{}, err
	}
	b, err := asm.ToolsJSON()
	if err != nil {
		return Prompt{}, fmt.Errorf("encode the tools array: %w", err)
	}
	return Prompt{ToolsJSON: string(b), Sections: asm.Sections, Count: len(asm.Tools)}, nil
}

// Command runs one slash command.
func (l *Local) Command(ctx context.Context, req CommandRequest) (commands.Reply, error) {
	reg, ok := lookup(l.Host, commands.Key)
	if !ok {
		return commands.Reply{}, ErrNoCommands
	}
	caller, err := frontEnd(req.Caller)
	if err != nil {
		return commands.Reply{}, err
	}
	ctx, err = l.commandContext(ctx, req.Conversation)
	if err != nil {
		return commands.Reply{}, err
	}
	// A command's reads (a resource, a prompt) may be asked questions.
	a := req.Answer
	if a == nil {
		a = elicitAnswerer(req.Elicit)
	}
	return reg.RunWith(ctx, caller, req.Line, &tools.Channels{Answerer: a}), nil
}

// Commands lists the registered slash commands by name.
func (l *Local) Commands(context.Context) ([]CommandInfo, error) {
	reg, ok := lookup(l.Host, commands.Key)
	if !ok {
		return nil, ErrNoCommands
	}
	list := []CommandInfo{}
	for _, c := range reg.List() {
		list = append(list, CommandInfo{Name: c.Name, Usage: c.Usage, Description: c.Description})
	}
	return list, nil
}

// Installer is an App whose host runs in this process (Local): a front
// end there installs its answerer on the host for the questions no
// request of its own carries (a server's, asked outside any call).
type Installer interface {
	InstallAnswerer(a elicit.Answerer) (remove func())
}

// InstallAnswerer installs a on the host's elicitation service, ahead of
// the one installed before, and returns its removal; without the service
// (a composition that disabled it) nothing is installed.
func (l *Local) InstallAnswerer(a elicit.Answerer) (remove func()) {
	svc, ok := lookup(l.Host, elicit.Key)
	if !ok {
		return func() {}
	}
	return svc.Install(a)
}

func (l *Local) resources() (*resources.Registry, error) {
	if r, ok := lookup(l.Host, resources.Key); ok {
		return r, nil
	}
	return nil, ErrNoResources
}

// Resources lists the resources and templates that pass req's filter.
func (l *Local) Resources(_ context.Context, req ResourcesRequest) (ResourceList, error) {
	reg, err := l.resources()
	if err != nil {
		return ResourceList{}, err
	}
	if req.Server != "" && !reg.Has(req.Server) {
		servers := strings.Join(reg.Servers(), ", ")
		if servers == "" {
			servers = "-"
		}
		return ResourceList{}, fmt.Errorf("%w %q (servers offering resources: %s)", resources.ErrUnknownServer, req.Server, servers)
	}
	f := resources.Filter{Server: req.Server, Query: req.Query}
	// Empty lists, not null: --json prints them as they are.
	list := ResourceList{Resources: []resources.Resource{}, Templates: []resources.Template{}, Instances: l.Host.Status()}
	list.Resources = append(list.Resources, reg.List(f)...)
	list.Templates = append(list.Templates, reg.Templates(f)...)
	return list, nil
}

// Read reads one resource, after expanding req's template if it has one.
func (l *Local) Read(ctx context.Context, req ReadRequest) (ReadAnswer, error) {
	reg, err := l.resources()
	if err != nil {
		return ReadAnswer{}, err
	}
	uri, from := req.URI, req.Server
	if req.Template != "" {
		if uri, from, err = reg.Expand(from, req.Template, req.Args); err != nil {
			return ReadAnswer{}, err
		}
	}
	// ReadRequest names no answerer: a question goes to the installed one.
	res, err := reg.ReadFrom(ctx, from, uri, nil)
	if err != nil {
		return ReadAnswer{}, err // it names the server and the URI
	}
	store, _ := host.Lookup(l.Host, attachments.Key)
	// Image-capable: an image is kept and shown by reference.
	content := resources.Renderer{Store: store}.Contents(ctx, tools.Caller{Kind: tools.CallerCall, ImageInput: true}, res.Contents)
	return ReadAnswer{Read: resources.Read{Server: res.Server, URI: uri, Contents: res.Contents}, Text: resources.ContentText(content)}, nil
}

// Reload has the host re-read its composition (as SIGHUP does: failed
// instances are retried) and returns once that is done, or ctx ends. The
// host must be watching its file (host.Watch).
func (l *Local) Reload(ctx context.Context) (ReloadResult, error) {
	ticket, ok := l.Host.RequestReload()
	if !ok {
		// Nothing follows the file (a host of chat or a one-shot
		// command): no outcome would ever come.
		return ReloadResult{}, ErrNotWatched
	}
	// The watcher's counters change under the host's status signal
	// (WaitStatus wakes on each), so the outcome is seen as it lands,
	// without polling. The ticket's load, not whichever load ends next:
	// a save's load under way when a front end edited the file read it
	// before the edit.
	var st host.ReloadStats
	err := l.Host.WaitStatus(ctx, func([]host.InstanceStatus) bool {
		st = l.Host.Reloads()
		return st.Through >= ticket || st.Dropped >= ticket
	})
	if err != nil {
		return ReloadResult{}, ctx.Err()
	}
	if st.Through < ticket {
		// The watch ended (the host is stopping) before a load read the
		// file: no outcome will come.
		return ReloadResult{}, fmt.Errorf("the host stopped following its composition file before the reload ran: %w", ErrNotWatched)
	}
	res := ReloadResult{Instances: l.Host.Status()}
	if st.LastError != nil {
		res.Error = st.LastError.Error()
	} else {
		res.Outcomes = st.Outcomes
	}
	return res, nil
}

// declineAll declines every question: nobody attached can answer.
type declineAll struct{}

func (declineAll) Answer(context.Context, elicit.Request) (elicit.Result, error) {
	return elicit.Result{Action: elicit.Decline, Reason: elicit.NoAnswerer}, nil
}

// elicitAnswerer returns the answerer of mode: "defaults" or "decline".
// Empty is nil: the host's installed answerer.
func elicitAnswerer(mode string) elicit.Answerer {
	switch mode {
	case "defaults":
		return elicit.Defaults()
	case "decline":
		return declineAll{}
	}
	return nil
}

// ListTools returns every tool caller's mask lets it see, marking as
// folded those in the registry but absent from the assembled prompt, and
// as withheld those it is not offered (tools.Registry.OnHide).
func ListTools(ctx context.Context, reg *tools.Registry, caller tools.Caller) ([]Tool, error) {
	asm, err := reg.Assemble(ctx, caller)
	if err != nil {
		return nil, fmt.Errorf("assemble the prompt: %w", err)
	}
	inPrompt := make(map[string]bool, len(asm.Tools))
	for _, s := range asm.Tools {
		inPrompt[s.Name] = true
	}
	offered := map[string]bool{}
	for _, name := range reg.Names(caller) {
		offered[name] = true
	}
	defs := reg.ListAll()
	rows := make([]Tool, 0, len(defs))
	for _, d := range defs {
		if !caller.Mask.Allows(d.Name) {
			continue
		}
		rows = append(rows, Tool{
			Withheld:    !offered[d.Name],
			Name:        d.Name,
			Server:      d.Origin.Server,
			RawName:     d.Origin.RawName,
			Instance:    d.Origin.Instance,
			Folded:      !inPrompt[d.Name],
			Description: d.Description,
			Hidden:      pins.HiddenText(d.Description),
		})
	}
	return rows, nil
}

// CountTools maps each instance id to the number of tools it registered.
func CountTools(reg *tools.Registry) map[string]int {
	n := map[string]int{}
	if reg == nil {
		return n
	}
	for _, d := range reg.ListAll() {
		n[d.Origin.Instance]++
	}
	return n
}

// serialized returns fn called one at a time.
func serialized[T any](fn func(T)) func(T) {
	var mu sync.Mutex
	return func(v T) {
		mu.Lock()
		defer mu.Unlock()
		fn(v)
	}
}

// frontEnd is the caller a request claims: call when it names none,
// console (whose id is "console", as the console's calls always had) or
// ui, nothing else. The socket's peer is a local front end; letting it
// claim gateway or chat would put it under rules written for others.
func frontEnd(kind string) (tools.Caller, error) {
	switch kind {
	case "", tools.CallerCall:
		return tools.Caller{Kind: tools.CallerCall}, nil
	case tools.CallerConsole:
		return tools.Caller{Kind: kind, ID: "console"}, nil
	case tools.CallerUI:
		return tools.Caller{Kind: kind}, nil
	}
	return tools.Caller{}, fmt.Errorf("caller %q: a front end calls as %q, %q or %q", kind, tools.CallerCall, tools.CallerConsole, tools.CallerUI)
}
