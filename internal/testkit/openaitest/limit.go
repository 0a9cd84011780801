package openaitest

import (
	"fmt"
	"net/http"
)

// A context window, as real providers hold a request to one: a request
// whose prompt counts more tokens than the window is answered 400
// (OpenAI's code context_length_exceeded, the message DeepSeek and
// others send), without playing a scripted turn. The count is the body's
// bytes over BytesPerToken, a pessimistic tokenizer: code and JSON run
// nearer 3 bytes a token than 4 (a 204 KB file read was 61.6K tokens).

// BytesPerToken is how many bytes of a request body ContextLimit counts as
// one token.
const BytesPerToken = 3

// ContextLimit holds every later request to a window of tokens (0: none).
// A request that fits is answered with its count as prompt_tokens when its
// turn scripts no Usage, as a real API reports it.
func (s *Server) ContextLimit(tokens int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.window = tokens
}

// PromptTokens is the count ContextLimit holds a body of n bytes to.
func PromptTokens(n int) int { return (n + BytesPerToken - 1) / BytesPerToken }

// windowRule returns the 400's message for body, "" when it fits or no
// window is set, and the body's count. s.mu is held.
func (s *Server) windowRule(body []byte) (refusal string, tokens int) {
	if s.window <= 0 {
		return "", 0
	}
	tokens = PromptTokens(len(body))
	if tokens <= s.window {
		return "", tokens
	}
	return fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", s.window, tokens), tokens
}

// Refused returns how many requests the server refused for passing the
// window.
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overWindow
}

func writeTooLong(w http.ResponseWriter, message string) {
	writeCodedError(w, http.StatusBadRequest, "context_length_exceeded", message)
}
