package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/plugins/mcpclient/calls"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/sampling"
	"github.com/dsh-host/dsh-host/services/tools"
)

// ReasonKey is where a declined or cancelled elicitation's reason
// goes in the result's _meta: the spec's result has no field for it.
const ReasonKey = "dsh-host/reason"

// Questions answers a server's requests back during a call: elicitation
// through the elicitation service, sampling through the sampler of the
// call's caller. It holds no state of its own.
type Questions struct {
	// Server is the serverName, Label the instance's name in logs.
	Server, Label string
	Log           *slog.Logger
	// Elicit asks a person; nil declines every elicitation.
	Elicit *elicit.Service
	// Calls are the calls in flight a question may belong to.
	Calls *calls.Table
}

// ElicitCapabilities are what the host declares when it has the
// elicitation service: forms and URLs.
func ElicitCapabilities() *mcp.ElicitationCapabilities {
	return &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}
}

// OnElicit answers a server's elicitation through the elicitation service.
// It serves both revisions: a 2026-07-28 round trip reaches it from go-sdk's
// retry middleware with the call's own context; a 2025-11-25
// elicitation/create comes with a context of its own, and is the call's
// when exactly one call in flight waits for no answer already
// (calls.Table.Asking). While the person answers, that call's
// silence timer waits, and the question ends with the call. When several
// calls are in flight, the question cannot be told apart: every one's
// silence timer waits, the question ends once all of them have ended, and
// the installed answerer is asked (no call's own).
func (q *Questions) OnElicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p := req.Params
	var inFlight []*calls.Call
	if call := calls.FromContext(ctx); call != nil {
		inFlight = []*calls.Call{call}
	} else {
		inFlight = q.Calls.Asking()
	}
	askCtx := ctx
	var call *calls.Call
	if len(inFlight) == 1 {
		// The caller's values and answerer, with the request's own
		// cancellation.
		call = inFlight[0]
		askCtx = mergeValues(ctx, call.Caller())
	}
	answerer := channelsOf(ctx, call).CallerAnswerer()
	if len(inFlight) > 0 {
		var cancel context.CancelFunc
		askCtx, cancel = context.WithCancel(askCtx)
		defer cancel()
		left := int32(len(inFlight))
		for _, call := range inFlight {
			release := call.Hold()
			defer release()
			stop := context.AfterFunc(call.Ended(), func() {
				if atomic.AddInt32(&left, -1) == 0 {
					cancel()
				}
			})
			defer stop()
		}
	}
	mode := p.Mode
	if mode == "" {
		mode = elicit.ModeForm
		if p.URL != "" {
			mode = elicit.ModeURL
		}
	}
	r := elicit.Request{Server: q.Server, Mode: mode, Message: p.Message, URL: p.URL, ElicitationID: p.ElicitationID, Schema: p.RequestedSchema}
	if mode == elicit.ModeForm {
		form, err := elicit.ParseForm(p.RequestedSchema)
		if err != nil {
			q.Log.Warn(q.Label+": the server asked for a form the host cannot show; declined", "err", err)
			return declined(elicit.Result{Action: elicit.Decline, Reason: "the form cannot be shown: " + err.Error()}), nil
		}
		r.Form = form
	}
	res := q.Elicit.AskFor(askCtx, answerer, r)
	if askCtx.Err() != nil {
		return nil, askCtx.Err()
	}
	if res.Reason != "" {
		q.Log.Warn(q.Label+": elicitation not accepted", "action", res.Action, "message", p.Message, "reason", res.Reason)
	}
	if res.Action != elicit.Accept {
		return declined(res), nil
	}
	if mode == elicit.ModeURL {
		return &mcp.ElicitResult{Action: elicit.Accept}, nil
	}
	if err := r.Form.Check(res.Content); err != nil {
		// go-sdk would refuse it against the schema anyway; say why here.
		return nil, errors.New("the answer does not fit the form: " + err.Error())
	}
	return &mcp.ElicitResult{Action: elicit.Accept, Content: res.Content}, nil
}

func declined(res elicit.Result) *mcp.ElicitResult {
	out := &mcp.ElicitResult{Action: res.Action}
	if res.Reason != "" {
		out.Meta = mcp.Meta{ReasonKey: res.Reason}
	}
	return out
}

// mergeValues is ctx (its deadline and cancellation) with the values of
// values: lookups try ctx first, then values.
func mergeValues(ctx, values context.Context) context.Context {
	return valuesCtx{Context: ctx, values: values}
}

type valuesCtx struct {
	context.Context
	values context.Context
}

func (v valuesCtx) Value(key any) any {
	if x := v.Context.Value(key); x != nil {
		return x
	}
	return v.values.Value(key)
}

