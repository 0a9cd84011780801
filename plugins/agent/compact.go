package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"

	"github.com/dsh-host/dsh-host/plugins/agent/chatapi"
	"github.com/dsh-host/dsh-host/services/attachments"
)

// Compaction: when the next request would pass compactAt of the context
// window, the turns before the current one (and before the last one, when
// that one is small) are summarised by the model into one message, before
// the API refuses the request. The summary replaces them as a pair — the
// summary as the user's message, a short acknowledgement as the
// assistant's — so that roles still alternate (some APIs refuse two user
// messages in a row). Large tool results are not summarised
// away: they are kept in the attachments store and the summary names each
// one by its reference. The session records the compaction, so that a
// resumed conversation sends the compacted history.

// summaryHead starts the user message of a summary: a later compaction
// knows it, and a person reading the session sees what it is.
const summaryHead = "[Summary of the earlier conversation, written by the model to free context]\n\n"

const summaryAck = "Understood: I have the summary of our earlier conversation and will continue from it."

// summarySystem asks the model for a summary it can continue from.
const summarySystem = `You compact a conversation between a person and an assistant that uses tools, so that the assistant can continue it with the summary alone. Write a concise summary, in the language of the conversation, that keeps: what the person asked for and still wants; decisions and conclusions reached; facts learned (names, paths, identifiers, numbers, URLs) exactly; which tools were called and what they found; what is left to do. Leave out pleasantries and anything superseded. Write the summary only.`

// Bounds of the transcript a summary is written from: each tool result
// and each other message is cut, so that the summarisation request itself
// fits in the window.
const (
	transcriptToolResult = 2000
	transcriptMessage    = 8000
)

// errNothingToCompact is a compaction with no older turn to summarise.
var errNothingToCompact = errors.New("nothing to compact: the conversation has no earlier turn to summarise")

// errNotSmaller is a compaction whose summary would not free anything.
var errNotSmaller = errors.New("not compacted")

// jsonSize is the size of msgs as a request carries them.
func jsonSize(msgs []openai.ChatCompletionMessageParamUnion) int {
	n := 0
	for _, m := range msgs {
		b, _ := json.Marshal(m)
		n += len(b) + 1
	}
	return n
}

// window returns the context window of the current model, in tokens.
func (a *Agent) window() int {
	if a.cfg.ContextWindow > 0 {
		return a.cfg.ContextWindow
	}
	return knownWindow(a.Model())
}

// threshold is the estimate from which a request is compacted first.
func (a *Agent) threshold() int { return int(float64(a.window()) * a.cfg.CompactAt) }

// estimate returns the prompt tokens of a request of n bytes: the last
// request's count plus a token per 4 bytes of difference, or n/4 before
// any count.
func (c *Conversation) estimate(n int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return estimateFrom(c.lastPrompt, c.lastBody, n)
}

func estimateFrom(lastPrompt int64, lastBody, n int) int {
	if lastPrompt <= 0 {
		return n / 4
	}
	return max(int(lastPrompt)+(n-lastBody)/4, n/8)
}

// over says whether a request of n bytes would pass the threshold.
func (c *Conversation) over(n int) bool { return c.estimate(n) > c.a.threshold() }

// measured keeps what the API counted for a request of n bytes.
func (c *Conversation) measured(prompt int64, n int) {
	if prompt <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastPrompt, c.lastBody = prompt, n
}

// compactBefore compacts history before a step whose request would pass
// the threshold, and returns the history, the index of the turn's first
// message in it, and the request to send. When nothing can be compacted,
// or the summary fails, it says so and returns the request as it was: the
// API may still take it. Only a cancellation is an error.
func (c *Conversation) compactBefore(ctx context.Context, history []openai.ChatCompletionMessageParamUnion, from int, gen uint64, usage *Usage, out Output) ([]openai.ChatCompletionMessageParamUnion, int, request, error) {
	compacted, newFrom, n, u, err := c.compact(ctx, history, from, gen, out)
	usage.add(u)
	if err == nil {
		out.status("context: the request passed %d%% of %d tokens; %d earlier messages were summarised", int(c.a.cfg.CompactAt*100), c.a.window(), n)
		history, from = compacted, newFrom
	} else {
		if ctx.Err() != nil {
			return history, from, request{}, ctx.Err()
		}
		out.status("context: the request passes %d%% of %d tokens and could not be compacted: %v", int(c.a.cfg.CompactAt*100), c.a.window(), err)
	}
	req, err := c.a.prepare(ctx, history, &c.enc)
	return history, from, req, err
}

// Compact summarises the conversation's turns before its last one (all of
// them when it has one turn) by hand (/compact), and returns how many
// messages the summary replaced.
func (c *Conversation) Compact(ctx context.Context, out Output) (replaced int, u Usage, err error) {
	c.turn.Lock()
	defer c.turn.Unlock()
	history, gen := c.snapshot()
	_, _, replaced, u, err = c.compact(ctx, history, len(history), gen, out)
	return replaced, u, err
}

