package openaitest_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

func TestMain(m *testing.M) { leaks.VerifyTestMain(m) }

// TestWireFormat reads a scripted answer with the official SDK, over the
// socket and in-process: its accumulator rebuilds the content and the tool
// call from the pieces, and the usage chunk is read.
func TestWireFormat(t *testing.T) {
	srv := openaitest.New(t)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	for name, rt := range map[string]http.RoundTripper{"socket": tr, "in-process": srv.Transport()} {
		t.Run(name, func(t *testing.T) {
			srv.Push(openaitest.Turn{
				Content:   "Héllo, wörld",
				ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "add", Arguments: `{"a":1,"b":2}`}},
				Usage:     &openaitest.Usage{PromptTokens: 7, CompletionTokens: 3, CachedTokens: 2},
			})
			chat := openai.NewChatCompletionService(option.WithBaseURL(srv.URL+"/"), option.WithHTTPClient(&http.Client{Transport: rt}), option.WithMaxRetries(0))
			stream := chat.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
				Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			})
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			msg := acc.Choices[0].Message
			if msg.Content != "Héllo, wörld" || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].ID != "call_1" ||
				msg.ToolCalls[0].Function.Arguments != `{"a":1,"b":2}` || acc.Choices[0].FinishReason != "tool_calls" {
				t.Errorf("accumulated %+v, finish %q", msg, acc.Choices[0].FinishReason)
			}
			if acc.Usage.PromptTokens != 7 || acc.Usage.CompletionTokens != 3 || acc.Usage.PromptTokensDetails.CachedTokens != 2 {
				t.Errorf("usage = %+v", acc.Usage)
			}
			reqs := srv.Requests()
			if last := reqs[len(reqs)-1]; last.Path != "/v1/chat/completions" || string(last.Field("stream")) != "true" {
				t.Errorf("recorded %s %s", last.Path, last.Body)
			}
		})
	}
}

// TestErrorsAndRunningOut: a scripted status comes with its headers and an
// OpenAI-style error body; a request past the script is a 500 saying so.
func TestErrorsAndRunningOut(t *testing.T) {
	srv := openaitest.New(t, openaitest.Turn{Status: 429, Header: map[string]string{"Retry-After": "2"}})
	for _, want := range []struct {
		status     int
		retryAfter string
	}{{429, "2"}, {500, ""}} {
		res, err := http.Post(srv.URL+"/chat/completions", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want.status || res.Header.Get("Retry-After") != want.retryAfter {
			t.Errorf("got %d Retry-After %q, want %d %q", res.StatusCode, res.Header.Get("Retry-After"), want.status, want.retryAfter)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	if srv.Left() != 0 || len(srv.Requests()) != 2 {
		t.Errorf("left %d, requests %d", srv.Left(), len(srv.Requests()))
	}
}

// TestContextLimit: a request over the window is refused with OpenAI's
// code and a message naming both counts, and its turn stays; one that
// fits plays the turn and reports its count as prompt_tokens.
func TestContextLimit(t *testing.T) {
	srv := openaitest.New(t, openaitest.Turn{Content: "fits"})
	srv.ContextLimit(100)
	chat := openai.NewChatCompletionService(option.WithBaseURL(srv.URL+"/"), option.WithMaxRetries(0))
	send := func(text string) (*openai.ChatCompletion, error) {
		return chat.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)},
		})
	}
	_, err := send(strings.Repeat("x", 400))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "context_length_exceeded" ||
		!strings.Contains(apiErr.Message, "maximum context length is 100 tokens") {
		t.Fatalf("over the window: %v", err)
	}
	if srv.Left() != 1 || srv.Refused() != 1 {
		t.Fatalf("left %d turns, refused %d: want the turn kept and one refusal", srv.Left(), srv.Refused())
	}
	stream := chat.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("short")},
	})
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	body := srv.Requests()[1].Body
	if acc.Choices[0].Message.Content != "fits" || acc.Usage.PromptTokens != int64(openaitest.PromptTokens(len(body))) {
		t.Errorf("got %q with %d prompt tokens, want fits with %d", acc.Choices[0].Message.Content, acc.Usage.PromptTokens, openaitest.PromptTokens(len(body)))
	}
	http.DefaultClient.CloseIdleConnections()
}
