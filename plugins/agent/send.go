package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// retryPolicy is how a request that failed in a way worth retrying is
// retried. Tests shrink the delays and replace sleep.
type retryPolicy struct {
	attempts int           // requests in all for one step: 1 + retries
	backoff  time.Duration // the wait after the first 5xx or cut stream; doubles each time
	maxWait  time.Duration // the longest Retry-After honoured; a longer one fails at once
	tick     time.Duration // the countdown's step
	sleep    func(ctx context.Context, d time.Duration) error
}

func defaultRetry() retryPolicy {
	return retryPolicy{attempts: 4, backoff: time.Second, maxWait: time.Minute, tick: time.Second, sleep: sleepCtx}
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

// send sends body, retrying 429s (after Retry-After), 5xx answers and cut
// streams a bounded number of times, and returns the step's answer.
func (a *Agent) send(ctx context.Context, body []byte, out Output) (stepResult, error) {
	for attempt := 1; ; attempt++ {
		st, err := a.attempt(ctx, body, out)
		if err == nil {
			return st, nil
		}
		if ctx.Err() != nil {
			return st, ctx.Err()
		}
		wait, why, retry := a.retryable(err, attempt)
		if !retry || attempt >= a.retry.attempts {
			return st, a.explain(err, attempt)
		}
		if err := a.countdown(ctx, wait, fmt.Sprintf("%s; retry %d/%d in", why, attempt, a.retry.attempts-1), out); err != nil {
			return st, err
		}
	}
}

// attempt sends body once and streams the answer to out.
func (a *Agent) attempt(ctx context.Context, body []byte, out Output) (stepResult, error) {
	if d := a.timeout(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d, errTimeout)
		defer cancel()
	}
	stream := a.chat.NewStreaming(ctx, openai.ChatCompletionNewParams{}, option.WithRequestBody("application/json", body))
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	var usage Usage
	var thought strings.Builder
	reasoning, textEnd, finished := false, byte('\n'), false
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
			if f, ok := ch.Delta.JSON.ExtraFields["reasoning_content"]; ok {
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
			return stepResult{}, cause
		}
		return stepResult{}, err
	}
	if !finished || len(acc.Choices) == 0 {
		return stepResult{}, errCutStream
	}
	msg := acc.Choices[0].Message
	st := stepResult{content: msg.Content, reasoning: thought.String(), usage: usage}
	for _, tc := range msg.ToolCalls {
		st.calls = append(st.calls, toolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
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
func (a *Agent) retryable(err error, attempt int) (wait time.Duration, why string, ok bool) {
	backoff := a.retry.backoff << (attempt - 1)
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
			if wait > a.retry.maxWait {
				return 0, "", false
			}
			return wait, "rate limited (429)", true
		case sc >= 500:
			return backoff, fmt.Sprintf("the API failed (%d)", sc), true
		}
		return 0, "", false
	case errors.As(err, &streamErr):
		return backoff, "the API sent an error mid-answer", true
	case errors.Is(err, errCutStream):
		return backoff, "the answer stream was cut", true
	case transient(err):
		return backoff, "the connection failed (" + clip(err.Error(), 80) + ")", true
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
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// countdown waits d, showing the seconds left on one status line:
// "rate limited (429); retry 1/3 in 3s 2s 1s".
func (a *Agent) countdown(ctx context.Context, d time.Duration, what string, out Output) error {
	if out.Status != nil {
		fmt.Fprintf(out.Status, "%s %s", what, seconds(d))
		defer fmt.Fprintln(out.Status)
	}
	for rem := d; rem > 0; {
		step := min(a.retry.tick, rem)
		if err := a.retry.sleep(ctx, step); err != nil {
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
func (a *Agent) explain(err error, attempts int) error {
	tries := ""
	if attempts > 1 {
		tries = fmt.Sprintf(" (%d attempts)", attempts)
	}
	var apiErr *openai.Error
	switch {
	case errors.Is(err, errTimeout):
		return fmt.Errorf("no complete answer within timeoutMs (%d ms)", a.cfg.TimeoutMs)
	case errors.As(err, &apiErr):
		sc := apiErr.StatusCode
		detail := fmt.Sprintf("%d %s", sc, http.StatusText(sc))
		if m := strings.TrimSpace(apiErr.Message); m != "" {
			detail += ": " + m
		}
		switch {
		case sc == http.StatusUnauthorized || sc == http.StatusForbidden:
			if a.cfg.APIKeyEnv == "" {
				return fmt.Errorf("the API wants a key (%s); set apiKeyEnv to the variable that holds it", detail)
			}
			return fmt.Errorf("the API refused the key read from %s (%s); check the key in that variable (the entry's apiKeyEnv)", a.cfg.APIKeyEnv, detail)
		case sc == http.StatusTooManyRequests:
			if wait, ok := retryAfter(apiErr.Response); ok && wait > a.retry.maxWait {
				return fmt.Errorf("rate limited (%s); the API asks to wait %s, longer than the agent waits (%s): try again later", detail, seconds(wait), a.retry.maxWait)
			}
			return fmt.Errorf("rate limited%s (%s); try again later", tries, detail)
		case contextTooLong(apiErr):
			return fmt.Errorf("the conversation is too long for the model's context (%s); start a new one with /new, or fold the tools (an mcp-fold entry) to make each request smaller", detail)
		case sc >= 500:
			return fmt.Errorf("the API failed%s (%s)", tries, detail)
		}
		return fmt.Errorf("the API refused the request (%s)", detail)
	case errors.Is(err, errCutStream):
		return fmt.Errorf("%w%s", err, tries)
	}
	return fmt.Errorf("the request to %s failed%s (check baseUrl and the network): %w", a.cfg.BaseURL, tries, err)
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
