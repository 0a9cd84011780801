package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"

	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/sampling"
	"github.com/dsh-host/dsh-host/services/tools"
)

// MCP in the conversation: a message's @server:uri mentions attach the
// resources' contents, an MCP prompt inserts its messages as turns, and a
// server's sampling request during a tool call is answered by the model
// once the person approves it.

// mention is "@server:uri" at the start of a message or after a space.
var mention = regexp.MustCompile(`(?:^|\s)@([A-Za-z0-9_.-]+):(\S+)`)

// mentionTrail is punctuation that ends a sentence, not a URI.
const mentionTrail = ".,;:!?)]}'\""

// withMentions returns the user's message for text: text as typed, then
// the contents of each resource it mentions as @server:uri (a server the
// resources service knows), each under a line naming it. A mention that
// cannot be read fails the turn before anything is sent. A server's
// question during a read reaches out's answerer, as during a tool call.
func (a *Agent) withMentions(ctx context.Context, text string, out Output) (openai.ChatCompletionMessageParamUnion, error) {
	if a.resources == nil || !strings.Contains(text, "@") {
		return openai.UserMessage(text), nil
	}
	servers := a.resources.Servers()
	var parts []openai.ChatCompletionContentPartUnionParam
	var extra strings.Builder
	seen := map[string]bool{}
	for _, m := range mention.FindAllStringSubmatch(text, -1) {
		server, uri := m[1], strings.TrimRight(m[2], mentionTrail)
		if !slices.Contains(servers, server) || uri == "" || seen[server+":"+uri] {
			continue
		}
		seen[server+":"+uri] = true
		res, err := a.resources.ReadFrom(ctx, server, uri, out.channels())
		if err != nil {
			return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("@%s:%s: %w", server, uri, err)
		}
		fmt.Fprintf(&extra, "\n\n[Attached @%s:%s]\n", server, uri)
		r := resources.Renderer{Store: a.store}
		for _, c := range r.Contents(ctx, a.caller, res.Contents) {
			if c.Type == "image" && c.Image != nil {
				url, err := a.imageURL(*c.Image)
				if err == nil && url != "" {
					parts = append(parts, openai.TextContentPart(fmt.Sprintf("An image of @%s:%s:", server, uri)),
						openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: url}))
					continue
				}
			}
			extra.WriteString(resources.ContentText([]tools.Content{c}))
		}
	}
	if extra.Len() == 0 {
		return openai.UserMessage(text), nil
	}
	full := text + extra.String()
	if len(parts) == 0 {
		return openai.UserMessage(full), nil
	}
	return openai.UserMessage(append([]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart(full)}, parts...)), nil
}

// IsPrompt says whether name (without its slash) is an MCP prompt the
// conversation can insert.
func (a *Agent) IsPrompt(name string) bool {
	if a.resources == nil {
		return false
	}
	_, ok := a.resources.LookupPrompt(name)
	return ok
}

// Prompt gets the MCP prompt public (mcp__server__prompt) with the
// arguments input gives (as its slash command takes them) and inserts its
// messages in the conversation as turns: consecutive messages of one role
// are joined. When the last is the user's, the model answers it as a turn
// does; otherwise the messages are kept and the person speaks next.
func (c *Conversation) Prompt(ctx context.Context, public, input string, out Output) (Result, error) {
	a := c.a
	if a.resources == nil {
		return Result{}, errors.New("no resources service: MCP prompts cannot be inserted")
	}
	p, ok := a.resources.LookupPrompt(public)
	if !ok {
		return Result{}, fmt.Errorf("no MCP prompt %q", public)
	}
	pc := resources.PromptCommand{Prompt: p, Get: func(ctx context.Context, _ string, args map[string]string, ch *tools.Channels) (*mcp.GetPromptResult, error) {
		return a.resources.GetPrompt(ctx, public, args, ch)
	}}
	res, err := pc.Fetch(ctx, input, out.channels())
	if err != nil {
		return Result{}, err
	}
	msgs := a.promptMessages(ctx, res)
	if len(msgs) == 0 {
		return Result{}, fmt.Errorf("the prompt %s has no messages", public)
	}
	return c.run(ctx, strings.TrimSpace("/"+public+" "+input), msgs, out)
}

