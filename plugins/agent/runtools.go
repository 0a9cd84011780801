package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/openai/openai-go/v3"

	"github.com/dsh-host/dsh-host/plugins/agent/schemaprofile"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/tools"
)

// runTools executes calls in parallel and returns their tool messages in
// the order of the calls, followed by one user message carrying their
// images when the model takes images. The texts the model reads take at
// most budget bytes together (fitResults), and the front end is shown
// what the model reads.
func (a *Agent) runTools(ctx context.Context, caller tools.Caller, calls []toolCall, budget int, out Output) ([]openai.ChatCompletionMessageParamUnion, error) {
	for _, tc := range calls {
		out.callStarted(tc)
	}
	results := make([]toolOutcome, len(calls))
	var wg sync.WaitGroup
	for i, tc := range calls {
		// A server that asks the model during its call (sampling) is
		// answered by this agent's.
		ch := &tools.Channels{Sampler: a.sampler(tc.Name, out), OneShot: out.OneShot, Answerer: out.Answerer}
		if out.Progress != nil {
			ch.Progress = func(p tools.Progress) { out.Progress(tc.Name, p) }
		}
		wg.Go(func() { results[i] = a.runTool(ctx, caller, tc, ch) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a.fitResults(ctx, calls, results, budget)
	var msgs []openai.ChatCompletionMessageParamUnion
	var images []openai.ChatCompletionContentPartUnionParam
	for i, r := range results {
		out.callDone(calls[i], r)
		msgs = append(msgs, openai.ToolMessage(r.text, calls[i].ID))
		for _, img := range r.images {
			images = append(images,
				openai.TextContentPart(fmt.Sprintf("An image from tool call %s (%s):", calls[i].ID, calls[i].Name)),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: img}))
		}
	}
	if len(images) > 0 {
		// A tool message carries text only: the images follow as the
		// user's, each after a line naming its call.
		msgs = append(msgs, openai.UserMessage(images))
	}
	return msgs, nil
}

type toolOutcome struct {
	text   string
	images []string // data: URLs
	err    error
}

// runTool executes one call through the registry's pipeline as the agent's
// caller. Arguments that are not JSON are a tool error the model reads.
func (a *Agent) runTool(ctx context.Context, caller tools.Caller, tc toolCall, ch *tools.Channels) toolOutcome {
	args := strings.TrimSpace(tc.Arguments)
	if args == "" {
		args = "{}"
	}
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		err = fmt.Errorf("the arguments are not valid JSON (%v); send the arguments as one JSON object", err)
		return toolOutcome{text: "Error: " + err.Error(), err: err}
	}
	if a.schemas.Profile() != schemaprofile.Standard {
		// The model saw a loosened schema: the real one decides. Only of
		// a tool it was offered: a hidden one (a definition the policy
		// holds) is refused by Execute, whose answer quotes no schema.
		if def, ok := a.reg.Offered(caller, tc.Name); ok {
			if err := a.schemas.Check(def.InputSchema, []byte(args)); err != nil {
				err = fmt.Errorf("the arguments do not match the tool's parameter schema, so it was not called: %v", err)
				return toolOutcome{text: "Error: " + err.Error(), err: err}
			}
		}
	}
	res := a.reg.Run(ctx, tools.Call{Caller: caller, Name: tc.Name, Args: json.RawMessage(args), Channels: ch})
	var o toolOutcome
	o.err = res.Err
	var parts []string
	for _, c := range res.Content {
		switch {
		case c.Type == "image" && c.Image != nil:
			url, err := a.imageURL(*c.Image)
			if err != nil {
				parts = append(parts, fmt.Sprintf("[image %s (%s) could not be attached: %v]", c.Image.ID, c.Image.MediaType, err))
				continue
			}
			if url == "" {
				parts = append(parts, fmt.Sprintf("[image %s (%s, %dx%d) omitted: this model does not take images]", c.Image.ID, c.Image.MediaType, c.Image.Width, c.Image.Height))
				continue
			}
			o.images = append(o.images, url)
			parts = append(parts, fmt.Sprintf("[image %s (%s, %dx%d): attached after the tool results]", c.Image.ID, c.Image.MediaType, c.Image.Width, c.Image.Height))
		default:
			parts = append(parts, c.Text)
		}
	}
	o.text = strings.Join(parts, "\n")
	return o
}

// imageURL reads a stored image as a data: URL; "" when the model does not
// take images.
func (a *Agent) imageURL(ref attachments.Ref) (string, error) {
	if !a.cfg.ImageInput {
		return "", nil
	}
	if a.store == nil {
		return "", errors.New("no attachments service")
	}
	rc, r, err := a.store.Open(ref.ID)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return "", err
	}
	return "data:" + r.MediaType + ";base64," + base64.StdEncoding.EncodeToString(data), nil
}
