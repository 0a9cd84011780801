package toolset

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// BenchmarkListingRequest is what the look for tools/list answers costs
// every POST of a Streamable HTTP server: a tools/call body, searched for
// the method's name (as listingRequest does) or decoded whole.
func BenchmarkListingRequest(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},"_meta":{"progressToken":"dsh-42"}}}`)
	post := func() *http.Request {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(body))
		return req
	}
	b.Run("search", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, ok := listingRequest(post()); ok {
				b.Fatal("a call taken for a listing")
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			req := post()
			rc, _ := req.GetBody()
			buf := make([]byte, req.ContentLength)
			rc.Read(buf)
			if _, err := jsonrpc.DecodeMessage(buf); err != nil {
				b.Fatal(err)
			}
		}
	})
}
