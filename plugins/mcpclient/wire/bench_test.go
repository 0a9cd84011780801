package wire

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/remote"
)

// cannedSSE answers every request with one SSE event: a tools/call's
// result, as the gateway's upstream sends it under load.
type cannedSSE struct{}

func (cannedSSE) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       io.NopCloser(strings.NewReader("event: message\nid: 1_0\ndata: " + `{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"5"}],"structuredContent":{"sum":5}}}` + "\n\n")),
	}, nil
}

// BenchmarkTapHTTP is what the tap adds to one Streamable HTTP call: the
// POST of a tools/call (decoded, noted) and its SSE answer (read, decoded,
// handed to the subscribers mcp-client has), against the same exchange
// with no tap.
func BenchmarkTapHTTP(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"_meta":{"progressToken":"dsh-42"},"name":"add","arguments":{"a":2,"b":3}}}`)
	for _, tapped := range []bool{false, true} {
		name := "bare"
		if tapped {
			name = "tap"
		}
		b.Run(name, func(b *testing.B) {
			st := remote.Streamable(&http.Client{Transport: cannedSSE{}}, "http://127.0.0.1/mcp")
			if tapped {
				noop := func(Message) {}
				New(
					Subscriber{Methods: []string{"tools/call", "notifications/progress"}, Received: noop},
					Subscriber{Methods: []string{"tools/list"}, Received: noop},
					Subscriber{Methods: []string{"prompts/get"}, Mend: mendNothing},
				).Wrap(st)
			}
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(body))
				resp, err := st.HTTPClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

func mendNothing(*jsonrpc.Request) *jsonrpc.Request { return nil }

// BenchmarkDecode is what decoding one small message costs: go-sdk's
// jsonrpc.DecodeMessage (the tap's for a server's message) against
// encoding/json (the tap's for go-sdk's own POST).
func BenchmarkDecode(b *testing.B) {
	for _, m := range []struct{ name, msg string }{
		{"request", `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"_meta":{"progressToken":"dsh-42"},"name":"add","arguments":{"a":2,"b":3}}}`},
		{"response", `{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"5"}],"structuredContent":{"sum":5}}}`},
	} {
		b.Run(m.name+"/go-sdk", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := jsonrpc.DecodeMessage([]byte(m.msg)); err != nil {
					b.Fatal(err)
				}
			}
		})
		if m.name == "request" {
			b.Run(m.name+"/encoding-json", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, ok := decodeSent([]byte(m.msg)); !ok {
						b.Fatal("not decoded")
					}
				}
			})
		}
	}
}
