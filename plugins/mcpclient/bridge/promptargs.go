package bridge

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/wire"
)

// Prompt arguments on the wire. go-sdk's GetPromptParams drops an empty
// arguments map (omitempty), so a prompt got without arguments is sent
// with no "arguments" at all; servers that validate their params against
// a schema (zod, in every TypeScript server) refuse that. The params
// struct cannot say otherwise, and a sending middleware that swapped it
// for a type of its own would break go-sdk's 2026-07-28 retries, which
// accept only GetPromptParams. So the request is mended below go-sdk, on
// the wire (docs/upstream.md).

// PromptArguments is the subscriber to the wire (package wire) that has
// every prompts/get carry an arguments object, {} when there are none.
func PromptArguments() wire.Subscriber {
	return wire.Subscriber{Methods: []string{"prompts/get"}, Mend: mendPromptArguments}
}

func mendPromptArguments(req *jsonrpc.Request) *jsonrpc.Request {
	params, ok := withArguments(req.Params)
	if !ok {
		return nil
	}
	cp := *req
	cp.Params = params
	return &cp
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
