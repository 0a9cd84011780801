package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/dsh-host/dsh-host/plugins/agent/chatapi"
	"github.com/dsh-host/dsh-host/plugins/agent/schemaprofile"
	"github.com/dsh-host/dsh-host/plugins/agent/sessions"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Agent runs turns of a model against the tool registry. It is safe for
// concurrent use; each Conversation runs one turn at a time.
type Agent struct {
	cfg  config
	life context.Context // the instance's: a turn ends when it does
	api  *chatapi.Client
	// apiCfg is what api was built of (tests rebuild it with a faster
	// retry policy).
	apiCfg chatapi.Config
	reg    *tools.Registry
	store  *attachments.Store // nil without the attachments service
	// resources reads @server:uri mentions and gets MCP prompts; elicit
	// asks the person to approve a server's sampling request. Each is
	// nil without its service.
	resources *resources.Registry
	elicit    *elicit.Service
	caller    tools.Caller
	// schemas holds the tool schemas as the schema profile sends them.
	schemas *schemaprofile.Cache
	// reasoning says whether the reasoning of tool-calling turns goes
	// back to the model (reasoning.go).
	reasoning bool
	// now is the clock prices are read at (tests set another).
	now func() time.Time
	// work is what the system prompt says about the work (workcontext.go),
	// read once as the instance starts; zero when the config turns it off.
	work workContext

	// conversations numbers the conversations (each Reset or Resume
	// starts another), so that each is a caller of its own.
	conversations atomic.Uint64

	mu    sync.Mutex
	model string
	main  *Conversation
}

func newAgent(life context.Context, cfg config, key string, reg *tools.Registry, store *attachments.Store, hc *http.Client) *Agent {
	apiCfg := chatapi.Config{
		BaseURL:    cfg.BaseURL,
		Key:        key,
		KeyEnv:     cfg.APIKeyEnv,
		HTTPClient: hc,
		Timeout:    time.Duration(cfg.TimeoutMs) * time.Millisecond,
		Retry:      chatapi.DefaultRetry(),
	}
	a := &Agent{
		cfg:       cfg,
		life:      life,
		api:       chatapi.New(apiCfg),
		apiCfg:    apiCfg,
		reg:       reg,
		store:     store,
		caller:    tools.Caller{Kind: tools.CallerChat, ImageInput: cfg.ImageInput},
		model:     cfg.Model,
		schemas:   schemaprofile.NewCache(schemaprofile.Resolve(cfg.SchemaProfile, cfg.BaseURL)),
		reasoning: sendsReasoning(cfg),
		now:       time.Now,
	}
	a.main = a.NewConversation()
	return a
}

// Model returns the model requests name.
func (a *Agent) Model() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.model
}

// SetModel switches the model of every later request.
func (a *Agent) SetModel(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.model = name
}

// Caller is who the agent calls tools as.
func (a *Agent) Caller() tools.Caller { return a.caller }

// Main returns the conversation /new resets: the one a console talks in.
func (a *Agent) Main() *Conversation { return a.main }

// NewConversation returns an empty conversation of its own.
func (a *Agent) NewConversation() *Conversation {
	return &Conversation{a: a, number: a.conversations.Add(1)}
}

// Conversation is a history of messages, without the system message (built
// at each request from the current assembly). The reasoning of a
// tool-calling turn is kept on its assistant messages when the API wants it
// back (reasoning.go).
type Conversation struct {
	a *Agent
	// turn runs one turn at a time. It is not mu: a turn streams and calls
	// tools for minutes, and Reset or Len from another front end (the
	// control socket) must not wait for it.
	turn sync.Mutex

	mu      sync.Mutex
	history []openai.ChatCompletionMessageParamUnion
	// gen counts Resets: a turn that started before one drops its
	// messages instead of committing them to the new conversation.
	gen uint64
	// session, when set, saves each committed turn; a Reset drops it.
	session *sessions.Session
	// lastPrompt is the prompt tokens the API counted in the last
	// request, lastBody that request's size in bytes: the base of the
	// next request's estimate (0: none yet).
	lastPrompt int64
	lastBody   int
	// enc keeps the JSON of the messages of the last request.
	enc chatapi.Encoder
	// thinkingOffSaid: the status has said once that thinking is off.
	thinkingOffSaid bool
	// pending is the person's line of the last turn that failed, until
	// one is answered (unanswered.go).
	pending string
	// spent is what the conversation's requests used and cost (Spent).
	spent Usage
	// number tells this conversation's tool calls from another's of the
	// same agent (caller): a "session" approval is one conversation's.
	number uint64
}

