package resources

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/tools"
)

// The model-facing tools. Their names, descriptions and schemas are
// constants, like the fold's mcp_list and mcp_call: however many servers
// and resources there are, the prompt carries the same bytes. Neither name
// starts with the fold's prefix mcp__, so the fold never hides them.
const (
	ListToolName = "mcp_resources"
	ReadToolName = "mcp_read"
)

const listToolDescription = "List or search what the connected MCP servers offer to read: resources (documents, files, " +
	"records) and URI templates. query keeps the entries that contain every word; server keeps one server's. Read one with mcp_read."

const listToolSchema = `{"type":"object","properties":{"server":{"type":"string"},"query":{"type":"string"}},"additionalProperties":false}`

const readToolDescription = "Read an MCP resource by uri (from mcp_resources or a resource link), or expand a template from " +
	"mcp_resources with arguments. server is needed only for a URI no server lists. Text comes back inline; images and " +
	"other binary content as stored attachments with MIME type and size."

const readToolSchema = `{"type":"object","properties":{"uri":{"type":"string"},"template":{"type":"string"},` +
	`"arguments":{"type":"object","additionalProperties":{"type":["string","number","boolean"]}},` +
	`"server":{"type":"string"}},"additionalProperties":false}`

// Listing is mcp_resources' value.
type Listing struct {
	Resources []Resource `json:"resources"`
	Templates []Template `json:"templates"`
}

// Read is mcp_read's value: what the server returned, and which server.
type Read struct {
	Server   string                  `json:"server"`
	URI      string                  `json:"uri"`
	Contents []*mcp.ResourceContents `json:"contents"`
}

// maxListed bounds the entries a listing shows; the value keeps them all.
const maxListed = 100

// maxListedDescription bounds one description in a listing.
const maxListedDescription = 200

type listArgs struct {
	Server string `json:"server"`
	Query  string `json:"query"`
}

type readArgs struct {
	URI       string         `json:"uri"`
	Template  string         `json:"template"`
	Arguments map[string]any `json:"arguments"`
	Server    string         `json:"server"`
}

// decodeStrict decodes a tool's arguments, refusing unknown keys.
func decodeStrict(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("arguments do not fit the tool's input schema: %w", err)
	}
	return nil
}

// Gate decides whether a caller may reach a server's doors of a kind (the
// tools registry's Gate, which asks the policy); nil opens every door.
type Gate func(caller tools.Caller, server, kind string) error

func listTool(r *Registry, gate Gate) tools.Definition {
	return tools.Definition{
		Name:        ListToolName,
		Annotations: tools.ReadOnly(),
		Description: listToolDescription,
		InputSchema: json.RawMessage(listToolSchema),
		Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
			var in listArgs
			if err := decodeStrict(call.Args, &in); err != nil {
				return tools.Output{}, err
			}
			if in.Server != "" && gate != nil {
				if err := gate(call.Caller, in.Server, tools.KindResources); err != nil {
					return tools.Output{}, err
				}
			}
			l, err := r.listing(Filter{Server: in.Server, Query: in.Query})
			return tools.Output{Value: gated(l, call.Caller, gate)}, err
		},
		Render: func(v any) []tools.Content {
			if l, ok := v.(Listing); ok {
				return []tools.Content{tools.Text(FormatListing(l))}
			}
			return jsonText(v)
		},
	}
}

// listing is List and Templates together; an unknown server is an error.
func (r *Registry) listing(f Filter) (Listing, error) {
	if f.Server != "" && !r.Has(f.Server) {
		r.mu.RLock()
		err := r.unknownLocked(f.Server)
		r.mu.RUnlock()
		return Listing{}, err
	}
	return Listing{Resources: r.List(f), Templates: r.Templates(f)}, nil
}

// gated keeps of l the entries of the servers gate opens to caller.
func gated(l Listing, caller tools.Caller, gate Gate) Listing {
	if gate == nil {
		return l
	}
	open := map[string]bool{}
	opens := func(server string) bool {
		o, ok := open[server]
		if !ok {
			o = gate(caller, server, tools.KindResources) == nil
			open[server] = o
		}
		return o
	}
	out := Listing{Resources: make([]Resource, 0, len(l.Resources)), Templates: make([]Template, 0, len(l.Templates))}
	for _, x := range l.Resources {
		if opens(x.Server) {
			out.Resources = append(out.Resources, x)
		}
	}
	for _, x := range l.Templates {
		if opens(x.Server) {
			out.Templates = append(out.Templates, x)
		}
	}
	return out
}

