package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Server-to-client requests. An MCP server that asks something while
// serving one of a client's calls (an elicitation, form or URL; a sampling
// request) has its question passed on to that client, in the style the
// client speaks:
//
//   - up to 2025-11-25, the gateway sends the request to the client's
//     session (elicitation/create, sampling/createMessage) and hands the
//     answer back;
//   - from 2026-07-28, the client's tools/call (prompts/get,
//     resources/read) returns input_required with the question, and the
//     client's retry (with the answer and the requestState) resumes the
//     same request, still waiting upstream; a retry never comes within
//     parkTimeout cancels it.
//
// A client that did not declare the capability gets nothing: the server
// sees a decline (elicitation) or an error (sampling) saying why.

// parkTimeout bounds how long a call waits for a 2026-07-28 client to
// retry with its answer; then the call is cancelled.
const parkTimeout = 10 * time.Minute

// forwardRequests returns the back-channels that send a request's
// elicitation and sampling requests to ss's client directly (the
// 2025-11-25 style); nil without a session.
func forwardRequests(ss *mcp.ServerSession) *tools.Channels {
	if ss == nil {
		return nil
	}
	ask := func(ctx context.Context, ir mcp.InputRequest) (mcp.InputResponse, error) {
		if newProtocol(ss) {
			return nil, errors.New("the gateway's client speaks MCP 2026-07-28, which takes questions only as an input_required result, and this request cannot carry one")
		}
		switch p := ir.(type) {
		case *mcp.ElicitParams:
			return ss.Elicit(ctx, p)
		case *mcp.CreateMessageWithToolsParams:
			return ss.CreateMessageWithTools(ctx, p)
		case *mcp.ListRootsParams:
			//lint:ignore SA1019 roots stay functional through their deprecation window.
			return ss.ListRoots(ctx, p)
		}
		return nil, fmt.Errorf("unsupported request %T", ir)
	}
	return questions(ss, ask)
}

// questions returns the back-channels that pass questions to ss's client
// with ask, when it declared the capability: the elicitation answerer, its
// roots and the sampler. A tool call (callTool) hands them on in its Call;
// a prompts/get or resources/read to the resources service's GetPrompt or
// ReadFrom.
func questions(ss *mcp.ServerSession, ask func(context.Context, mcp.InputRequest) (mcp.InputResponse, error)) *tools.Channels {
	ch := &tools.Channels{}
	ch.Answerer = elicit.AnswerFunc(func(ctx context.Context, req elicit.Request) (elicit.Result, error) {
		if why := elicitRefusal(ss, req.Mode); why != "" {
			return elicit.Result{Action: elicit.Decline, Reason: why}, nil
		}
		resp, err := ask(ctx, &mcp.ElicitParams{Mode: req.Mode, Message: req.Message, RequestedSchema: req.Schema, URL: req.URL, ElicitationID: req.ElicitationID})
		if err != nil {
			return elicit.Result{}, fmt.Errorf("the gateway's client: %w", err)
		}
		res, ok := resp.(*mcp.ElicitResult)
		if !ok || res == nil {
			return elicit.Result{}, fmt.Errorf("the gateway's client answered an elicitation with %T", resp)
		}
		return elicit.Result{Action: res.Action, Content: res.Content}, nil
	})
	if caps := clientCaps(ss); caps != nil && caps.RootsV2 != nil {
		// The server's roots/list during the call gets this client's roots.
		ch.Roots = func(ctx context.Context) ([]*mcp.Root, error) {
			resp, err := ask(ctx, &mcp.ListRootsParams{})
			if err != nil {
				return nil, fmt.Errorf("the gateway's client: %w", err)
			}
			res, ok := resp.(*mcp.ListRootsResult)
			if !ok || res == nil {
				return nil, fmt.Errorf("the gateway's client answered roots/list with %T", resp)
			}
			return res.Roots, nil
		}
	}
	ch.Sampler = func(ctx context.Context, _ string, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
		if caps := clientCaps(ss); caps == nil || caps.Sampling == nil {
			return nil, fmt.Errorf("%s did not declare the sampling capability, so the gateway cannot pass the request on", clientName(ss))
		}
		resp, err := ask(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("the gateway's client: %w", err)
		}
		res, ok := resp.(*mcp.CreateMessageWithToolsResult)
		if !ok || res == nil {
			return nil, fmt.Errorf("the gateway's client answered a sampling request with %T", resp)
		}
		return res, nil
	}
	return ch
}