// caller is who the conversation's tool calls come from: the agent, and
// which of its conversations, so that what a person approved "for this
// session" holds in this conversation only, not in another front end's
// or after /new.
func (c *Conversation) caller() tools.Caller {
	c.mu.Lock()
	n := c.number
	c.mu.Unlock()
	caller := c.a.caller
	caller.ID = fmt.Sprintf("%s#%d", caller.ID, n)
	return caller
}

// Session returns the session the conversation saves its turns in, nil
// when none.
func (c *Conversation) Session() *sessions.Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// Record saves every later turn in s.
func (c *Conversation) Record(s *sessions.Session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.session = s
}

// Resume replaces the conversation by a saved one: its history (with the
// tool results kept in the attachments store read back), and its session
// for the turns to come. A turn running now is not kept.
func (c *Conversation) Resume(ls *sessions.Loaded) error {
	history, err := ls.Restore(c.a.store)
	if err != nil {
		return err
	}
	if !c.a.reasoning {
		history = chatapi.WithoutReasoning(history)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.history = history
	c.session = ls.Session
	c.gen++
	c.number = c.a.conversations.Add(1)
	c.lastPrompt, c.lastBody = 0, 0
	c.thinkingOffSaid = false
	c.pending = ls.Pending
	c.spent = Usage{}
	for _, raw := range ls.Usages {
		var u Usage
		if json.Unmarshal(raw, &u) == nil {
			c.spent.add(u)
		}
	}
	return nil
}

// Reset empties the conversation; a turn running now keeps going but its
// messages are not kept.
func (c *Conversation) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.history = nil
	c.session = nil
	c.gen++
	c.number = c.a.conversations.Add(1)
	c.lastPrompt, c.lastBody = 0, 0
	c.thinkingOffSaid = false
	c.pending = ""
	c.spent = Usage{}
}

// spend adds u to what the conversation has spent, unless a Reset or a
// Resume came since gen (the turn belonged to the conversation before).
func (c *Conversation) spend(gen uint64, u Usage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen {
		c.spent.add(u)
	}
}

// Spent is the usage and cost of the conversation's requests: a resumed
// session's saved turns, then every turn and compaction since, failed
// ones included (they were billed).
func (c *Conversation) Spent() Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.spent
}

// snapshot returns a copy of the history to build a turn on, and its
// generation.
func (c *Conversation) snapshot() ([]openai.ChatCompletionMessageParamUnion, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]openai.ChatCompletionMessageParamUnion(nil), c.history...), c.gen
}

// commit keeps history as the conversation unless a Reset came since gen,
// and saves the turn's messages (those past the first from) in the
// session, if any; a failure to save is shown, the turn stands.
func (c *Conversation) commit(ctx context.Context, history []openai.ChatCompletionMessageParamUnion, gen uint64, from int, usage Usage, out Output) {
	c.mu.Lock()
	if c.gen != gen {
		c.mu.Unlock()
		return
	}
	c.history = history
	c.pending = ""
	s := c.session
	c.mu.Unlock()
	if s == nil {
		return
	}
	// Turns run one at a time (c.turn), so the lines are in turn order.
	if err := s.AppendTurn(ctx, c.a.store, c.a.Model(), usage, savedMessages(history[from:])); err != nil {
		out.status("the turn could not be saved in session %s: %v", s.ID, err)
	}
}

