package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/remote"
)

// Prompt arguments on the wire. go-sdk's GetPromptParams drops an empty
// arguments map (omitempty), so a prompt got without arguments is sent
// with no "arguments" at all; servers that validate their params against
// a schema (zod, in every TypeScript server) refuse that. The params
// struct cannot say otherwise, and a sending middleware that swapped it
// for a type of its own would break go-sdk's 2026-07-28 retries, which
// accept only GetPromptParams. So the request is mended below go-sdk:
// a wrapped connection for stdio and legacy SSE, the HTTP client for
// Streamable HTTP (whose connection go-sdk does not let a wrapper stand
// in for).

// PromptArguments wraps t so that every prompts/get it sends carries an
// arguments object, {} when there are none.
func PromptArguments(t mcp.Transport) mcp.Transport {
	if _, ok := t.(*mcp.StreamableClientTransport); ok {
		remote.Peek(t, func(base http.RoundTripper) http.RoundTripper { return promptArgsHTTP{base} })
		return t
	}
	return promptArgsTransport{t}
}

type promptArgsTransport struct{ mcp.Transport }

func (t promptArgsTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return promptArgsConn{conn}, nil
}

type promptArgsConn struct{ mcp.Connection }

func (c promptArgsConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "prompts/get" {
		if params, ok := withArguments(req.Params); ok {
			cp := *req
			cp.Params = params
			msg = &cp
		}
	}
	return c.Connection.Write(ctx, msg)
}

// withArguments returns params with "arguments": {} added, and whether
// it had none (absent or null).
func withArguments(params json.RawMessage) (json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(params, &fields) != nil {
		return nil, false
	}
	if a, ok := fields["arguments"]; ok && !bytes.Equal(bytes.TrimSpace(a), []byte("null")) {
		return nil, false
	}
	if fields == nil {
		fields = map[string]json.RawMessage{}
	}
	fields["arguments"] = json.RawMessage("{}")
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, false
	}
	return out, true
}

type promptArgsHTTP struct{ base http.RoundTripper }

// maxMendedBody bounds the POST bodies read here: a prompts/get is small.
const maxMendedBody = 64 << 10

func (p promptArgsHTTP) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.GetBody == nil || req.ContentLength <= 0 || req.ContentLength > maxMendedBody {
		return p.base.RoundTrip(req)
	}
	body, err := req.GetBody()
	if err != nil {
		return p.base.RoundTrip(req)
	}
	b, err := io.ReadAll(body)
	body.Close()
	// Every POST passes here: only one naming the method is decoded.
	if err != nil || !bytes.Contains(b, []byte(`"prompts/get"`)) {
		return p.base.RoundTrip(req)
	}
	msg, err := jsonrpc.DecodeMessage(b)
	r, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok || r.Method != "prompts/get" {
		return p.base.RoundTrip(req)
	}
	params, ok := withArguments(r.Params)
	if !ok {
		return p.base.RoundTrip(req)
	}
	r.Params = params
	mended, err := jsonrpc.EncodeMessage(r)
	if err != nil {
		return p.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Body = io.NopCloser(bytes.NewReader(mended))
	req.ContentLength = int64(len(mended))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(mended)), nil }
	return p.base.RoundTrip(req)
}
