package mcpclient

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/elicit"
)

// elicitReasonKey is where a declined or cancelled elicitation's reason
// goes in the result's _meta: the spec's result has no field for it.
const elicitReasonKey = "dsh-host/reason"

// elicitCapabilities are what the host declares when it has the
// elicitation service: forms and URLs.
func elicitCapabilities() *mcp.ElicitationCapabilities {
	return &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}
}

// onElicit answers a server's elicitation through the elicitation service.
// It serves both revisions: a 2026-07-28 round trip reaches it from go-sdk's
// retry middleware with the call's own context; a 2025-11-25
// elicitation/create comes with a context of its own, and is the call's
// when exactly one call is in flight. While the person answers, that call's
// silence timer waits.
func (c *client) onElicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p := req.Params
	call, _ := ctx.Value(inflightKey{}).(*inflight)
	if call == nil {
		call = c.onlyCall()
	}
	askCtx := ctx
	if call != nil {
		release := call.hold()
		defer release()
		// The caller's values (its answerer), with the request's own
		// cancellation.
		askCtx = mergeValues(ctx, call.ctx)
	}
	mode := p.Mode
	if mode == "" {
		mode = elicit.ModeForm
		if p.URL != "" {
			mode = elicit.ModeURL
		}
	}
	r := elicit.Request{Server: c.cfg.ServerName, Mode: mode, Message: p.Message, URL: p.URL, ElicitationID: p.ElicitationID}
	if mode == elicit.ModeForm {
		form, err := elicit.ParseForm(p.RequestedSchema)
		if err != nil {
			c.log.Warn(c.label+": the server asked for a form the host cannot show; declined", "err", err)
			return declined(elicit.Result{Action: elicit.Decline, Reason: "the form cannot be shown: " + err.Error()}), nil
		}
		r.Form = form
	}
	res := c.opt.elicit.Ask(askCtx, r)
	if askCtx.Err() != nil {
		return nil, askCtx.Err()
	}
	if res.Reason != "" {
		c.log.Warn(c.label+": elicitation not accepted", "action", res.Action, "message", p.Message, "reason", res.Reason)
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
		out.Meta = mcp.Meta{elicitReasonKey: res.Reason}
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