// sayThinkingOff says whether thinking being off is still to be said in
// this conversation: once is enough.
func (c *Conversation) sayThinkingOff() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	said := c.thinkingOffSaid
	c.thinkingOffSaid = true
	return !said
}

// Len returns how many messages the conversation holds.
func (c *Conversation) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.history)
}

// Output is where a turn shows what happens. A nil writer drops its part.
type Output struct {
	// Text receives the answer text as it streams, of every step.
	Text io.Writer
	// Reasoning receives the reasoning text as it streams, where the
	// model sends one; a "\n" ends each step's reasoning.
	Reasoning io.Writer
	// Status receives one line per event: tool calls and their outcome,
	// retries with their countdown, the maxSteps stop.
	Status io.Writer
	// Progress, when set, receives what a tool call reports while it runs
	// (an MCP server's progress notifications), with the tool's name. The
	// calls of a step run at once, so it is called from several
	// goroutines; the step's next Status line follows the last report.
	Progress func(tool string, p tools.Progress)
	// OneShot, when set, says nobody is at the front end to answer (chat
	// -p): the turn's tool calls carry it (tools.Channels.OneShot), so an
	// approval is given with Yes (--yes) and refused otherwise, and so is
	// a server's sampling request.
	OneShot *tools.OneShot
	// Answerer, when set, answers the questions asked during the turn's
	// tool calls (the policy's approvals, a server's elicitation; a
	// client of the control socket), ahead of the installed answerer.
	Answerer elicit.Answerer
	// Events, when set, receives the turn's model messages and tool calls
	// (events.go), from the turn's goroutine; the Status lines of the
	// calls are then not written.
	Events func(Event)
}

func (o Output) status(format string, args ...any) {
	if o.Status != nil {
		fmt.Fprintf(o.Status, format+"\n", args...)
	}
}

// Usage counts the tokens of a turn, summed over its requests, and what
// they cost.
type Usage struct {
	Prompt, CachedPrompt, Completion int64
	// Cached says whether the API reported cached prompt tokens at all.
	Cached bool
	// Cost is the requests' price in US dollars, each at the time it was
	// sent (price.go); Priced says every request had a price, so Cost is
	// the whole of it.
	Cost   float64 `json:",omitempty"`
	Priced bool    `json:",omitempty"`
	// APIMillis is the time the requests took, from sending to the
	// stream's end, retries included.
	APIMillis int64 `json:",omitempty"`
}

// String is the line a front end shows after a turn.
func (u Usage) String() string {
	s := fmt.Sprintf("tokens: %d prompt", u.Prompt)
	if u.Cached {
		s += fmt.Sprintf(" (%d cached)", u.CachedPrompt)
	}
	s += fmt.Sprintf(", %d completion", u.Completion)
	if u.Priced {
		s += ", " + Dollars(u.Cost)
	}
	return s
}

// Dollars shows a cost: to the cent from a dollar, else to the
// hundredth of a cent; below that "<$0.0001", so that a cheap turn does
// not read as free.
func Dollars(usd float64) string {
	switch {
	case usd >= 1:
		return fmt.Sprintf("$%.2f", usd)
	case usd >= 0.00005 || usd == 0:
		return fmt.Sprintf("$%.4f", usd)
	}
	return "<$0.0001"
}

// add sums v into u. The sum is priced when both are, or when u has
// counted nothing yet.
func (u *Usage) add(v Usage) {
	empty := *u == Usage{}
	u.Prompt += v.Prompt
	u.CachedPrompt += v.CachedPrompt
	u.Completion += v.Completion
	u.Cached = u.Cached || v.Cached
	u.Cost += v.Cost
	u.Priced = v.Priced && (u.Priced || empty)
	u.APIMillis += v.APIMillis
}