func clientCaps(ss *mcp.ServerSession) *mcp.ClientCapabilities {
	if p := ss.InitializeParams(); p != nil {
		return p.Capabilities
	}
	return nil
}

func clientName(ss *mcp.ServerSession) string {
	if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil && p.ClientInfo.Name != "" {
		return "the gateway's client (" + p.ClientInfo.Name + ")"
	}
	return "the gateway's client"
}

// elicitRefusal says why ss's client cannot be asked in mode, or "".
func elicitRefusal(ss *mcp.ServerSession, mode string) string {
	caps := clientCaps(ss)
	if caps == nil || caps.Elicitation == nil {
		return clientName(ss) + " did not declare the elicitation capability, so it cannot be asked (a server's question or the policy's approval)"
	}
	e := caps.Elicitation
	switch mode {
	case elicit.ModeURL:
		if e.URL == nil {
			return clientName(ss) + " did not declare URL-mode elicitation, so nobody can open the server's page"
		}
	default:
		// A client declaring neither mode takes forms, as go-sdk has it.
		if e.Form == nil && e.URL != nil {
			return clientName(ss) + " declared URL-mode elicitation only, so nobody can fill the server's form"
		}
	}
	return ""
}

// needsRoundTrip reports whether ss's requests that may ask questions need the
// round trip: a 2026-07-28 client that declared elicitation, sampling or
// roots. A client that declared none has every question declined before it is
// asked, so its requests run directly, at no extra cost.
func needsRoundTrip(ss *mcp.ServerSession) bool {
	if ss == nil || !newProtocol(ss) {
		return false
	}
	caps := clientCaps(ss)
	return caps != nil && (caps.Elicitation != nil || caps.Sampling != nil || caps.RootsV2 != nil)
}

func newProtocol(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= "2026-07-28"
}

// forwarding makes a tool's handler of h, handing h the back-channels that
// pass its server's questions to the calling client in the client's style.
func (g *Gateway) forwarding(h func(context.Context, *mcp.CallToolRequest, *tools.Channels) (*mcp.CallToolResult, error)) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !needsRoundTrip(req.Session) {
			return h(ctx, req, forwardRequests(req.Session))
		}
		res, ask, state, err := g.trips.roundTrip(g.ctx, ctx, "tools/call", req.Session, req.Params.RequestState, req.Params.InputResponses,
			func(ctx context.Context, ch *tools.Channels) (any, error) { return h(ctx, req, ch) })
		if ask != nil {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{inputKey: ask}, RequestState: state}, nil
		}
		r, _ := res.(*mcp.CallToolResult)
		return r, err
	}
}

// roundTrips holds the requests waiting for a 2026-07-28 client's answer,
// by requestState.
type roundTrips struct {
	mu     sync.Mutex
	parked map[string]*trip
	// onPanic, when set, turns a run's panic into its request's error
	// (Gateway.panicError).
	onPanic func(method string, p any) error
}

// trip is one request (a tool call, a prompts/get, a resources/read) that
// may ask its client questions across several requests of the client.
type trip struct {
	method string
	asks   chan *question
	done   chan tripOutcome // buffered: the request never waits to end
	cancel context.CancelFunc
	// asked is the question the client is answering (set while parked).
	asked *question
	timer *time.Timer
}

type question struct {
	params mcp.InputRequest
	answer chan answer // buffered
}

type answer struct {
	resp mcp.InputResponse
	err  error
}

type tripOutcome struct {
	res any
	err error
}

