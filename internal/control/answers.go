package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/policy"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Answers is what the one-shot subcommands ask a host. Local answers from
// a host in this process, Client from a running host over its socket.
type Answers interface {
	Status(ctx context.Context) (Status, error)
	Tools(ctx context.Context) (ToolList, error)
	// Call runs one tool call; its progress goes to req.Report. The
	// error is the transport's or a missing
	// tools service; the call's own failure is in the Result.
	Call(ctx context.Context, req CallRequest) (tools.Result, error)
	Prompt(ctx context.Context) (Prompt, error)
	Command(ctx context.Context, req CommandRequest) (commands.Reply, error)
	// Resources lists the servers' resources and templates; Read reads
	// one. Their errors are the resources service's, a read's failure
	// included.
	Resources(ctx context.Context, req ResourcesRequest) (ResourceList, error)
	Read(ctx context.Context, req ReadRequest) (ReadAnswer, error)
}

// Status is a host's instances and how many tools each registered.
type Status struct {
	PID        int                   `json:"pid"`
	File       string                `json:"file"`
	Instances  []host.InstanceStatus `json:"instances"`
	ToolCounts map[string]int        `json:"toolCounts"`
}

// Tool is one registered tool as listings show it.
type Tool struct {
	Name        string `json:"name"`
	Server      string `json:"server,omitempty"`
	RawName     string `json:"rawName,omitempty"`
	Instance    string `json:"instance,omitempty"`
	Folded      bool   `json:"folded"`
	Description string `json:"description"`
	// Hidden notes the invisible characters the description carries
	// (policy.HiddenText): text a model reads and a person does not see.
	Hidden string `json:"hidden,omitempty"`
	// Withheld is true for a registered tool the caller is not offered
	// (the policy holds it until it is trusted, or its rules deny it to
	// the caller): calls are refused.
	Withheld bool `json:"withheld,omitempty"`
}

// ToolList is every tool a command-line caller sees, and the instances.
type ToolList struct {
	Tools     []Tool                `json:"tools"`
	Instances []host.InstanceStatus `json:"instances"`
}

// CallRequest is one tool call.
type CallRequest struct {
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args"`
	ImageInput bool            `json:"imageInput,omitempty"`
	// Elicit answers a server's questions during the call: "defaults"
	// accepts a form's defaults, "decline" (or empty) declines.
	Elicit string `json:"elicit,omitempty"`
	// Progress asks for the call's progress reports.
	Progress bool `json:"progress,omitempty"`
	// Yes approves the call where the policy would ask (nobody is there
	// to answer a one-shot command): `dsh-host call --yes`.
	Yes bool `json:"yes,omitempty"`
	// Report, when set, receives the call's progress reports (the
	// call's tools.Channels.Progress); over the socket it sets Progress.
	Report func(tools.Progress) `json:"-"`
}

// Prompt is the model-facing tools array: its exact bytes, the system
// prompt sections and the number of tools.
type Prompt struct {
	ToolsJSON string          `json:"toolsJSON"`
	Sections  []tools.Section `json:"sections"`
	Count     int             `json:"count"`
}

// CommandRequest is one slash command line.
type CommandRequest struct {
	Line   string `json:"line"`
	Elicit string `json:"elicit,omitempty"`
}

// ResourcesRequest filters a resources listing (resources.Filter).
type ResourcesRequest struct {
	Server string `json:"server,omitempty"`
	Query  string `json:"query,omitempty"`
}

// ResourceList is every resource and template that passed the filter,
// and the instances.
type ResourceList struct {
	Resources []resources.Resource  `json:"resources"`
	Templates []resources.Template  `json:"templates"`
	Instances []host.InstanceStatus `json:"instances"`
}

// ReadRequest reads one resource: URI, or Template expanded with Args.
// Server names the server to ask; empty routes it (resources.Registry).
type ReadRequest struct {
	URI      string            `json:"uri,omitempty"`
	Template string            `json:"template,omitempty"`
	Args     map[string]string `json:"args,omitempty"`
	Server   string            `json:"server,omitempty"`
}

// ReadAnswer is a read as the server sent it, and its text for a person:
// an image or other binary content kept in the host's attachment store
// and shown by reference.
type ReadAnswer struct {
	resources.Read
	Text string `json:"text"`
}