// Result is what a turn did.
type Result struct {
	// Answer is the text of the last step, the one without tool calls.
	Answer string
	// Steps counts the model requests that asked for tools.
	Steps int
	Usage Usage
	// Cut says the answer stopped at the model's output limit
	// (finish_reason "length"): it is not whole. The turn stands: the
	// conversation keeps what was answered.
	Cut bool
}

// ErrMaxSteps ends a turn whose model still asked for tools after maxSteps
// rounds. The conversation keeps every step, so a next message goes on.
var ErrMaxSteps = errors.New("stopped: the model still asked for tools after maxSteps tool rounds; send a message to let it go on")

// Turn sends text as the user's message and runs the loop: a request with
// the current assembly, the streamed answer, the tool calls it asks for
// (in parallel, results in order), again until an answer without tool
// calls or maxSteps. On an error or cancellation the conversation is left
// as it was before the turn, so that it stays valid for the next one, and
// text is kept as unanswered (unanswered.go).
//
// An @server:uri mention in text attaches that resource's contents to the
// message (mcp.go).
func (c *Conversation) Turn(ctx context.Context, text string, out Output) (Result, error) {
	msg, err := c.a.withMentions(ctx, text, out)
	if err != nil {
		c.keepUnanswered(text, []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}, c.generation(), err, out)
		return Result{}, err
	}
	return c.run(ctx, text, []openai.ChatCompletionMessageParamUnion{msg}, out)
}

// run adds msgs, the turn of the person's line said, to the conversation
// and, when the last is not the assistant's, runs the loop on them.
func (c *Conversation) run(ctx context.Context, said string, msgs []openai.ChatCompletionMessageParamUnion, out Output) (res Result, err error) {
	c.turn.Lock()
	defer c.turn.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.a.life, cancel)
	defer stop()

	history, gen := c.snapshot()
	defer func() { c.spend(gen, res.Usage) }()
	defer func() {
		// At maxSteps the turn is committed: the model answered.
		if err != nil && !errors.Is(err, ErrMaxSteps) {
			c.keepUnanswered(said, msgs, gen, err, out)
		}
	}()
	from := len(history)
	history = append(history, msgs...)
	triedCompact := false
	if last := msgs[len(msgs)-1].OfAssistant; last != nil {
		res.Answer = last.Content.OfString.Value
		c.commit(ctx, history, gen, from, res.Usage, out)
		return res, nil
	}
	for {
		if res.Steps == c.a.cfg.MaxSteps {
			c.commit(ctx, history, gen, from, res.Usage, out)
			out.status("stopped after %d tool rounds (maxSteps)", res.Steps)
			return res, ErrMaxSteps
		}
		history = dropAnsweredImages(history)
		req, err := c.a.prepare(ctx, history, &c.enc)
		if err != nil {
			return res, err
		}
		// One attempt a turn: a compaction that could not be done
		// (nothing older to summarise, a failed summary) is not
		// retried, with another model request, at each step.
		if !triedCompact && c.over(len(req.body)) {
			triedCompact = true
			if history, from, req, err = c.compactBefore(ctx, history, from, gen, &res.Usage, out); err != nil {
				return res, err
			}
		}
		if req.thinkingOff && c.sayThinkingOff() {
			out.status("thinking is off for this request: an earlier tool-calling turn has no reasoning saved with it (an older session, or another model's turn); it comes back once compaction has summarised that turn, or after /new")
		}
		st, err := c.a.step(ctx, req, res.Steps > 0, out)
		res.Usage.add(st.usage)
		if err != nil {
			return res, err
		}
		c.measured(st.usage.Prompt, len(req.body))
		history = append(history, st.assistant)
		out.step(st)
		if len(st.calls) == 0 {
			res.Answer, res.Cut = st.content, st.cut
			c.commit(ctx, history, gen, from, res.Usage, out)
			return res, nil
		}
		res.Steps++
		msgs, err := c.a.runTools(ctx, c.caller(), st.calls, c.resultBudget(len(req.body), st), out)
		if err != nil {
			return res, err
		}
		history = append(history, msgs...)
	}
}