// inputKey is the id of the one question an input_required result asks.
const inputKey = "dsh-host"

// roundTrip serves one request of a 2026-07-28 client to method whose
// handler (run) may ask the client questions. Without a requestState it
// starts run, whose context outlives the request since it may span
// several; with one it resumes the parked run with the client's answer
// (responses). Either way it returns run's result, or its next question
// (ask) with the state the client's retry must carry. run gets the
// back-channels that ask the client. closing ends run with the gateway.
func (rt *roundTrips) roundTrip(closing, ctx context.Context, method string, ss *mcp.ServerSession, state string, responses mcp.InputResponseMap,
	run func(context.Context, *tools.Channels) (any, error)) (res any, ask mcp.InputRequest, next string, err error) {
	if state != "" {
		t := rt.take(state)
		if t == nil || t.method != method {
			if t != nil {
				t.cancel()
			}
			return nil, nil, "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the requestState is unknown or expired: send the request again without it"}
		}
		a := answer{resp: responses[inputKey]}
		if a.resp == nil {
			a.err = fmt.Errorf("the client's retry has no inputResponses[%q]", inputKey)
		}
		t.asked.answer <- a
		t.asked = nil
		return rt.wait(ctx, t)
	}
	t := &trip{method: method, asks: make(chan *question), done: make(chan tripOutcome, 1)}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	t.cancel = cancel
	stop := context.AfterFunc(closing, cancel)
	ch := questions(ss, t.ask)
	go func() {
		defer stop()
		defer cancel()
		defer func() {
			// Off the request's goroutine, out of the panic net's
			// reach: recovered here, answered as the net does.
			if p := recover(); p != nil {
				if rt.onPanic == nil {
					panic(p)
				}
				t.done <- tripOutcome{nil, rt.onPanic(method, p)}
			}
		}()
		res, err := run(runCtx, ch)
		t.done <- tripOutcome{res, err}
	}()
	return rt.wait(ctx, t)
}

// ask is the trip's way to its client: the question goes out as the
// result of the client's pending request, the answer comes with its retry.
func (t *trip) ask(ctx context.Context, ir mcp.InputRequest) (mcp.InputResponse, error) {
	q := &question{params: ir, answer: make(chan answer, 1)}
	select {
	case t.asks <- q:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case a := <-q.answer:
		return a.resp, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// wait returns t's result, or parks t and returns its question. The
// client's cancellation while waiting cancels the request.
func (rt *roundTrips) wait(ctx context.Context, t *trip) (res any, ask mcp.InputRequest, state string, err error) {
	select {
	case o := <-t.done:
		return o.res, nil, "", o.err
	case q := <-t.asks:
		t.asked = q
		state, err := rt.park(t)
		if err != nil {
			t.cancel()
			return nil, nil, "", err
		}
		return nil, q.params, state, nil
	case <-ctx.Done():
		t.cancel()
		return nil, nil, "", ctx.Err()
	}
}

// park keeps t under a new unguessable requestState until the client's
// retry takes it, or parkTimeout cancels it.
func (rt *roundTrips) park(t *trip) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	state := hex.EncodeToString(b[:])
	rt.mu.Lock()
	if rt.parked == nil {
		rt.parked = map[string]*trip{}
	}
	rt.parked[state] = t
	t.timer = time.AfterFunc(parkTimeout, func() {
		if rt.take(state) != nil {
			t.cancel()
		}
	})
	rt.mu.Unlock()
	return state, nil
}

func (rt *roundTrips) take(state string) *trip {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	t := rt.parked[state]
	if t != nil {
		delete(rt.parked, state)
		t.timer.Stop()
	}
	return t
}

// closeAll cancels every parked call (the gateway closes).
func (rt *roundTrips) closeAll() {
	rt.mu.Lock()
	parked := rt.parked
	rt.parked = nil
	rt.mu.Unlock()
	for _, t := range parked {
		t.timer.Stop()
		t.cancel()
	}
}
