// Package chatapi is the client of an OpenAI-compatible chat completions
// API: the request body encoded once per message (Encoder, EncodeParams),
// one streamed request sent with the retry policy (Client.Send), DeepSeek's
// reasoning_content read from the stream and kept on assistant messages
// (reasoning.go), and the API's failures turned into what a person can
// act on. The agent's loop builds on it; the numbers are in docs/chat.md.
package chatapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// Retry is how a request that failed in a way worth retrying is retried:
// a 429 after its Retry-After (or retry-after-ms), a 5xx, a stream cut
// midway or an error sent in it, and a connection that timed out or was
// reset, after Backoff doubling each time. Tests shrink the delays and
// replace Sleep.
type Retry struct {
	Attempts int           // requests in all for one step: 1 + retries
	Backoff  time.Duration // the wait after the first 5xx or cut stream; doubles each time
	MaxWait  time.Duration // the longest Retry-After honoured; a longer one fails at once
	Tick     time.Duration // the countdown's step
	Sleep    func(ctx context.Context, d time.Duration) error
}

// DefaultRetry is the agent's policy: three retries (4 attempts), backoff
// from 1 s (1 s, 2 s, 4 s), a Retry-After of up to a minute honoured, a
// countdown by the second.
func DefaultRetry() Retry {
	return Retry{Attempts: 4, Backoff: time.Second, MaxWait: time.Minute, Tick: time.Second, Sleep: sleepCtx}
}

// Config is a Client's API and policy.
type Config struct {
	// BaseURL is the API root (without the trailing /), named when it
	// cannot be reached.
	BaseURL string
	// Key is sent as the bearer token to BaseURL only; "" sends none.
	// KeyEnv is the variable it was read from, named when the API refuses
	// it.
	Key, KeyEnv string
	HTTPClient  *http.Client
	// Timeout bounds each request to the end of its stream; 0: none.
	Timeout time.Duration
	Retry   Retry
}

// Client sends chat completion requests. It is safe for concurrent use.
type Client struct {
	cfg  Config
	chat openai.ChatCompletionService
}

// New returns the client of cfg. The service is built from options alone,
// not openai.NewClient, which would read OPENAI_API_KEY, OPENAI_BASE_URL
// and OPENAI_ORG_ID from the environment and send them to whatever BaseURL
// names. The SDK's own retries are off: cfg.Retry is the policy that runs,
// shows its countdown and is tested.
func New(cfg Config) *Client {
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL + "/"),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(0),
	}
	if cfg.Key != "" {
		opts = append(opts, option.WithAPIKey(cfg.Key))
	}
	return &Client{cfg: cfg, chat: openai.NewChatCompletionService(opts...)}
}

// Output is where an answer streams. A nil writer drops its part.
type Output struct {
	// Text receives the answer text; a "\n" ends it.
	Text io.Writer
	// Reasoning receives the reasoning (reasoning_content) as it streams;
	// a "\n" ends it.
	Reasoning io.Writer
	// Status receives the retries with their countdown.
	Status io.Writer
}

// Answer is one request's outcome: the assistant's text, its reasoning,
// the tools it calls and the tokens counted. Cut says the model stopped
// at its output limit (finish_reason "length"): the answer is not whole.
type Answer struct {
	Content   string
	Reasoning string
	Calls     []ToolCall
	Usage     Usage
	Cut       bool
}

// ToolCall is one tool call of an answer; Arguments as the model wrote
// them.
type ToolCall struct {
	ID, Name, Arguments string
}