// imageDropped stands for an image part the model has answered once.
const imageDropped = "[image left out: the model saw it in an earlier request; call the tool again to see it anew]"

// dropAnsweredImages returns history with the image parts of every message
// before the last assistant message replaced by imageDropped: only the
// latest step's images are sent. Kept in the history, a few screenshots
// would be sent again with every later request, tens of MB per step. The
// messages are replaced, not changed in place, so a snapshot another
// slice shares stays as it was.
func dropAnsweredImages(history []openai.ChatCompletionMessageParamUnion) []openai.ChatCompletionMessageParamUnion {
	last := -1
	for i, m := range history {
		if m.OfAssistant != nil {
			last = i
		}
	}
	for i := range last {
		u := history[i].OfUser
		if u == nil || !hasImage(u.Content.OfArrayOfContentParts) {
			continue
		}
		parts := make([]openai.ChatCompletionContentPartUnionParam, len(u.Content.OfArrayOfContentParts))
		for j, p := range u.Content.OfArrayOfContentParts {
			if p.OfImageURL != nil {
				p = openai.TextContentPart(imageDropped)
			}
			parts[j] = p
		}
		history[i] = openai.UserMessage(parts)
	}
	return history
}

// savedMessages returns msgs as the model will receive them in later
// requests, which is how a session keeps them: an image part is replaced
// by imageDropped, as dropAnsweredImages does once the model has answered.
func savedMessages(msgs []openai.ChatCompletionMessageParamUnion) []openai.ChatCompletionMessageParamUnion {
	saved := append(slices.Clone(msgs), openai.ChatCompletionMessageParamUnion{OfAssistant: &openai.ChatCompletionAssistantMessageParam{}})
	return dropAnsweredImages(saved)[:len(msgs)]
}

func hasImage(parts []openai.ChatCompletionContentPartUnionParam) bool {
	for _, p := range parts {
		if p.OfImageURL != nil {
			return true
		}
	}
	return false
}

// stepResult is one model request's outcome.
type stepResult struct {
	cut       bool // finish_reason "length"
	content   string
	reasoning string
	calls     []toolCall
	assistant openai.ChatCompletionMessageParamUnion
	usage     Usage
}

type toolCall struct {
	ID, Name, Arguments string
}

// request is one step's request, ready to send, with its parts kept for
// /context.
type request struct {
	body      []byte
	system    string // the system message's text; "" when none
	toolsJSON []byte // nil when no tools are sent
	// thinkingOff: the request turns thinking off, since history has a
	// tool-calling turn without its reasoning (reasoning.go).
	thinkingOff bool
}

// prepare assembles the tools and builds the request of a step on history.
// enc, when not nil, keeps the messages' JSON for the next request.
func (a *Agent) prepare(ctx context.Context, history []openai.ChatCompletionMessageParamUnion, enc *chatapi.Encoder) (request, error) {
	asm, err := a.reg.Assemble(ctx, a.caller)
	if err != nil {
		return request{}, err
	}
	if asm.Tools, err = a.schemas.Rewrite(asm.Tools); err != nil {
		return request{}, err
	}
	toolsJSON, err := asm.ToolsJSON()
	if err != nil {
		return request{}, err
	}
	if len(asm.Tools) == 0 {
		toolsJSON = nil
	}
	msgs := history
	sys := systemText(a.cfg.System, append([]tools.Section{{Name: "work", Text: a.work.Text}}, asm.Sections...))
	if sys != "" {
		msgs = append([]openai.ChatCompletionMessageParamUnion{openai.SystemMessage(sys)}, history...)
	}
	var extra []byte
	off := a.reasoning && chatapi.ReasoningMissing(history)
	if off {
		extra = []byte(chatapi.ThinkingDisabled)
	}
	body, err := a.requestBody(msgs, toolsJSON, toolsJSON != nil, enc, extra...)
	if err != nil {
		return request{}, err
	}
	return request{body: body, system: sys, toolsJSON: toolsJSON, thinkingOff: off}, nil
}

