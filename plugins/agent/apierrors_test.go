package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
)

// The API's failures as the loop meets them: retried (429, a cut stream),
// or explained at once (refusals, a timeout, a refused connection).
// chatapi's own tests hold the policy's table.

func TestRateLimitThenSuccess(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{Status: 429, Header: map[string]string{"Retry-After": "3"}},
		openaitest.Turn{Content: "hello"},
	)
	e := start(t, srv, "")
	var o output
	res, err := e.agent.Main().Turn(context.Background(), "hi", o.out())
	if err != nil || res.Answer != "hello" {
		t.Fatalf("turn = %+v, %v", res, err)
	}
	if got := e.slept.sum(); got != 3*time.Second {
		t.Errorf("waited %s, want the 3s Retry-After asked", got)
	}
	if got := o.status.String(); !strings.Contains(got, "rate limited (429); retry 1/3 in 3s 2s 1s\n") {
		t.Errorf("status = %q, want a countdown", got)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestRateLimitLongerThanTheAgentWaits(t *testing.T) {
	srv := openaitest.New(t, openaitest.Turn{Status: 429, Header: map[string]string{"Retry-After": "3600"}})
	e := start(t, srv, "")
	_, err := e.agent.Main().Turn(context.Background(), "hi", Output{})
	if err == nil || !strings.Contains(err.Error(), "asks to wait 1h0m0s") {
		t.Errorf("err = %v", err)
	}
	if e.slept.sum() != 0 || len(srv.Requests()) != 1 {
		t.Errorf("waited %s over %d requests; want no wait and one request", e.slept.sum(), len(srv.Requests()))
	}
}

func TestCutStreamIsRetried(t *testing.T) {
	srv := openaitest.New(t,
		openaitest.Turn{Content: "a long answer that gets cut", CutAfter: 3},
		openaitest.Turn{Content: "a long answer that gets cut, whole"},
	)
	e := start(t, srv, "")
	var o output
	res, err := e.agent.Main().Turn(context.Background(), "hi", o.out())
	if err != nil || res.Answer != "a long answer that gets cut, whole" {
		t.Fatalf("turn = %+v, %v\n%s", res, err, o.status.String())
	}
	if !strings.Contains(o.status.String(), "retry 1/3") {
		t.Errorf("status = %q", o.status.String())
	}
	if e.slept.sum() != time.Millisecond {
		t.Errorf("backoff waited %s, want the first backoff", e.slept.sum())
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name     string
		turns    []openaitest.Turn
		want     []string
		requests int
	}{
		{"401 names the variable", []openaitest.Turn{{Status: 401}}, []string{"refused the key read from " + testKeyEnv, "401 Unauthorized"}, 1},
		{"context too long", []openaitest.Turn{{Status: 400, ErrorBody: `{"error":{"message":"This model's maximum context length is 65536 tokens. However, you requested 70000 tokens.","type":"invalid_request_error","code":"invalid_request_error"}}`}},
			[]string{"too long for the model's context", "/new", "fold"}, 1},
		{"5xx retried, bounded", []openaitest.Turn{{Status: 503}, {Status: 503}, {Status: 500}, {Status: 502}, {Content: "never reached"}},
			[]string{"the API failed (4 attempts)", "502"}, 4},
		{"cut streams, bounded", []openaitest.Turn{{Content: "abcdefgh", CutAfter: 2}, {Content: "abcdefgh", CutAfter: 2}, {Content: "abcdefgh", CutAfter: 2}, {Content: "abcdefgh", CutAfter: 2}},
			[]string{"(4 attempts)"}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := openaitest.New(t, tt.turns...)
			e := start(t, srv, "")
			_, err := e.agent.Main().Turn(context.Background(), "hi", Output{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "sk-test-key") {
				t.Errorf("the error quotes the key: %v", err)
			}
			if n := len(srv.Requests()); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
			if e.agent.Main().Len() != 0 {
				t.Errorf("a failed turn left %d messages", e.agent.Main().Len())
			}
		})
	}
}

// TestTimeout: an answer that never ends fails the turn at timeoutMs, not
// retried.
func TestTimeout(t *testing.T) {
	srv := openaitest.New(t, openaitest.Turn{Content: "and then", Hold: true})
	e := start(t, srv, "      timeoutMs: 50\n")
	_, err := e.agent.Main().Turn(context.Background(), "hi", Output{})
	if err == nil || !strings.Contains(err.Error(), "within timeoutMs (50 ms)") {
		t.Errorf("err = %v", err)
	}
	// Under load the bound may pass before the request is even sent.
	if n := len(srv.Requests()); n > 1 {
		t.Errorf("%d requests: a timeout was retried", n)
	}
}

// TestRefusedConnectionFailsAtOnce: a baseUrl nobody listens on is not
// retried, and the error names it.
func TestRefusedConnectionFailsAtOnce(t *testing.T) {
	srv := openaitest.New(t)
	e := start(t, srv, "")
	srv.Close()
	var o output
	_, err := e.agent.Main().Turn(context.Background(), "hi", o.out())
	if err == nil || !strings.Contains(err.Error(), "the request to "+srv.URL+" failed (check baseUrl") {
		t.Errorf("err = %v", err)
	}
	if e.slept.sum() != 0 || strings.Contains(o.status.String(), "retry") {
		t.Errorf("retried (waited %s): %q", e.slept.sum(), o.status.String())
	}
}

// TestMalformedStreamSaysSo: an answer stream with an event that is not
// JSON (a proxy's page) is said to be malformed, not blamed on the
// network.
func TestMalformedStreamSaysSo(t *testing.T) {
	srv := openaitest.New(t, openaitest.Turn{Content: "hello", Malformed: "<html>Bad Gateway</html>"})
	e := start(t, srv, "")
	_, err := e.agent.Main().Turn(context.Background(), "hi", Output{})
	if err == nil || !strings.Contains(err.Error(), "was malformed") || strings.Contains(err.Error(), "check baseUrl and the network") {
		t.Errorf("err = %v, want the stream said malformed", err)
	}
}

// Test501IsNotRetried: a 501 (a server that does not implement the
// request) fails at once, saying so; a 502 is retried.
func Test501IsNotRetried(t *testing.T) {
	srv := openaitest.New(t, openaitest.Turn{Status: 501})
	e := start(t, srv, "")
	_, err := e.agent.Main().Turn(context.Background(), "hi", Output{})
	if err == nil || !strings.Contains(err.Error(), "does not implement this request") {
		t.Errorf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 1 || e.slept.sum() != 0 {
		t.Errorf("%d requests, waited %s; want one request and no wait", n, e.slept.sum())
	}
	srv.Push(openaitest.Turn{Status: 502}, openaitest.Turn{Content: "after 502"})
	if res, err := e.agent.Main().Turn(context.Background(), "hi", Output{}); err != nil || res.Answer != "after 502" {
		t.Errorf("502 then an answer: %+v, %v", res, err)
	}
}