// Usage counts the tokens of a request.
type Usage struct {
	Prompt, CachedPrompt, Completion int64
	// Cached says whether the API reported cached prompt tokens at all.
	Cached bool
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errCutStream is a stream that ended without a finish reason: the
// connection dropped between two chunks.
var errCutStream = errors.New("the answer stream ended before the answer did")

// Send sends body (EncodeParams' JSON), retrying 429s (after Retry-After),
// 5xx answers and cut streams a bounded number of times, and returns the
// answer. Its error says what to do: a 401 names KeyEnv, a context-length
// refusal suggests /new or folding, a network failure names BaseURL.
func (c *Client) Send(ctx context.Context, body []byte, out Output) (Answer, error) {
	for attempt := 1; ; attempt++ {
		st, err := c.attempt(ctx, body, out)
		if err == nil {
			return st, nil
		}
		if ctx.Err() != nil {
			return st, ctx.Err()
		}
		wait, why, retry := c.retryable(err, attempt)
		if !retry || attempt >= c.cfg.Retry.Attempts {
			return st, c.explain(err, attempt)
		}
		if err := c.countdown(ctx, wait, fmt.Sprintf("%s; retry %d/%d in", why, attempt, c.cfg.Retry.Attempts-1), out); err != nil {
			return st, err
		}
	}
}

// attempt sends body once and streams the answer to out.
func (c *Client) attempt(ctx context.Context, body []byte, out Output) (Answer, error) {
	if d := c.cfg.Timeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d, errTimeout)
		defer cancel()
	}
	stream := c.chat.NewStreaming(ctx, openai.ChatCompletionNewParams{}, option.WithRequestBody("application/json", body))
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	var usage Usage
	var thought strings.Builder
	reasoning, textEnd, finished, cut := false, byte('\n'), false, false
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		if chunk.JSON.Usage.Valid() {
			usage = usageOf(chunk.Usage)
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			// DeepSeek streams its reasoning in delta.reasoning_content,
			// a field the SDK does not type: read it from the raw JSON.
			if f, ok := ch.Delta.JSON.ExtraFields[ReasoningField]; ok {
				var r string
				if json.Unmarshal([]byte(f.Raw()), &r) == nil && r != "" {
					reasoning = true
					thought.WriteString(r)
					write(out.Reasoning, r)
				}
			}
			if t := ch.Delta.Content; t != "" {
				if reasoning {
					reasoning = false
					write(out.Reasoning, "\n")
				}
				write(out.Text, t)
				textEnd = t[len(t)-1]
			}
			if ch.FinishReason != "" {
				finished = true
				cut = ch.FinishReason == "length"
			}
		}
	}
	if reasoning {
		write(out.Reasoning, "\n")
	}
	if textEnd != '\n' {
		write(out.Text, "\n")
	}
	if err := stream.Err(); err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, errTimeout) {
			return Answer{}, cause
		}
		return Answer{}, err
	}
	if !finished || len(acc.Choices) == 0 {
		return Answer{}, errCutStream
	}
	msg := acc.Choices[0].Message
	st := Answer{Content: msg.Content, Reasoning: thought.String(), Usage: usage, Cut: cut}
	for _, tc := range msg.ToolCalls {
		st.Calls = append(st.Calls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return st, nil
}

func write(w interface{ Write([]byte) (int, error) }, s string) {
	if w != nil {
		_, _ = w.Write([]byte(s))
	}
}

// usageOf reads a usage chunk: cached prompt tokens from OpenAI's
// prompt_tokens_details.cached_tokens or DeepSeek's prompt_cache_hit_tokens.
func usageOf(u openai.CompletionUsage) Usage {
	out := Usage{Prompt: u.PromptTokens, Completion: u.CompletionTokens}
	if u.PromptTokensDetails.JSON.CachedTokens.Valid() {
		out.Cached, out.CachedPrompt = true, u.PromptTokensDetails.CachedTokens
	}
	if f, ok := u.JSON.ExtraFields["prompt_cache_hit_tokens"]; ok {
		if n, err := strconv.ParseInt(f.Raw(), 10, 64); err == nil {
			out.Cached, out.CachedPrompt = true, n
		}
	}
	return out
}

var errTimeout = errors.New("timeoutMs")

// retryable says whether err is worth another attempt, after how long, and
// why, for the countdown line.
func (c *Client) retryable(err error, attempt int) (wait time.Duration, why string, ok bool) {
	backoff := c.cfg.Retry.Backoff << (attempt - 1)
	var apiErr *openai.Error
	var streamErr *ssestream.StreamError
	switch {
	case errors.Is(err, errTimeout):
		return 0, "", false
	case errors.As(err, &apiErr):
		switch sc := apiErr.StatusCode; {
		case sc == http.StatusTooManyRequests:
			wait, ok := retryAfter(apiErr.Response)
			if !ok {
				wait = backoff
			}
			if wait > c.cfg.Retry.MaxWait {
				return 0, "", false
			}
			return wait, "rate limited (429)", true
		case sc == http.StatusNotImplemented:
			// Not a passing failure: the server does not do what was
			// asked (an endpoint a non-OpenAI server lacks).
			return 0, "", false
		case sc >= 500:
			return backoff, fmt.Sprintf("the API failed (%d)", sc), true
		}
		return 0, "", false
	case errors.As(err, &streamErr):
		return backoff, "the API sent an error mid-answer", true
	case errors.Is(err, errCutStream):
		return backoff, "the answer stream was cut", true
	case transient(err):
		return backoff, "the connection failed (" + Clip(err.Error(), 80) + ")", true
	}
	// A DNS failure, a TLS error, a refused connection, a bad baseUrl: the
	// same request fails the same way, so it fails at once.
	return 0, "", false
}

// transient says whether a connection error may pass on its own: a
// timeout, a connection reset, or a body cut short.
func transient(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// retryAfter reads how long a 429 asks to wait: retry-after-ms (OpenAI),
// else Retry-After in seconds or as an HTTP date.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	if resp == nil {
		return 0, false
	}
	if v := resp.Header.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return durationOf(ms, time.Millisecond), true
		}
	}
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return durationOf(s, time.Second), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// durationOf is n units as a Duration, the longest one past what it holds
// (a server's 1e20 or Inf): converted, it would overflow into a negative
// wait, under MaxWait.
func durationOf(n float64, unit time.Duration) time.Duration {
	if n >= float64(math.MaxInt64)/float64(unit) {
		return math.MaxInt64
	}
	return time.Duration(n * float64(unit))
}