func readTool(r *Registry, rd Renderer, gate Gate) tools.Definition {
	return tools.Definition{
		Name:        ReadToolName,
		Annotations: tools.ReadOnly(),
		Description: readToolDescription,
		InputSchema: json.RawMessage(readToolSchema),
		Execute: func(ctx context.Context, call tools.Call) (tools.Output, error) {
			var in readArgs
			if err := decodeStrict(call.Args, &in); err != nil {
				return tools.Output{}, err
			}
			args, err := stringArgs(in.Arguments)
			if err != nil {
				return tools.Output{}, err
			}
			var check func(server string) error
			if gate != nil {
				check = func(server string) error { return gate(call.Caller, server, tools.KindResources) }
			}
			// The server's questions during the read reach the call's
			// caller, as during a tool call of its own.
			v, err := r.read(ctx, in.Server, in.URI, in.Template, args, check, call.Channels)
			if err != nil {
				return tools.Output{}, err
			}
			return tools.Output{Value: v, Content: rd.Contents(ctx, call.Caller, v.Contents)}, nil
		},
		Render: func(v any) []tools.Content {
			if rv, ok := v.(Read); ok {
				// Pure: without a store, binaries are described only.
				return Renderer{}.Contents(context.Background(), tools.Caller{}, rv.Contents)
			}
			return jsonText(v)
		},
	}
}

// stringArgs turns template arguments into strings; a model may send a
// number for an id.
func stringArgs(in map[string]any) (map[string]string, error) {
	if in == nil {
		return nil, nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		switch x := v.(type) {
		case string:
			out[k] = x
		case float64:
			out[k] = strconv.FormatFloat(x, 'f', -1, 64)
		case bool:
			out[k] = strconv.FormatBool(x)
		default:
			return nil, fmt.Errorf("argument %q must be a string, number or boolean", k)
		}
	}
	return out, nil
}

// read reads uri, or template expanded with args, from the server that
// owns it once check (when not nil) lets that server through.
func (r *Registry) read(ctx context.Context, server, uri, template string, args map[string]string, check func(server string) error, ch *tools.Channels) (Read, error) {
	switch {
	case uri != "" && template != "":
		return Read{}, errors.New("give uri or template, not both")
	case uri == "" && template == "":
		return Read{}, errors.New("give uri, or template and arguments (mcp_resources lists both)")
	case template != "":
		expanded, owner, err := r.Expand(server, template, args)
		if err != nil {
			return Read{}, err
		}
		uri, server = expanded, owner
	case len(args) > 0:
		return Read{}, errors.New("arguments go with template, not with uri")
	}
	if server == "" && check != nil {
		// Routed here once, so that the server checked is the one read.
		owner, err := r.Owner(uri)
		if err != nil {
			return Read{}, err
		}
		server = owner
	}
	if check != nil {
		if err := check(server); err != nil {
			return Read{}, err
		}
	}
	// A provider's error names its server and the URI (mcp-client's do).
	res, err := r.ReadFrom(ctx, server, uri, ch)
	if err != nil {
		return Read{}, err
	}
	return Read{Server: res.Server, URI: uri, Contents: res.Contents}, nil
}

func jsonText(v any) []tools.Content {
	b, err := json.Marshal(v)
	if err != nil {
		return []tools.Content{tools.Text(fmt.Sprintf("[unrenderable value: %v]", err))}
	}
	return []tools.Content{tools.Text(string(b))}
}

// FormatListing is the text of a listing, for the model and for people.
func FormatListing(l Listing) string {
	var b strings.Builder
	if len(l.Resources) == 0 && len(l.Templates) == 0 {
		return "No resources or templates match."
	}
	shown := 0
	if len(l.Resources) > 0 {
		fmt.Fprintf(&b, "Resources (%d):\n", len(l.Resources))
		for _, x := range l.Resources {
			if shown == maxListed {
				break
			}
			shown++
			fmt.Fprintf(&b, "- %s  %s", x.URI, x.Name)
			writeMeta(&b, x.Server, x.MIMEType, x.Title, x.Description)
		}
		if n := len(l.Resources) - shown; n > 0 {
			fmt.Fprintf(&b, "(%d more; narrow with server or query)\n", n)
		}
	}
	if len(l.Templates) > 0 {
		fmt.Fprintf(&b, "Templates (%d):\n", len(l.Templates))
		left := maxListed
		for i, x := range l.Templates {
			if i == left {
				fmt.Fprintf(&b, "(%d more; narrow with server or query)\n", len(l.Templates)-i)
				break
			}
			fmt.Fprintf(&b, "- %s  %s", x.URITemplate, x.Name)
			writeMeta(&b, x.Server, x.MIMEType, x.Title, x.Description)
		}
	}
	b.WriteString("Read a resource with mcp_read {\"uri\": ...}; a template with mcp_read {\"template\": ..., \"arguments\": {...}}.")
	return b.String()
}

func writeMeta(b *strings.Builder, server, mimeType, title, description string) {
	fmt.Fprintf(b, " [%s", server)
	if mimeType != "" {
		fmt.Fprintf(b, ", %s", mimeType)
	}
	b.WriteString("]")
	text := description
	if text == "" {
		text = title
	}
	if text = OneLine(text); text != "" {
		if r := []rune(text); len(r) > maxListedDescription {
			text = string(r[:maxListedDescription]) + "…"
		}
		fmt.Fprintf(b, ": %s", text)
	}
	b.WriteString("\n")
}

