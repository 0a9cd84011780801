// Package elicit is the elicitation service: an MCP server that needs
// something from the person during a call (a form to fill, a URL to open)
// asks through it, and whoever can answer does.
//
// # Answerers
//
// A front end installs an [Answerer] on the service when a person can
// answer there: the console asks on the terminal, a one-shot command given
// --elicit defaults accepts with the form's defaults. A caller that makes
// its own calls and can answer for them (the gateway forwarding to its
// client, a one-shot command) sets one as the call's
// tools.Channels.Answerer, which whoever asks for the call passes to
// [Service.AskFor]; it wins over the installed one. Where nobody can answer, the request is
// declined with a reason ([NoAnswerer]), which the server sees in the
// result's _meta and the host logs.
//
// # Forms
//
// A form-mode request carries a flat JSON Schema; [ParseForm] turns it into
// typed [Field]s (string with its format and length, number and integer
// with their range, boolean, single- and multi-select enums with titles per
// SEP-1330, legacy enumNames too), each with its default (SEP-1034).
// [Field.Parse] reads a person's typed answer, [Form.Check] checks a whole
// answer, and every accepted answer gets the defaults of the fields it left
// out before it goes back ([Service.Ask]).
package elicit

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"

	"github.com/dsh-host/dsh-host/host"
)

// Key is the elicitation service.
var Key = host.NewKey[*Service]("elicit")

// Modes of a request.
const (
	ModeForm = "form"
	ModeURL  = "url"
)

// Actions of a result, as MCP names them.
const (
	Accept  = "accept"
	Decline = "decline"
	Cancel  = "cancel"
)

// Request is one elicitation.
type Request struct {
	// Server is the serverName of the MCP server that asks.
	Server string
	// Mode is ModeForm or ModeURL.
	Mode    string
	Message string
	// Form is the form to fill (ModeForm).
	Form *Form
	// Schema is the form's JSON Schema as the server sent it, for an
	// answerer that passes the request on (the gateway to its client).
	Schema any
	// URL is the page to open and ElicitationID its id (ModeURL).
	URL           string
	ElicitationID string
	// Approval, when set, makes the request the policy's question whether
	// a tool call may run. Form (and Schema) then hold one choice,
	// ApprovalField, for an answerer that passes the request on; a
	// person's front end may ask it its own way. Accept with the field
	// set to one of Approval.Choices approves; Decline says no.
	Approval *Approval
}

// Approval is a policy's question about one tool call.
type Approval struct {
	Tool string
	// Args are the call's arguments as the caller sent them; a front end
	// shows them escaped and cut (they are the model's, or a client's).
	Args json.RawMessage
	// Rule is the policy rule that asks.
	Rule string
	// Choices are the approvals the asker may give, among ApproveOnce,
	// ApproveSession and ApproveAlways.
	Choices []string
	// Preview is what the call would do, as the tool says it (an edit's
	// diff); a front end shows it escaped and cut, before the question.
	Preview string
}

// The answers to an approval, as the value of ApprovalField.
const (
	ApprovalField  = "decision"
	ApproveOnce    = "once"
	ApproveSession = "session"
	ApproveAlways  = "always"
)

// Result is the answer.
type Result struct {
	// Action is Accept, Decline or Cancel.
	Action string
	// Content is the accepted form's values, by field name.
	Content map[string]any
	// Reason says why the request was declined or cancelled when no person
	// chose to (nobody could answer, a required field has no default).
	Reason string
}

// Answerer answers elicitation requests. Answer may block while a person
// thinks; it returns when ctx is done. An error cancels the request.
type Answerer interface {
	Answer(ctx context.Context, req Request) (Result, error)
}

// AnswerFunc adapts a function to an Answerer.
type AnswerFunc func(ctx context.Context, req Request) (Result, error)

// Answer calls f.
func (f AnswerFunc) Answer(ctx context.Context, req Request) (Result, error) { return f(ctx, req) }

// NoAnswerer is the reason of a request declined because nobody could answer.
const NoAnswerer = "no one can answer elicitation requests here: run the host with its console on a terminal, or pass --elicit defaults to a one-shot command to accept the form's defaults"