// promptMessages turns a prompt's messages into the conversation's: text
// as it is, images as image parts when the model takes them, anything else
// as the prompt's rendering names it.
func (a *Agent) promptMessages(ctx context.Context, res *mcp.GetPromptResult) []openai.ChatCompletionMessageParamUnion {
	r := resources.Renderer{Store: a.store}
	type turn struct {
		role   mcp.Role
		texts  []string
		images []string
	}
	var turns []turn
	for _, m := range res.Messages {
		if m == nil || m.Content == nil {
			continue
		}
		if len(turns) == 0 || turns[len(turns)-1].role != m.Role {
			turns = append(turns, turn{role: m.Role})
		}
		t := &turns[len(turns)-1]
		if img, ok := m.Content.(*mcp.ImageContent); ok && a.cfg.ImageInput && m.Role == "user" {
			t.images = append(t.images, "data:"+img.MIMEType+";base64,"+base64.StdEncoding.EncodeToString(img.Data))
			continue
		}
		t.texts = append(t.texts, r.MessageText(ctx, m.Content))
	}
	var out []openai.ChatCompletionMessageParamUnion
	for _, t := range turns {
		text := strings.Join(t.texts, "\n\n")
		switch {
		case t.role == "assistant":
			out = append(out, openai.AssistantMessage(text))
		case len(t.images) == 0:
			out = append(out, openai.UserMessage(text))
		default:
			parts := []openai.ChatCompletionContentPartUnionParam{openai.TextContentPart(text)}
			for _, u := range t.images {
				parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: u}))
			}
			out = append(out, openai.UserMessage(parts))
		}
	}
	return out
}

// samplingRule names the question in the approval a person is asked.
const samplingRule = "sampling (an MCP server asks the model)"

// sampler answers the sampling requests of the server behind tool during
// one of its calls: once approved (approveSampling), the request goes to
// the agent's model as one request without tools, and its answer back.
func (a *Agent) sampler(tool string, out Output) sampling.Sampler {
	return func(ctx context.Context, server string, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
		if err := a.approveSampling(ctx, tool, server, out, p); err != nil {
			out.status("✗ %s asked the model (sampling): %v", tool, err)
			return nil, err
		}
		body, err := a.samplingBody(p)
		if err != nil {
			return nil, err
		}
		st, err := a.send(ctx, body, Output{Status: out.Status})
		if err != nil {
			return nil, fmt.Errorf("the model: %w", err)
		}
		out.status("✓ %s asked the model (sampling): %d characters answered", tool, len(st.content))
		return &mcp.CreateMessageWithToolsResult{
			Model:      a.Model(),
			Role:       "assistant",
			Content:    []mcp.Content{&mcp.TextContent{Text: st.content}},
			StopReason: "endTurn",
		}, nil
	}
}

