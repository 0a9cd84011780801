package remote

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Streamable returns the Streamable HTTP transport of one connection
// attempt over client's connections, seeing how the attempt's first POST
// was answered (Explain).
func Streamable(client *http.Client, endpoint string) *mcp.StreamableClientTransport {
	first := &http.Client{Transport: &firstPOST{base: client.Transport}}
	return &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: first}
}

// Peek has wrap see every request of tr, a transport Streamable made,
// below the first-POST check; other transports are left as they are.
func Peek(tr mcp.Transport, wrap func(http.RoundTripper) http.RoundTripper) {
	st, ok := tr.(*mcp.StreamableClientTransport)
	if !ok || st.HTTPClient == nil {
		return
	}
	if f, ok := st.HTTPClient.Transport.(*firstPOST); ok {
		f.base = wrap(f.base)
	}
}

// SSE returns the legacy HTTP+SSE transport of one connection attempt.
func SSE(client *http.Client, endpoint string) mcp.Transport {
	return &sseTransport{mcp.SSEClientTransport{Endpoint: endpoint, HTTPClient: client}}
}

// sseTransport is go-sdk's legacy SSE client with a stream that outlives
// Connect's context: go-sdk ties the GET stream, for the connection's
// whole life, to the context given to Connect, which here is only the
// attempt's (startupTimeoutMs). The stream ends when the connection is
// closed, or when ctx ends before Connect returned.
type sseTransport struct {
	mcp.SSEClientTransport
}

func (t *sseTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	conn, err := t.SSEClientTransport.Connect(life)
	if !stop() && err == nil {
		// ctx ended while connecting: the stream is being torn down.
		conn.Close()
		err = context.Cause(ctx)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return &sseConn{Connection: conn, cancel: cancel}, nil
}

type sseConn struct {
	mcp.Connection
	cancel context.CancelFunc
}

func (c *sseConn) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}

// firstPOST remembers the status of the first POST's answer: a Streamable
// HTTP endpoint that answers 400, 404 or 405 to it may be a legacy
// HTTP+SSE server.
type firstPOST struct {
	base   http.RoundTripper
	status atomic.Int32
}

func (f *firstPOST) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := f.base.RoundTrip(req)
	if err == nil && req.Method == http.MethodPost {
		f.status.CompareAndSwap(0, int32(resp.StatusCode))
	}
	return resp, err
}

// Explain adds to err, the error of a failed connect over tr, what the
// first POST's answer tells: a Streamable HTTP endpoint that answered it
// with 404 or 405 may speak only the legacy HTTP+SSE transport, and one
// that answered 400 may be such a server's SSE endpoint itself.
func Explain(tr mcp.Transport, err error) error {
	t, ok := tr.(*mcp.StreamableClientTransport)
	if !ok || t.HTTPClient == nil {
		return err
	}
	f, ok := t.HTTPClient.Transport.(*firstPOST)
	if !ok {
		return err
	}
	switch st := int(f.status.Load()); st {
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return fmt.Errorf("the server answered %d %s to the first POST: it may speak only the legacy HTTP+SSE transport; "+
			"if so, set transport: sse (with the URL of its SSE endpoint, often .../sse) (%w)", st, http.StatusText(st), err)
	case http.StatusBadRequest:
		// A legacy server's SSE endpoint takes POSTs only with the
		// session id its stream hands out, and refuses one without.
		return fmt.Errorf("the server answered 400 Bad Request to the first POST: if the URL is a legacy HTTP+SSE endpoint "+
			"(often .../sse), which refuses a POST without its session id, set transport: sse (%w)", err)
	}
	return err
}
