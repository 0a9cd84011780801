package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/services/elicit"

	_ "github.com/dsh-host/dsh-host/plugins/mcpclient"
)

// askServer serves, with lim, a host running the fixture's ask tool, and
// returns a raw HTTP client of its socket: a caller that misbehaves.
func askServer(t *testing.T, lim limits) *http.Client {
	t.Helper()
	c, err := host.ParseComposition("c.yml", []byte(fmt.Sprintf(`plugins:
  - id: fx
    name: mcp-client
    config: {serverName: fx, transport: stdio, command: %q, args: [-elicit]}
`, mcptest.FixtureBinary(t))), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := host.New(&host.Options{Logger: quiet})
	if err := h.Update(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	path, l := listenUnix(t)
	srv := serve(l, &app.Local{Host: h, File: "c.yml"}, "c.yml", quiet, lim)
	tr := &http.Transport{DialContext: dialer(path)}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
		h.Shutdown(context.Background())
	})
	return &http.Client{Transport: tr}
}

// startAsk posts a call of the ask tool that answers its questions, and
// returns its stream, its call id and the first question's id.
func startAsk(t *testing.T, hc *http.Client) (lines *bufio.Scanner, call, question string, closeBody func()) {
	t.Helper()
	body := `{"tool":"mcp__fx__ask","args":{},"ask":true}`
	resp, err := hc.Post("http://x"+pathCall, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	next := func() readLine {
		t.Helper()
		if !sc.Scan() {
			t.Fatalf("the stream ended: %v", sc.Err())
		}
		var l readLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	first := next()
	q := next()
	if first.Call == "" || q.Question == nil || q.Question.Request.Server != "fx" {
		t.Fatalf("the stream began %+v, %+v; want the call's id, then fx's question", first, q)
	}
	return sc, first.Call, q.Question.ID, func() { resp.Body.Close() }
}

func reply(t *testing.T, hc *http.Client, call, question string, res elicit.Result) int {
	t.Helper()
	b, _ := json.Marshal(answerRequest{Call: call, Question: question, Result: res})
	resp, err := hc.Post("http://x"+pathAnswer, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// result reads the stream to its result line.
func result(t *testing.T, sc *bufio.Scanner) *readResult {
	t.Helper()
	for sc.Scan() {
		var l readLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if l.Result != nil {
			return l.Result
		}
	}
	t.Fatalf("no result: %v", sc.Err())
	return nil
}

// TestQuestionReplies: a reply must name the question's own call; the
// first reply answers, a second finds nothing; a reply to a call that has
// ended finds nothing.
func TestQuestionReplies(t *testing.T) {
	hc := askServer(t, defaultLimits())
	a, callA, qA, closeA := startAsk(t, hc)
	defer closeA()
	b, callB, qB, closeB := startAsk(t, hc)
	defer closeB()
	accept := elicit.Result{Action: elicit.Accept, Content: map[string]any{"name": "Ada"}}
	if code := reply(t, hc, callB, qA, accept); code != http.StatusNotFound {
		t.Errorf("a reply to A's question under B's call id: %d, want 404", code)
	}
	if code := reply(t, hc, callA, qA, accept); code != http.StatusOK {
		t.Errorf("A's reply: %d, want 200", code)
	}
	if code := reply(t, hc, callA, qA, elicit.Result{Action: elicit.Decline}); code != http.StatusNotFound {
		t.Errorf("A's second reply: %d, want 404", code)
	}
	if r := result(t, a); !strings.Contains(contentText(r), `"Ada"`) {
		t.Errorf("A's result: %+v, want the first reply's name", r)
	}
	if code := reply(t, hc, callA, qA, accept); code != http.StatusNotFound {
		t.Errorf("a reply after A ended: %d, want 404", code)
	}
	if code := reply(t, hc, callB, qB, elicit.Result{Action: elicit.Decline}); code != http.StatusOK {
		t.Errorf("B's reply: %d", code)
	}
	if r := result(t, b); !strings.Contains(contentText(r), "decline") {
		t.Errorf("B's result: %+v, want declined", r)
	}
	// A reply past the body cap is refused as any request is (bounded;
	// TestControlBodyCapped).
}

// TestUnansweredQuestionDeclined: a caller that never replies holds the
// call only until the bound, then the question is declined, saying why.
func TestUnansweredQuestionDeclined(t *testing.T) {
	lim := defaultLimits()
	lim.question = 50 * time.Millisecond
	hc := askServer(t, lim)
	sc, _, _, closeBody := startAsk(t, hc)
	defer closeBody()
	if r := result(t, sc); !strings.Contains(contentText(r), "decline") {
		t.Errorf("result: %+v, want declined", r)
	}
}

func contentText(r *readResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String() + r.Error
}

// blockAnswer answers only when ctx ends.
type blockAnswer struct{}

func (blockAnswer) Answer(ctx context.Context, _ elicit.Request) (elicit.Result, error) {
	<-ctx.Done()
	return elicit.Result{}, ctx.Err()
}

// TestClientBoundsAHostsQuestions: a host that floods a call with
// questions gets maxOpenQuestions of them asked at once; the rest are
// declined at once, saying why, and the call's end ends those asked.
func TestClientBoundsAHostsQuestions(t *testing.T) {
	path, l := listenUnix(t)
	const flood = maxOpenQuestions + 5
	declined := make(chan string, flood)
	var mu sync.Mutex
	var reasons []string
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+pathAnswer, func(w http.ResponseWriter, r *http.Request) {
		var req answerRequest
		json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		reasons = append(reasons, req.Result.Reason)
		mu.Unlock()
		declined <- req.Result.Reason
		writeJSON(w, struct{}{})
	})
	mux.HandleFunc("POST "+pathCall, func(w http.ResponseWriter, r *http.Request) {
		st := (&Server{lim: defaultLimits()}).newStream(w, func() {})
		st.send(streamLine{Call: "c"})
		for i := range flood {
			st.send(streamLine{Question: &questionLine{ID: fmt.Sprint(i)}})
		}
		for range flood - maxOpenQuestions {
			<-declined
		}
		st.end(streamLine{Result: &wireResult{Content: nil}})
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	defer srv.Close()
	tr := &http.Transport{DialContext: dialer(path)}
	defer tr.CloseIdleConnections()
	c := &Client{tr: tr, http: &http.Client{Transport: tr}}
	res, err := c.Call(t.Context(), app.CallRequest{Tool: "x", Answer: blockAnswer{}})
	if err != nil || res.Err != nil {
		t.Fatalf("call: %+v, %v", res, err)
	}
	// The call's end cancelled the questions still asked: none answered.
	mu.Lock()
	defer mu.Unlock()
	if len(reasons) != flood-maxOpenQuestions {
		t.Errorf("%d answers, want the %d declined", len(reasons), flood-maxOpenQuestions)
	}
	for _, why := range reasons {
		if !strings.Contains(why, "open already") {
			t.Errorf("declined with %q", why)
		}
	}
}

// TestPanicAnswersThatRequest: an answer that panics (here a Local with
// no host) is that request's error; the socket goes on answering.
func TestPanicAnswersThatRequest(t *testing.T) {
	path, l := listenUnix(t)
	srv := serve(l, &app.Local{File: "c.yml"}, "c.yml", quiet, defaultLimits())
	defer srv.Close()
	c, err := dialAt(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 2 {
		if _, err := c.Status(t.Context()); err == nil || !strings.Contains(err.Error(), "failed answering /v1/status") {
			t.Errorf("status of no host: %v, want the panic as its error", err)
		}
	}
}

// TestStreamCutsACallerThatStopsReading: a caller that keeps its
// connection but stops reading a streamed answer cannot hold the request
// (a chat turn, a server's progress) past the write bound: the stream ends
// and the request's context is cancelled.
func TestStreamCutsACallerThatStopsReading(t *testing.T) {
	path, l := listenUnix(t)
	lim := defaultLimits()
	lim.streamWrite = 200 * time.Millisecond
	s := &Server{lim: lim}
	cut := make(chan error, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+pathCall, func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		st := s.newStream(w, cancel)
		big := strings.Repeat("x", 64<<10)
		for range 4096 { // 256 MiB: far past any socket buffer
			if err := st.send(streamLine{Error: big}); err != nil {
				cut <- ctx.Err()
				return
			}
		}
		cut <- errors.New("every line was written to a caller that reads nothing")
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	defer srv.Close()
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", pathCall)
	select {
	case err := <-cut:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the stream ended, but the request's context: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the handler is still writing to a caller that does not read")
	}
}