// URLRequired handles a tools/call refused with URLElicitationRequired
// (-32042, 2025-11-25): the server names pages the person must open first.
// Each goes to the elicitation service as a URL request; once every one is
// accepted, the call is sent again, once. Otherwise the call fails with the
// server's error and what became of the pages. It is a sending middleware,
// so that the retry passes through go-sdk's round trip handling again.
func (q *Questions) URLRequired(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		var rpcErr *jsonrpc.Error
		if err == nil || method != "tools/call" || !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeURLElicitationRequired {
			return res, err
		}
		var data struct {
			Elicitations []*mcp.ElicitParams `json:"elicitations"`
		}
		if len(rpcErr.Data) == 0 || json.Unmarshal(rpcErr.Data, &data) != nil || len(data.Elicitations) == 0 {
			return res, err
		}
		askCtx := ctx
		call := calls.FromContext(ctx)
		if call != nil {
			release := call.Hold()
			defer release()
		}
		answerer := channelsOf(ctx, call).CallerAnswerer()
		for _, p := range data.Elicitations {
			if p == nil || p.URL == "" {
				return res, err
			}
			r := q.Elicit.AskFor(askCtx, answerer, elicit.Request{Server: q.Server, Mode: elicit.ModeURL, Message: p.Message, URL: p.URL, ElicitationID: p.ElicitationID})
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if r.Action != elicit.Accept {
				why := r.Action
				if r.Reason != "" {
					why += ": " + r.Reason
				}
				q.Log.Warn(q.Label+": a page the server requires was not opened", "url", p.URL, "action", r.Action, "reason", r.Reason)
				return nil, fmt.Errorf("the server requires opening %s first, and the request was not accepted (%s): %w", p.URL, why, err)
			}
		}
		return next(ctx, method, req)
	}
}

// OnSample answers a server's sampling/createMessage through the sampler of
// the call it belongs to (its tools.Channels.Sampler: the gateway
// forwarding to its client, the agent). Like OnElicit, a 2026-07-28 round trip comes with the call's
// own context and a 2025-11-25 request is the call's when exactly one in
// flight waits for no answer already (calls.Table.Asking); while the answer is awaited, the call's silence timer waits.
// Without a sampler the request fails with sampling.ErrNoSampler.
func (q *Questions) OnSample(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
	call := calls.FromContext(ctx)
	if call == nil {
		if asking := q.Calls.Asking(); len(asking) == 1 {
			call = asking[0]
		}
	}
	askCtx := ctx
	if call != nil {
		release := call.Hold()
		defer release()
		askCtx = mergeValues(ctx, call.Caller())
	}
	s := channelsOf(ctx, call).CallerSampler()
	if s == nil {
		q.Log.Warn(q.Label+": a sampling request was refused: nobody can answer it here", "err", sampling.ErrNoSampler)
		return nil, sampling.ErrNoSampler
	}
	return s(askCtx, q.Server, req.Params)
}

// CallerRoots answers a server's roots/list (2025-11-25) made during a
// call with the roots of the call's caller, when it has some (its Roots channel:
// the gateway forwarding to a client that declared roots); other requests,
// and roots/list with no such caller, go on to go-sdk's answer, the
// entry's own roots. It is a receiving middleware.
func (q *Questions) CallerRoots(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "roots/list" {
			return next(ctx, method, req)
		}
		call := calls.FromContext(ctx)
		if call == nil {
			if asking := q.Calls.Asking(); len(asking) == 1 {
				call = asking[0]
			}
		}
		list := channelsOf(ctx, call).CallerRoots()
		if list == nil {
			return next(ctx, method, req)
		}
		askCtx := ctx
		if call != nil {
			release := call.Hold()
			defer release()
			askCtx = mergeValues(ctx, call.Caller())
		}
		rs, err := list(askCtx)
		if err != nil {
			return nil, fmt.Errorf("the caller's roots: %w", err)
		}
		if rs == nil {
			rs = []*mcp.Root{}
		}
		return &mcp.ListRootsResult{Roots: rs}, nil
	}
}

// channelsOf returns the back-channels of the caller a server's request
// during call (nil: none known) is for: the tool call's own, else those
// of the bridge's own request that is not a tool call (a resources/read, a
// prompts/get: see requestContext) ctx derives from.
func channelsOf(ctx context.Context, call *calls.Call) *tools.Channels {
	if call != nil && call.Channels() != nil {
		return call.Channels()
	}
	ch, _ := ctx.Value(requestKey{}).(*tools.Channels)
	return ch
}

// requestKey marks the context of a request the bridge sends that is not a
// tool call with the back-channels its caller handed over (Read's and
// GetPrompt's parameter). It never leaves the bridge: it is there only
// because a 2026-07-28 server's question during the request comes back
// from go-sdk's round trip with that request's context, the one thing
// that links them, as calls.FromContext does for a tool call.
type requestKey struct{}

// requestContext is ctx for a request made for a caller with channels ch.
func requestContext(ctx context.Context, ch *tools.Channels) context.Context {
	if ch == nil {
		return ctx
	}
	return context.WithValue(ctx, requestKey{}, ch)
}
