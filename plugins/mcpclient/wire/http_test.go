package wire

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/remote"
)

// rawServer answers each request on 127.0.0.1 with what the test set:
// a content type and bytes as they are. It keeps the bodies it was sent.
type rawServer struct {
	*httptest.Server
	mu       sync.Mutex
	ct, body string
	got      []string
}

func newRawServer(t *testing.T) *rawServer {
	s := &rawServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got = append(s.got, string(b))
		ct, body := s.ct, s.body
		s.mu.Unlock()
		w.Header().Set("Content-Type", ct)
		io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *rawServer) answer(ct, body string) {
	s.mu.Lock()
	s.ct, s.body = ct, body
	s.mu.Unlock()
}

// tapped returns the HTTP client of a Streamable HTTP transport to s with
// the tap on it, each event bounded to max bytes.
func tapped(t *testing.T, s *rawServer, max int, subs ...Subscriber) *http.Client {
	st := remote.Streamable(s.Client(), s.URL)
	st.MaxEventSize = max
	if New(subs...).Wrap(st) != mcp.Transport(st) {
		t.Fatal("a Streamable HTTP transport was wrapped")
	}
	return st.HTTPClient
}

// exchange sends body (a POST) or none (a GET), as go-sdk does, and reads
// the whole answer, as go-sdk's reading and then draining it do, one byte
// at a time or not.
func exchange(t *testing.T, c *http.Client, url, body string, oneByte bool, header ...string) {
	t.Helper()
	method, rd := http.MethodGet, io.Reader(nil)
	if body != "" {
		method, rd = http.MethodPost, bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var r io.Reader = resp.Body
	if oneByte {
		r = iotest.OneByteReader(r)
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

const (
	call       = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`
	progress   = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"a","progress":1}}`
	answer     = `{"jsonrpc":"2.0","id":1,"result":{}}`
	sse        = "text/event-stream"
	jsonType   = "application/json"
	maxEventSz = 64 << 10
)

// A call's answer is heard as go-sdk reads it: a JSON body or an SSE
// stream, whatever its line ends, comments, ids, split data and escaping;
// not an event named other than "message", nothing after the call's
// response or a malformed line or event (go-sdk stops there), and no batch
// (which go-sdk's Streamable HTTP client cannot decode either).
func TestHTTPAnswers(t *testing.T) {
	pad := func(n int) string {
		return `{"jsonrpc":"2.0","id":1,"result":{"pad":"` + strings.Repeat("x", n) + `"}}`
	}
	escaped := `{"params":{"progress":1,"progressToken":"a"},"m\u0065thod":"notifications\/progress","jsonrpc":"2.0"}`
	for _, tt := range []struct {
		name, ct, body string
		want           []string
	}{
		{"json", jsonType, answer, []string{"tools/call #1"}},
		{"json, another id", jsonType, `{"jsonrpc":"2.0","id":2,"result":{}}`, nil},
		{"json, past the bound", jsonType, pad(maxEventSz), nil},
		{"sse", sse, "event: message\ndata: " + progress + "\n\ndata: " + answer + "\n\n", []string{"notifications/progress", "tools/call #1"}},
		{"sse, CRLF, comments, ids", sse, ": hi\r\nid: 1\r\ndata: " + progress + "\r\n\r\nid: 2\r\ndata:" + answer + "\r\n\r\n", []string{"notifications/progress", "tools/call #1"}},
		{"sse, data over two lines", sse, "data: " + answer[:24] + "\ndata: " + answer[24:] + "\n\n", []string{"tools/call #1"}},
		{"sse, escaped, members in any order", sse, "data: " + escaped + "\n\ndata: " + answer + "\n\n", []string{"notifications/progress", "tools/call #1"}},
		{"sse, no blank line at the end", sse, "data: " + answer, []string{"tools/call #1"}},
		{"sse, an event of another name", sse, "event: other\ndata: " + progress + "\n\ndata: " + answer + "\n\n", []string{"tools/call #1"}},
		{"sse, a notification after the response", sse, "data: " + answer + "\n\ndata: " + progress + "\n\n", []string{"tools/call #1"}},
		{"sse, a malformed line", sse, "data: " + progress + "\n\nnonsense\ndata: " + answer + "\n\n", []string{"notifications/progress"}},
		{"sse, data that is no message", sse, "data: {\n\ndata: " + answer + "\n\n", nil},
		{"sse, a batch", sse, "data: [" + progress + "," + answer + "]\n\n", nil},
		{"sse, huge", sse, "data: " + pad(maxEventSz-100) + "\n\n", []string{"tools/call #1"}},
		{"sse, past the bound", sse, "data: " + progress + "\n\ndata: " + pad(maxEventSz) + "\n\n", []string{"notifications/progress"}},
	} {
		for _, oneByte := range []bool{false, true} {
			s := newRawServer(t)
			s.answer(tt.ct, tt.body)
			rec := &recorder{}
			c := tapped(t, s, maxEventSz, rec.sub("tools/call", "notifications/progress"))
			exchange(t, c, s.URL, call, oneByte)
			if got := rec.got(); !slices.Equal(got, tt.want) {
				t.Errorf("%s (one byte %v): heard %q, want %q", tt.name, oneByte, got, tt.want)
			}
		}
	}
}

// The messages of a GET stream are heard, responses on it too; a call's
// answer stream that ends without its response is resumed by go-sdk with
// a GET naming its last event id, which is then read up to the response.
func TestHTTPStreams(t *testing.T) {
	s := newRawServer(t)
	rec := &recorder{}
	c := tapped(t, s, maxEventSz, rec.sub("tools/call", "notifications/progress"))

	s.answer(sse, "data: "+progress+"\n\n")
	exchange(t, c, s.URL, "", false)
	s.answer(sse, "id: 5\ndata: "+progress+"\n\n")
	exchange(t, c, s.URL, call, false)
	s.answer(sse, "id: 6\ndata: "+answer+"\n\ndata: "+progress+"\n\n")
	exchange(t, c, s.URL, "", false, "Last-Event-ID", "5")
	want := []string{"notifications/progress", "notifications/progress", "tools/call #1"}
	if got := rec.got(); !slices.Equal(got, want) {
		t.Errorf("heard %q, want %q", got, want)
	}

	// Without event ids there is no resuming: go-sdk ends the call, and
	// an answer under its id is no longer its.
	s.answer(sse, "data: "+progress+"\n\n")
	exchange(t, c, s.URL, call, false)
	s.answer(sse, "data: "+answer+"\n\n")
	exchange(t, c, s.URL, "", false)
	want = append(want, "notifications/progress")
	if got := rec.got(); !slices.Equal(got, want) {
		t.Errorf("heard %q, want %q", got, want)
	}
}

// A mended request is what the server gets, whole; others pass as they
// were written.
func TestHTTPMend(t *testing.T) {
	s := newRawServer(t)
	s.answer(jsonType, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	c := tapped(t, s, maxEventSz, Subscriber{Methods: []string{"prompts/get"}, Mend: func(r *jsonrpc.Request) *jsonrpc.Request {
		cp := *r
		cp.Params = []byte(`{"name":"p","arguments":{}}`)
		return &cp
	}})
	exchange(t, c, s.URL, `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p"}}`, false)
	exchange(t, c, s.URL, call, false)
	s.mu.Lock()
	got := slices.Clone(s.got)
	s.mu.Unlock()
	if len(got) != 2 || !strings.Contains(got[0], `"params":{"name":"p","arguments":{}}`) || got[1] != call {
		t.Errorf("the server got %q", got)
	}
}

// An answer no subscriber awaits is not decoded whole, yet it is told
// apart exactly as go-sdk tells it: the stream's reading ends at it,
// whatever the form of its id, and the request it answers is forgotten.
func TestHTTPAnswerNobodyAwaits(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		want       []string
	}{
		{"answer, then progress", "data: " + answer + "\n\ndata: " + progress + "\n\n", nil},
		{"progress, then answer", "data: " + progress + "\n\ndata: " + answer + "\n\ndata: " + progress + "\n\n", []string{"notifications/progress"}},
		{"an id written 1e0", "data: " + strings.Replace(answer, `"id":1`, `"id":1e0`, 1) + "\n\ndata: " + progress + "\n\n", nil},
		{"an ID of another case", "data: " + strings.Replace(answer, `"id":1`, `"id":1,"ID":2`, 1) + "\n\ndata: " + progress + "\n\n", nil},
		{"another id's answer", "data: " + strings.Replace(answer, `"id":1`, `"id":2`, 1) + "\n\ndata: " + progress + "\n\n", []string{"notifications/progress"}},
		{"no JSON-RPC 2.0", "data: " + strings.Replace(answer, `"2.0"`, `"1.0"`, 1) + "\n\ndata: " + progress + "\n\n", nil},
	} {
		s := newRawServer(t)
		s.answer(sse, tt.body)
		rec := &recorder{}
		sub := rec.sub("tools/call", "notifications/progress")
		sub.Awaits = func(*jsonrpc.Request) bool { return false }
		exchange(t, tapped(t, s, maxEventSz, sub), s.URL, call, false)
		if got := rec.got(); !slices.Equal(got, tt.want) {
			t.Errorf("%s: heard %q, want %q", tt.name, got, tt.want)
		}
	}
}