// step sends one prepared request with retries and returns the assistant
// message to keep: with its reasoning when the API wants it back and the
// turn calls tools (now, or in an earlier step: toolTurn).
func (a *Agent) step(ctx context.Context, req request, toolTurn bool, out Output) (stepResult, error) {
	st, err := a.send(ctx, req.body, out)
	if err != nil {
		return st, err
	}
	asst := openai.ChatCompletionAssistantMessageParam{}
	if a.reasoning && st.reasoning != "" && (toolTurn || len(st.calls) > 0) {
		chatapi.SetReasoning(&asst, st.reasoning)
	}
	if st.content != "" || len(st.calls) == 0 {
		asst.Content.OfString = openai.String(st.content)
	}
	for _, tc := range st.calls {
		asst.ToolCalls = append(asst.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID:       tc.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Arguments},
			},
		})
	}
	st.assistant = openai.ChatCompletionMessageParamUnion{OfAssistant: &asst}
	return st, nil
}

// systemText is the system message: the entry's text, then the text of
// each section of the assembly (an MCP server's instructions, which carry
// their own heading), as the gateway joins them.
func systemText(base string, sections []tools.Section) string {
	texts := make([]string, 0, len(sections)+1)
	for _, t := range append([]string{base}, sectionTexts(sections)...) {
		if t = strings.TrimSpace(t); t != "" {
			texts = append(texts, t)
		}
	}
	return strings.Join(texts, "\n\n")
}

func sectionTexts(sections []tools.Section) []string {
	out := make([]string, len(sections))
	for i, s := range sections {
		out[i] = s.Text
	}
	return out
}

// requestBody marshals the request with the tools array spliced in as the
// assembly wrote it. The SDK's JSON setter would re-marshal raw JSON
// (compacting it), and the typed tool params would re-order each schema's
// keys; splicing keeps what `dsh-host prompt` shows byte for byte, so a
// prompt cache sees the same prefix every time. The messages enc knows
// from the last request are not encoded again (chatapi.Encoder).
func (a *Agent) requestBody(msgs []openai.ChatCompletionMessageParamUnion, toolsJSON []byte, withTools bool, enc *chatapi.Encoder, more ...byte) ([]byte, error) {
	p := openai.ChatCompletionNewParams{
		Model:         a.Model(),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if a.cfg.Temperature != nil {
		p.Temperature = openai.Float(*a.cfg.Temperature)
	}
	var extra []byte
	if withTools {
		// An empty tools array is refused by some APIs; none is sent
		// without tools.
		extra = make([]byte, 0, len(`,"tools":`)+len(toolsJSON)+len(more))
		extra = append(append(extra, `,"tools":`...), toolsJSON...)
	}
	extra = append(extra, more...)
	b, err := chatapi.EncodeParams(p, msgs, enc, extra)
	if err != nil {
		return nil, fmt.Errorf("encode the request: %w", err)
	}
	return b, nil
}

// send sends one request through the API client, its answer streamed to
// out's writers.
func (a *Agent) send(ctx context.Context, body []byte, out Output) (stepResult, error) {
	model, sent, began := a.Model(), a.now(), time.Now()
	ans, err := a.api.Send(ctx, body, chatapi.Output{Text: out.Text, Reasoning: out.Reasoning, Status: out.Status})
	st := stepResult{content: ans.Content, reasoning: ans.Reasoning, cut: ans.Cut, usage: Usage{
		Prompt: ans.Usage.Prompt, CachedPrompt: ans.Usage.CachedPrompt, Completion: ans.Usage.Completion, Cached: ans.Usage.Cached,
		APIMillis: time.Since(began).Milliseconds(),
	}}
	if p, ok := a.cfg.pricingOf(model); ok {
		st.usage.Cost, st.usage.Priced = p.cost(st.usage, sent), true
	}
	for _, tc := range ans.Calls {
		st.calls = append(st.calls, toolCall(tc))
	}
	return st, err
}
