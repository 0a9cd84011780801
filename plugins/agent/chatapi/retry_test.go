package chatapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
)

// TestRetryAfter: a 429's wait is read from retry-after-ms first, then
// Retry-After in seconds or as an HTTP date; a negative or unreadable one
// is no wait asked (the backoff applies).
func TestRetryAfter(t *testing.T) {
	for _, c := range []struct {
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{map[string]string{"Retry-After": "3"}, 3 * time.Second, true},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, true},
		{map[string]string{"Retry-After-Ms": "1500", "Retry-After": "9"}, 1500 * time.Millisecond, true},
		{map[string]string{"Retry-After-Ms": "x", "Retry-After": "2"}, 2 * time.Second, true},
		{map[string]string{"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0, true},
		{map[string]string{"Retry-After": "-5"}, 0, false},
		{map[string]string{"Retry-After": "soon"}, 0, false},
		{map[string]string{}, 0, false},
	} {
		resp := &http.Response{Header: http.Header{}}
		for k, v := range c.header {
			resp.Header.Set(k, v)
		}
		got, ok := retryAfter(resp)
		if got != c.want || ok != c.ok {
			t.Errorf("%v: %v, %v; want %v, %v", c.header, got, ok, c.want, c.ok)
		}
	}
	if _, ok := retryAfter(nil); ok {
		t.Error("no response: a wait asked")
	}
}

// TestRetryable: what is retried, and what fails at once; a Retry-After
// over MaxWait fails at once rather than hold the turn.
func TestRetryable(t *testing.T) {
	c := New(Config{BaseURL: "http://127.0.0.1:1", Retry: DefaultRetry()})
	apiErr := func(code int, header ...string) error {
		h := http.Header{}
		for i := 0; i+1 < len(header); i += 2 {
			h.Set(header[i], header[i+1])
		}
		return &openai.Error{StatusCode: code, Response: &http.Response{StatusCode: code, Header: h}}
	}
	for _, tc := range []struct {
		name    string
		err     error
		attempt int
		wait    time.Duration
		retry   bool
	}{
		{"429 with Retry-After", apiErr(429, "Retry-After", "3"), 1, 3 * time.Second, true},
		{"429 without", apiErr(429), 2, 2 * time.Second, true},
		{"429 asking too long", apiErr(429, "Retry-After", "3600"), 1, 0, false},
		// A hostile server's count past what a Duration holds is too
		// long, not an overflow into no wait.
		{"429 asking 1e20 s", apiErr(429, "Retry-After", "1e20"), 1, 0, false},
		{"429 asking Inf s", apiErr(429, "Retry-After", "Inf"), 1, 0, false},
		{"429 asking 1e300 ms", apiErr(429, "Retry-After-Ms", "1e300"), 1, 0, false},
		{"500, first", apiErr(500), 1, time.Second, true},
		{"503, third", apiErr(503), 3, 4 * time.Second, true},
		{"400", apiErr(400), 1, 0, false},
		{"401", apiErr(401), 1, 0, false},
		{"a cut stream", errCutStream, 2, 2 * time.Second, true},
		{"the timeout", errTimeout, 1, 0, false},
	} {
		wait, _, retry := c.retryable(tc.err, tc.attempt)
		if wait != tc.wait || retry != tc.retry {
			t.Errorf("%s: %v, %v; want %v, %v", tc.name, wait, retry, tc.wait, tc.retry)
		}
	}
}

// TestContextTooLong: OpenAI's code, and the 400 and 413 messages of the
// others; another 400 is not it.
func TestContextTooLong(t *testing.T) {
	for _, c := range []struct {
		e    openai.Error
		want bool
	}{
		{openai.Error{StatusCode: 400, Code: "context_length_exceeded"}, true},
		{openai.Error{StatusCode: 400, Message: "This model's maximum context length is 65536 tokens"}, true},
		{openai.Error{StatusCode: 413, Message: "Request exceeds the context window"}, true},
		{openai.Error{StatusCode: 400, Message: "invalid tool schema"}, false},
		{openai.Error{StatusCode: 500, Message: "maximum context"}, false},
	} {
		if got := contextTooLong(&c.e); got != c.want {
			t.Errorf("%d %q: %v, want %v", c.e.StatusCode, c.e.Message, got, c.want)
		}
	}
}