// OneLine is s with every run of white space, line breaks included, as
// one space: a description for a one-line listing.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// listCommand is /resources [server] [query...].
func listCommand(r *Registry) commands.Command {
	return commands.Command{
		Name:        "resources",
		Description: "list the MCP servers' resources and templates; the first word may name a server, the rest is a search",
		Usage:       "[server] [query]",
		Handler: commands.Func(func(ctx context.Context, input string) (string, error) {
			f := Filter{Query: input}
			if first, rest, _ := strings.Cut(input, " "); first != "" && r.Has(first) {
				f = Filter{Server: first, Query: rest}
			}
			l, err := r.listing(f)
			if err != nil {
				return "", err
			}
			text := FormatListing(l)
			// People read with /read, not with the tool.
			if i := strings.LastIndex(text, "\nRead a resource with mcp_read"); i >= 0 {
				text = text[:i]
			}
			return text, nil
		}),
		Complete: func(ctx context.Context, input string) ([]string, error) {
			before, last := commands.LastWord(input)
			if len(before) > 0 {
				return nil, nil
			}
			var out []string
			for _, s := range r.Servers() {
				if strings.HasPrefix(s, last) {
					out = append(out, s)
				}
			}
			return out, nil
		},
	}
}

// readCommand is /read URI, or /read TEMPLATE key=value...
func readCommand(r *Registry, rd Renderer) commands.Command {
	return commands.Command{
		Name:        "read",
		Description: "read an MCP resource by URI, or expand a template with key=value arguments and read it",
		Usage:       "<uri> | <template> key=value...",
		Handler: func(ctx context.Context, inv commands.Invocation) commands.Reply {
			words, err := commands.SplitArgs(inv.Input)
			if err == nil && len(words) == 0 {
				err = errors.New("usage: /read <uri> | /read <template> key=value... (/resources lists both)")
			}
			if err != nil {
				return commands.Reply{Text: err.Error(), Error: true}
			}
			var v Read
			if strings.Contains(words[0], "{") {
				args, perr := keyValues(words[1:])
				if perr != nil {
					return commands.Reply{Text: perr.Error(), Error: true}
				}
				v, err = r.read(ctx, "", "", words[0], args, nil, inv.Channels)
			} else if len(words) > 1 {
				err = fmt.Errorf("/read takes one URI; got %d words (quote a URI with spaces)", len(words))
			} else {
				v, err = r.read(ctx, "", words[0], "", nil, nil, inv.Channels)
			}
			if err != nil {
				return commands.Reply{Text: err.Error(), Error: true}
			}
			return commands.Reply{Text: ContentText(rd.Contents(ctx, inv.Caller, v.Contents))}
		},
		Complete: func(ctx context.Context, input string) ([]string, error) {
			return r.completeRead(ctx, input)
		},
	}
}

// keyValues parses key=value words.
func keyValues(words []string) (map[string]string, error) {
	out := map[string]string{}
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("argument %q is not key=value", w)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("argument %s given twice", k)
		}
		out[k] = v
	}
	return out, nil
}

// completeRead completes /read: URIs and templates for the first word,
// then a template's key=value arguments through the server's completion.
func (r *Registry) completeRead(ctx context.Context, input string) ([]string, error) {
	before, last := commands.LastWord(input)
	if len(before) == 0 {
		// Several servers may list one URI or template (one server run
		// over several transports); it is one word to type all the same.
		var out []string
		seen := map[string]bool{}
		offer := func(s string) {
			if strings.HasPrefix(s, last) && !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
		for _, x := range r.List(Filter{}) {
			offer(x.URI)
		}
		for _, x := range r.Templates(Filter{}) {
			offer(x.URITemplate)
		}
		return out, nil
	}
	template := before[0]
	vars, err := TemplateVars(template)
	if err != nil {
		return nil, nil
	}
	given := map[string]string{}
	for _, w := range before[1:] {
		if k, v, ok := strings.Cut(w, "="); ok {
			given[k] = v
		}
	}
	key, partial, hasValue := strings.Cut(last, "=")
	if !hasValue {
		// Still typing the name: offer the variables not given yet.
		var out []string
		for _, v := range vars {
			if _, done := given[v]; !done && strings.HasPrefix(v, key) {
				out = append(out, v+"=")
			}
		}
		return out, nil
	}
	var server string
	for _, t := range r.Templates(Filter{}) {
		if t.URITemplate == template {
			server = t.Server
			break
		}
	}
	if server == "" {
		return nil, fmt.Errorf("no server lists the template %s", template)
	}
	values, err := r.Complete(ctx, server, CompleteRequest{
		Ref:      mcp.CompleteReference{Type: "ref/resource", URI: template},
		Argument: key, Value: partial, Context: given,
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = key + "=" + v
	}
	return out, nil
}

// ContentText renders model-facing content for a person: text as it is,
// an image as a one-line reference.
func ContentText(content []tools.Content) string {
	var parts []string
	for _, c := range content {
		switch {
		case c.Type == "image" && c.Image != nil:
			parts = append(parts, fmt.Sprintf("[image %s %s %dx%d, %d bytes]", c.Image.ID, c.Image.MediaType, c.Image.Width, c.Image.Height, c.Image.Bytes))
		case c.Type == "text":
			parts = append(parts, c.Text)
		default:
			b, _ := json.Marshal(c)
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}