// approveSampling asks whether server, behind tool, may use the model:
// under a one-shot chat (-p: oneShot set) it is approved with --yes and
// declined otherwise; else the person is asked through the elicitation
// service, as the policy asks for a call.
func (a *Agent) approveSampling(ctx context.Context, tool, server string, out Output, p *mcp.CreateMessageWithToolsParams) error {
	if oneShot := out.OneShot; oneShot != nil {
		if oneShot.Yes {
			return nil
		}
		return errors.New("declined: nobody is here to approve a sampling request; pass --yes to let servers use the model")
	}
	if a.elicit == nil {
		return errors.New("declined: no elicitation service to ask the person whether the server may use the model")
	}
	shown, _ := json.Marshal(map[string]any{"systemPrompt": p.SystemPrompt, "messages": samplingTexts(p), "maxTokens": p.MaxTokens})
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			elicit.ApprovalField: map[string]any{"type": "string", "title": "Let the server use the model?", "oneOf": []map[string]any{{"const": elicit.ApproveOnce, "title": "Yes, once"}}},
		},
		"required": []string{elicit.ApprovalField},
	}
	raw, _ := json.Marshal(schema)
	form, err := elicit.ParseForm(json.RawMessage(raw))
	if err != nil {
		return err
	}
	who := "the MCP server " + server
	if server == "" {
		who = "the server of " + tool
	}
	res := a.elicit.AskFor(ctx, out.Answerer, elicit.Request{
		Server:   server,
		Mode:     elicit.ModeForm,
		Message:  "Let " + who + " (during " + tool + ") ask the model " + elicit.ShowArgs(shown, 200) + "? (decline to refuse)",
		Form:     form,
		Schema:   schema,
		Approval: &elicit.Approval{Tool: who + " to ask the model (sampling, during " + tool + ")", Args: shown, Rule: samplingRule, Choices: []string{elicit.ApproveOnce}},
	})
	if res.Action != elicit.Accept || res.Content[elicit.ApprovalField] != elicit.ApproveOnce {
		why := "declined by the person"
		if res.Reason != "" {
			why = "declined: " + res.Reason
		}
		return errors.New(why)
	}
	return nil
}

// samplingTexts are a request's messages as "role: text" lines, for the
// approval question.
func samplingTexts(p *mcp.CreateMessageWithToolsParams) []string {
	var out []string
	for _, m := range p.Messages {
		if m == nil {
			continue
		}
		for _, c := range m.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				out = append(out, string(m.Role)+": "+t.Text)
			} else if c != nil {
				out = append(out, fmt.Sprintf("%s: [%T]", m.Role, c))
			}
		}
	}
	return out
}

// samplingBody is the model request of a sampling request: its system
// prompt and messages (text; images when the model takes them), its
// maxTokens, temperature and stop sequences; no tools, not streamed to the
// person.
func (a *Agent) samplingBody(p *mcp.CreateMessageWithToolsParams) ([]byte, error) {
	var msgs []openai.ChatCompletionMessageParamUnion
	if s := strings.TrimSpace(p.SystemPrompt); s != "" {
		msgs = append(msgs, openai.SystemMessage(s))
	}
	for _, m := range p.Messages {
		if m == nil {
			continue
		}
		var texts []string
		var parts []openai.ChatCompletionContentPartUnionParam
		for _, c := range m.Content {
			switch x := c.(type) {
			case *mcp.TextContent:
				texts = append(texts, x.Text)
			case *mcp.ImageContent:
				if a.cfg.ImageInput && m.Role == "user" {
					parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:" + x.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(x.Data)}))
				} else {
					texts = append(texts, fmt.Sprintf("[an image, %s: this model does not take images]", x.MIMEType))
				}
			case nil:
			default:
				return nil, fmt.Errorf("the sampling request holds %T content, which the agent does not send to the model", c)
			}
		}
		text := strings.Join(texts, "\n\n")
		switch {
		case m.Role == "assistant":
			msgs = append(msgs, openai.AssistantMessage(text))
		case len(parts) == 0:
			msgs = append(msgs, openai.UserMessage(text))
		default:
			msgs = append(msgs, openai.UserMessage(append([]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart(text)}, parts...)))
		}
	}
	params := openai.ChatCompletionNewParams{
		Model:         a.Model(),
		Messages:      msgs,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if p.MaxTokens > 0 {
		params.MaxTokens = openai.Int(p.MaxTokens)
	}
	if p.Temperature != 0 {
		params.Temperature = openai.Float(p.Temperature)
	} else if a.cfg.Temperature != nil {
		params.Temperature = openai.Float(*a.cfg.Temperature)
	}
	if len(p.StopSequences) > 0 {
		params.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: p.StopSequences}
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encode the sampling request: %w", err)
	}
	return b, nil
}

// channels are the back-channels of a request the conversation makes that
// is not a tool call (an @mention's read, a prompt's get): its server's
// questions reach out's answerer, or the one-shot answer.
func (out Output) channels() *tools.Channels {
	return &tools.Channels{Answerer: out.Answerer, OneShot: out.OneShot}
}