// ReloadResult is the outcome of a reload: Error is empty when the
// composition was applied.
type ReloadResult struct {
	Error     string                `json:"error,omitempty"`
	Instances []host.InstanceStatus `json:"instances"`
	// Outcomes says how each entry the reload touched came out: started,
	// restarted, kept (its new config failed; the previous one runs),
	// failed, pending or disposed.
	Outcomes []host.Outcome `json:"outcomes,omitempty"`
}

// errNoTools, errNoCommands and errNoResources: a service the composition
// does not run.
var (
	errNoTools     = errors.New("the tools service is not running (check the composition's status)")
	errNoCommands  = errors.New("the commands service is not running (check the composition's status)")
	errNoResources = errors.New("the resources service is not running (check the composition's status)")
)

// Local answers from a host in this process.
type Local struct {
	Host *host.Host
	File string // the composition file, as the user named it
}

var _ Answers = (*Local)(nil)

func (l *Local) registry() (*tools.Registry, error) {
	r, ok := host.Lookup(l.Host, tools.Key)
	if !ok || r == nil {
		return nil, errNoTools
	}
	return r, nil
}

// Status returns the host's instances.
func (l *Local) Status(context.Context) (Status, error) {
	reg, _ := l.registry()
	return Status{PID: os.Getpid(), File: l.File, Instances: l.Host.Status(), ToolCounts: CountTools(reg)}, nil
}

// Tools lists the tools a command-line caller sees.
func (l *Local) Tools(ctx context.Context) (ToolList, error) {
	reg, err := l.registry()
	if err != nil {
		return ToolList{}, err
	}
	rows, err := ListTools(ctx, reg, tools.Caller{Kind: tools.CallerCall})
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
	// A one-shot command: nobody is there to answer an approval, so --yes
	// does; a server's questions get the --elicit answer.
	ch := &tools.Channels{Progress: req.Report, Answerer: elicitAnswerer(req.Elicit), OneShot: &tools.OneShot{Yes: req.Yes}}
	return reg.Run(ctx, tools.Call{Caller: tools.Caller{Kind: tools.CallerCall, ImageInput: req.ImageInput}, Name: req.Tool, Args: req.Args, Channels: ch}), nil
}

// Prompt assembles the tools array a command-line caller's model sees.
func (l *Local) Prompt(ctx context.Context) (Prompt, error) {
	reg, err := l.registry()
	if err != nil {
		return Prompt{}, err
	}
	asm, err := reg.Assemble(ctx, tools.Caller{Kind: tools.CallerCall})
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
	reg, ok := host.Lookup(l.Host, commands.Key)
	if !ok || reg == nil {
		return commands.Reply{}, errNoCommands
	}
	// A command's reads (a resource, a prompt) may be asked questions:
	// the --elicit answer gives them.
	ctx = tools.ContextWithChannels(ctx, &tools.Channels{Answerer: elicitAnswerer(req.Elicit)})
	return reg.Run(ctx, tools.Caller{Kind: tools.CallerCall}, req.Line), nil
}

func (l *Local) resources() (*resources.Registry, error) {
	r, ok := host.Lookup(l.Host, resources.Key)
	if !ok || r == nil {
		return nil, errNoResources
	}
	return r, nil
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
	res, err := reg.ReadFrom(ctx, from, uri)
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
	before := l.Host.Reloads()
	l.Host.Reload()
	// The watcher reports its loads only as counters: poll them.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		st := l.Host.Reloads()
		if st.Applied+st.Failed > before.Applied+before.Failed {
			res := ReloadResult{Instances: l.Host.Status()}
			if st.Failed > before.Failed && st.LastError != nil {
				res.Error = st.LastError.Error()
			} else {
				res.Outcomes = st.Outcomes
			}
			return res, nil
		}
		select {
		case <-ctx.Done():
			return ReloadResult{}, ctx.Err()
		case <-tick.C:
		}
	}
}

// declineAll declines every question: nobody attached can answer.
var declineAll elicit.Answerer = elicit.AnswerFunc(func(context.Context, elicit.Request) (elicit.Result, error) {
	return elicit.Result{Action: elicit.Decline, Reason: elicit.NoAnswerer}, nil
})

// elicitAnswerer returns the answerer of mode: "defaults" or "decline".
// Empty is nil: the host's installed answerer.
func elicitAnswerer(mode string) elicit.Answerer {
	switch mode {
	case "defaults":
		return elicit.Defaults()
	case "decline":
		return declineAll
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
			Hidden:      policy.HiddenText(d.Description),
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
