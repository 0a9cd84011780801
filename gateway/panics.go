package gateway

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/telemetry"
)

// The panic net: a panic while serving one request (a middleware, a
// handler, a plugin's value the gateway converts) answers that request with
// an error, is logged once with its stack and counted
// (dsh_panics_total{where}), and the process goes on serving everyone else.
// go-sdk runs each request's handler on a goroutine of its own without a
// recover, so one such panic would otherwise end every session, call and
// buffered span of the process. (A tool's own panic is the tool registry's
// to recover: it answers isError, counted as where="tool".)

// panicMessage is what a client is told: the panic's value stays in the
// log, since it may carry what a caller must not read.
const panicMessage = "internal error: the gateway failed while serving %s (a bug, logged with its stack on the host); the gateway goes on, retry or report it"

// panicked logs a recovered panic once, with its stack, and counts it.
func (g *Gateway) panicked(where, what string, p any) {
	g.logger.Error("gateway: panic while serving one request; answered with an error", "where", where, "request", what, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	g.metrics.panicked(where)
}

// panicError logs and counts a panic recovered while serving method, and
// returns the request's answer: a JSON-RPC internal error.
func (g *Gateway) panicError(method string, p any) error {
	g.panicked(telemetry.PanicGateway, method, p)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(panicMessage, method)}
}

// recoverRequests is the outermost receiving middleware: a request whose
// handling panics is answered with a JSON-RPC internal error.
func (g *Gateway) recoverRequests(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		defer func() {
			if p := recover(); p != nil {
				res, err = nil, g.panicError(method, p)
			}
		}()
		return next(ctx, method, req)
	}
}

// recoverSending is recoverRequests for the sending middleware (a
// notification or a request to a client): the send fails, the sender goes
// on.
func (g *Gateway) recoverSending(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		defer func() {
			if p := recover(); p != nil {
				g.panicked(telemetry.PanicGateway, "sending "+method, p)
				res, err = nil, fmt.Errorf(panicMessage, "sending "+method)
			}
		}()
		return next(ctx, method, req)
	}
}

// recoverHTTP answers a request whose HTTP handling panics with 500 when
// nothing of its answer is sent yet, and cuts its connection otherwise
// (http.ErrAbortHandler: net/http closes it quietly). net/http would
// recover it too, but with a log line of its own, no count and no answer.
//
// It puts the sentWriter around the request's ResponseWriter, with budget
// (nil: none); nested in another recoverHTTP, it only sets the budget.
func (g *Gateway) recoverHTTP(next http.Handler, budget *answerBudget) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sw, ok := w.(*sentWriter); ok {
			if sw.budget == nil {
				sw.budget = budget
			}
			next.ServeHTTP(w, r)
			return
		}
		tw := &sentWriter{ResponseWriter: w, budget: budget}
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler { //nolint:errorlint // net/http's own sentinel, compared as it does
				panic(p)
			}
			g.panicked(telemetry.PanicHTTP, r.Method+" "+r.URL.Path, p)
			if tw.sent() {
				panic(http.ErrAbortHandler)
			}
			h := w.Header()
			for k := range h {
				delete(h, k)
			}
			h.Set("Connection", "close")
			http.Error(w, fmt.Sprintf(panicMessage, r.Method+" "+r.URL.Path), http.StatusInternalServerError)
		}()
		next.ServeHTTP(tw, r)
	})
}