// countdown waits d, showing the seconds left on one status line:
// "rate limited (429); retry 1/3 in 3s 2s 1s".
func (c *Client) countdown(ctx context.Context, d time.Duration, what string, out Output) error {
	if out.Status != nil {
		fmt.Fprintf(out.Status, "%s %s", what, seconds(d))
		defer fmt.Fprintln(out.Status)
	}
	for rem := d; rem > 0; {
		step := min(c.cfg.Retry.Tick, rem)
		if err := c.cfg.Retry.Sleep(ctx, step); err != nil {
			return err
		}
		rem -= step
		if rem > 0 && out.Status != nil {
			fmt.Fprintf(out.Status, " %s", seconds(rem))
		}
	}
	return nil
}

func seconds(d time.Duration) string {
	if d >= time.Second {
		return d.Round(time.Second).String()
	}
	return d.Round(time.Millisecond).String()
}

// explain turns the last error of a step into what the user can act on.
func (c *Client) explain(err error, attempts int) error {
	tries := ""
	if attempts > 1 {
		tries = fmt.Sprintf(" (%d attempts)", attempts)
	}
	var apiErr *openai.Error
	switch {
	case errors.Is(err, errTimeout):
		return fmt.Errorf("no complete answer within timeoutMs (%d ms)", c.cfg.Timeout.Milliseconds())
	case errors.As(err, &apiErr):
		sc := apiErr.StatusCode
		detail := fmt.Sprintf("%d %s", sc, http.StatusText(sc))
		if m := strings.TrimSpace(apiErr.Message); m != "" {
			detail += ": " + m
		}
		switch {
		case sc == http.StatusUnauthorized || sc == http.StatusForbidden:
			if c.cfg.KeyEnv == "" {
				return fmt.Errorf("the API wants a key (%s); set apiKeyEnv to the variable that holds it", detail)
			}
			return fmt.Errorf("the API refused the key read from %s (%s); check the key in that variable (the entry's apiKeyEnv)", c.cfg.KeyEnv, detail)
		case sc == http.StatusTooManyRequests:
			if wait, ok := retryAfter(apiErr.Response); ok && wait > c.cfg.Retry.MaxWait {
				return fmt.Errorf("rate limited (%s); the API asks to wait %s, longer than the agent waits (%s): try again later", detail, seconds(wait), c.cfg.Retry.MaxWait)
			}
			return fmt.Errorf("rate limited%s (%s); try again later", tries, detail)
		case contextTooLong(apiErr):
			return fmt.Errorf("the conversation is too long for the model's context (%s); start a new one with /new, or fold the tools (an mcp-fold entry) to make each request smaller", detail)
		case sc == http.StatusNotImplemented:
			return fmt.Errorf("the server at %s does not implement this request (%s): check that baseUrl is an OpenAI-compatible chat completions API, and that it supports streaming and tools", c.cfg.BaseURL, detail)
		case sc >= 500:
			return fmt.Errorf("the API failed%s (%s)", tries, detail)
		}
		return fmt.Errorf("the API refused the request (%s)", detail)
	case errors.Is(err, errCutStream):
		return fmt.Errorf("%w%s", err, tries)
	case malformed(err):
		return fmt.Errorf("the answer stream from %s was malformed (an event that is not a chat completion chunk): %w; the server answered, so the network is fine: check that baseUrl is an OpenAI-compatible chat completions API", c.cfg.BaseURL, err)
	}
	return fmt.Errorf("the request to %s failed%s (check baseUrl and the network): %w", c.cfg.BaseURL, tries, err)
}

// malformed says whether err is a stream event that did not decode: the
// server answered, with something that is not the API's JSON.
func malformed(err error) bool {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.As(err, &syn) || errors.As(err, &typ)
}

// contextTooLong recognizes the context-length refusal of OpenAI
// (code context_length_exceeded) and of DeepSeek and others, which say so
// in the message of a 400.
func contextTooLong(e *openai.Error) bool {
	if e.Code == "context_length_exceeded" {
		return true
	}
	if e.StatusCode != http.StatusBadRequest && e.StatusCode != http.StatusRequestEntityTooLarge {
		return false
	}
	m := strings.ToLower(e.Message)
	return strings.Contains(m, "context length") || strings.Contains(m, "context_length") ||
		strings.Contains(m, "context window") || strings.Contains(m, "maximum context")
}