// compact replaces the messages before a boundary at or before from (the
// first message of the running turn) by a summary pair, in history and in
// the conversation (when no Reset came since gen), and records it in the
// session. It returns the new history, from in it, and how many messages
// were replaced.
func (c *Conversation) compact(ctx context.Context, history []openai.ChatCompletionMessageParamUnion, from int, gen uint64, out Output) ([]openai.ChatCompletionMessageParamUnion, int, int, Usage, error) {
	cut := c.boundary(history, from)
	if cut == 0 || cut == 2 && isSummary(history[0]) {
		return nil, 0, 0, Usage{}, errNothingToCompact
	}
	transcript, refs, err := c.a.transcript(ctx, history[:cut])
	if err != nil {
		return nil, 0, 0, Usage{}, err
	}
	body, err := c.a.requestBody([]openai.ChatCompletionMessageParamUnion{openai.SystemMessage(summarySystem), openai.UserMessage(transcript)}, nil, false, nil)
	if err != nil {
		return nil, 0, 0, Usage{}, err
	}
	st, err := c.a.send(ctx, body, Output{Status: out.Status})
	if err != nil {
		return nil, 0, 0, st.usage, fmt.Errorf("the summary request: %w", err)
	}
	text := strings.TrimSpace(st.content)
	if text == "" {
		return nil, 0, 0, st.usage, errors.New("the model answered the summary request with no text")
	}
	pair := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(summaryHead + text + refs), openai.AssistantMessage(summaryAck)}
	if before, after := jsonSize(history[:cut]), jsonSize(pair); after >= before {
		// A short conversation summarised can come out longer: it
		// would spend more of the window, not less.
		return nil, 0, 0, st.usage, fmt.Errorf("%w: the summary (%d bytes) is not smaller than the %d messages it would replace (%d bytes); the conversation is kept as it is", errNotSmaller, after, cut, before)
	}
	compacted := append(append(make([]openai.ChatCompletionMessageParamUnion, 0, len(pair)+len(history)-cut), pair...), history[cut:]...)
	newFrom := from - cut + len(pair)

	c.mu.Lock()
	if c.gen != gen {
		c.mu.Unlock()
		return compacted, newFrom, cut, st.usage, nil
	}
	// The committed part: the running turn's messages are committed
	// with it.
	c.history = append([]openai.ChatCompletionMessageParamUnion(nil), compacted[:newFrom]...)
	s := c.session
	c.mu.Unlock()
	if s != nil {
		if err := s.AppendCompaction(c.a.Model(), st.usage, cut, pair); err != nil {
			out.status("the compaction could not be saved in session %s: %v", s.ID, err)
		}
	}
	return compacted, newFrom, cut, st.usage, nil
}

// boundary returns where the messages to summarise end: the start of the
// last turn before from when that turn is small (a quarter of the
// threshold at most), else from. A turn starts at a user message that does
// not follow a tool result (those carry a step's images).
func (c *Conversation) boundary(history []openai.ChatCompletionMessageParamUnion, from int) int {
	last := -1
	for i := from - 1; i > 0; i-- {
		if history[i].OfUser != nil && history[i-1].OfTool == nil {
			last = i
			break
		}
	}
	if last <= 0 || last == 2 && isSummary(history[0]) {
		return from
	}
	size := 0
	for _, m := range history[last:from] {
		b, _ := json.Marshal(m)
		size += len(b)
	}
	if size/4 > c.a.threshold()/4 {
		return from
	}
	return last
}

// isSummary says whether m is the user message of a summary pair.
func isSummary(m openai.ChatCompletionMessageParamUnion) bool {
	return m.OfUser != nil && strings.HasPrefix(m.OfUser.Content.OfString.Value, summaryHead)
}

// transcript renders msgs as the text a summary is written from, and the
// lines naming the large tool results kept in the attachments store.
func (a *Agent) transcript(ctx context.Context, msgs []openai.ChatCompletionMessageParamUnion) (string, string, error) {
	var b, refs strings.Builder
	names := map[string]string{} // tool call id → tool name
	for _, m := range msgs {
		switch {
		case m.OfUser != nil:
			fmt.Fprintf(&b, "## Person\n%s\n\n", cut(userText(m.OfUser), transcriptMessage))
		case m.OfAssistant != nil:
			as := m.OfAssistant
			b.WriteString("## Assistant\n")
			if t := as.Content.OfString.Value; t != "" {
				fmt.Fprintf(&b, "%s\n", cut(t, transcriptMessage))
			}
			for _, tc := range as.ToolCalls {
				if f := tc.OfFunction; f != nil {
					names[f.ID] = f.Function.Name
					fmt.Fprintf(&b, "(called %s %s)\n", f.Function.Name, chatapi.Clip(f.Function.Arguments, 500))
				}
			}
			b.WriteString("\n")
		case m.OfTool != nil:
			t := m.OfTool
			text := t.Content.OfString.Value
			name := names[t.ToolCallID]
			fmt.Fprintf(&b, "## Result of %s (%s)\n%s\n\n", name, t.ToolCallID, cut(text, transcriptToolResult))
			if len(text) > transcriptToolResult && a.store != nil {
				ref, err := a.store.SaveBlob(ctx, attachments.Blob{MediaType: "text/plain; charset=utf-8", Data: []byte(text)})
				if err != nil {
					return "", "", fmt.Errorf("keep the result of %s (%s): %w", name, t.ToolCallID, err)
				}
				fmt.Fprintf(&refs, "\n- %s (%s): attachment %s, %d bytes", name, t.ToolCallID, ref.ID, len(text))
			}
		}
	}
	r := refs.String()
	if r != "" {
		r = "\n\nThe full results of these earlier tool calls are kept as attachments (call the tool again for fresh ones):" + r
	}
	return b.String(), r, nil
}

// userText is a user message's text; image parts are named, not sent.
func userText(u *openai.ChatCompletionUserMessageParam) string {
	if u.Content.OfString.Valid() {
		return u.Content.OfString.Value
	}
	var parts []string
	for _, p := range u.Content.OfArrayOfContentParts {
		switch {
		case p.OfText != nil:
			parts = append(parts, p.OfText.Text)
		case p.OfImageURL != nil:
			parts = append(parts, "[an image]")
		}
	}
	return strings.Join(parts, "\n")
}

// cut returns s cut to n bytes with a line saying how much was left out.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	k := n
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	return s[:k] + fmt.Sprintf("\n[… %d more bytes left out]", len(s)-k)
}