// Service routes requests to the answerer. It is safe for concurrent use.
type Service struct {
	mu        sync.Mutex
	answerers []*installed
}

type installed struct{ a Answerer }

// New returns a service with no answerer.
func New() *Service { return &Service{} }

// Install makes a the answerer of requests that carry none of their own;
// the newest installed answers. remove takes it away (a second call does
// nothing), and the one installed before answers again.
func (s *Service) Install(a Answerer) (remove func()) {
	e := &installed{a}
	s.mu.Lock()
	s.answerers = append(s.answerers, e)
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			for i, x := range s.answerers {
				if x == e {
					s.answerers = append(s.answerers[:i], s.answerers[i+1:]...)
					return
				}
			}
		})
	}
}

// Answerable reports whether a request asked with first (AskFor) would
// reach an answerer.
func (s *Service) Answerable(first Answerer) bool { return s.answerer(first) != nil }

func (s *Service) answerer(first Answerer) Answerer {
	if first != nil {
		return first
	}
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.answerers); n > 0 {
		return s.answerers[n-1].a
	}
	return nil
}

// Ask gets req answered by the installed answerer, else it is declined
// with NoAnswerer. An accepted form gets the defaults of the fields its
// content leaves out (SEP-1034). An answerer's error becomes a cancel with
// the error as its reason. A nil Service declines everything.
func (s *Service) Ask(ctx context.Context, req Request) Result { return s.AskFor(ctx, nil, req) }

// AskFor is Ask with first, when not nil, ahead of the installed answerer:
// the answerer of the call the question is asked for (its caller's,
// tools.Channels.Answerer).
func (s *Service) AskFor(ctx context.Context, first Answerer, req Request) Result {
	a := s.answerer(first)
	if a == nil {
		return Result{Action: Decline, Reason: NoAnswerer}
	}
	res, err := a.Answer(ctx, req)
	if err != nil {
		return Result{Action: Cancel, Reason: err.Error()}
	}
	switch res.Action {
	case Accept:
		if req.Mode == ModeForm && req.Form != nil {
			res.Content = req.Form.WithDefaults(res.Content)
		}
	case Decline, Cancel:
		res.Content = nil
	default:
		return Result{Action: Cancel, Reason: fmt.Sprintf("the answerer gave the unknown action %q", res.Action)}
	}
	return res
}

// Defaults returns the answerer of `--elicit defaults`: it accepts a form
// with the defaults of its fields, and declines (with the reason) a form
// with a required field that has no default, and any URL request, which
// nobody would open. A function, not a variable: nobody can swap it for
// the whole process.
func Defaults() Answerer { return AnswerFunc(answerDefaults) }

func answerDefaults(_ context.Context, req Request) (Result, error) {
	if req.Mode != ModeForm || req.Form == nil {
		return Result{Action: Decline, Reason: "--elicit defaults accepts forms only; nobody is here to open " + req.URL}, nil
	}
	content := req.Form.WithDefaults(nil)
	if err := req.Form.Check(content); err != nil {
		return Result{Action: Decline, Reason: "--elicit defaults cannot accept this form: " + err.Error()}, nil
	}
	return Result{Action: Accept, Content: content}, nil
}

// WithDefaults returns content (copied) with the default of every field it
// lacks.
func (f *Form) WithDefaults(content map[string]any) map[string]any {
	out := make(map[string]any, len(f.Fields))
	maps.Copy(out, content)
	for _, fd := range f.Fields {
		if _, ok := out[fd.Name]; !ok && fd.Default != nil {
			out[fd.Name] = fd.Default
		}
	}
	return out
}

// Config is the elicit plugin's config; it has no keys.
type Config struct{}

func init() {
	host.Register(host.Definition[Config]{
		Name:        "elicit",
		Description: "elicitation: routes an MCP server's questions (forms, URLs) to whoever can answer — the console, --elicit defaults, or the caller",
		Builtin:     true,
		Provides:    []host.AnyKey{Key},
		Apply: func(s *host.Scope, _ Config) error {
			return host.Provide(s, Key, New())
		},
	})
}
