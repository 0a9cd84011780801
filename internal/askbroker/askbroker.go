// Package askbroker routes a policy's ask that no terminal can answer (a
// gateway client's call, `chat -p`, `call` without --yes) to the person at
// the web console. Each agent CLI starts its own `serve --stdio` of one
// composition, and only one of them holds the control socket; so the
// broker is not in a host: the console (`dsh-host ui`, or `run`/`serve`
// with --ui) listens on one socket per composition, and every host of
// that composition asks there.
//
// The socket is $DSH_HOME/run/<hash>.asks.sock (hash of the composition's
// absolute path, as the control socket's), in the private run directory
// (0700), itself 0600, and on Linux each connection's peer credentials
// must name the console's user; the asking host checks the console's the
// same way. The protocol is NDJSON of this package's own (not MCP): a host
// sends {"ask":{…}} lines, each with a ref of its own, and may withdraw one
// ({"withdraw":ref}); the broker answers each ask once on the connection
// that made it, {"ref":n,"answer":"once"} or {"ref":n,"refused":"why"}.
// Answers come only from the console (Broker.Answer), never from the
// socket: a line a host has no business sending closes its connection.
// Lines, asks per connection, asks open at once and connections are
// bounded; an ask lives until it is answered, its deadline passes, its
// host withdraws it or goes away, or the console closes (deny).
package askbroker

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/dsh-host/dsh-host/internal/usersock"
)

// Answer is the console's answer to an ask.
type Answer string

// The answers. Once approves the one call; Session approves the caller's
// calls of the tool for the rest of the asking host's life; Always saves
// the approval in the user's settings; Deny refuses the call.
const (
	Once    Answer = "once"
	Session Answer = "session"
	Always  Answer = "always"
	Deny    Answer = "deny"
)

// Ask is one call waiting for the console's answer.
type Ask struct {
	// ID is random and unguessable; the console answers by it.
	ID string `json:"id"`
	// Composition is the absolute path of the composition file.
	Composition string `json:"composition"`
	// PID is the asking host's process (as the kernel tells, where it
	// can).
	PID int `json:"pid"`
	// Caller is the caller's kind and id: "gateway claude-code", "call".
	Caller string `json:"caller"`
	// Server is the tool's serverName ("" for a tool of no server), Tool
	// the full tool name.
	Server string `json:"server,omitempty"`
	Tool   string `json:"tool"`
	// Arguments are the call's, as JSON.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Preview is what the call would do as its tool tells it (an edit's
	// diff), so that the console shows what a person approves; "" when
	// the tool tells nothing.
	Preview string `json:"preview,omitempty"`
	// Rule is the rule that said ask, as policy explain names it.
	Rule string `json:"rule"`
	// Choices are the approvals the asking host takes (Deny is always
	// taken): Once, and Session and Always where they mean something.
	Choices []Answer `json:"choices"`
	// Asked is when the broker got it; past Deadline it is denied.
	Asked    time.Time `json:"asked"`
	Deadline time.Time `json:"deadline"`
}

// Event is a change of the open asks, as Subscribe gives them: a new Ask;
// or Answered with its Answer; or Expired (its deadline passed, its host
// withdrew it or went away, or the console closed).
type Event struct {
	Ask      *Ask   `json:"ask,omitempty"`
	Answered string `json:"answered,omitempty"`
	Answer   Answer `json:"answer,omitempty"`
	Expired  string `json:"expired,omitempty"`
}

// The broker's bounds.
const (
	// MaxLine bounds one protocol line, the arguments included: an ask
	// whose arguments do not fit is refused (the console could not show
	// what it approves).
	MaxLine = 1 << 20
	// maxAsksPerConn bounds the asks one connection has open.
	maxAsksPerConn = 16
	// maxPending bounds the asks open at once; one more is refused.
	maxPending = 256
	// maxConns bounds the connections open at once; one more is closed.
	maxConns = 128
	// MaxTimeout is the longest an ask may wait.
	MaxTimeout = time.Hour
	// idleTimeout closes a connection that has no ask open.
	idleTimeout = 30 * time.Second
	// writeTimeout bounds the writing of one line to a host.
	writeTimeout = 5 * time.Second
	// subBuffer is how many events a subscriber may fall behind by
	// before it loses them.
	subBuffer = 64
)

// Errors.
var (
	// ErrNoConsole is returned by AskConsole at once when no console of the
	// composition listens: nobody can answer, so nothing waits.
	ErrNoConsole = errors.New("no console is attached to answer")
	// ErrNotAnswered wraps why an ask got no answer: its deadline
	// passed, the console went away or refused it, or the caller gave
	// up.
	ErrNotAnswered = errors.New("not answered at the console")
	// ErrInUse is returned by Listen when another console of the
	// composition holds its broker.
	ErrInUse = errors.New("another console of this composition holds its approval broker")
	// ErrNoAsk is returned by Answer for an id no open ask has: never
	// asked, answered already, or expired.
	ErrNoAsk = errors.New("no such open ask")
)

// suffix names the broker's socket beside the control socket.
const suffix = ".asks.sock"

// SocketPath returns the broker socket of the composition in file.
func SocketPath(file string) (string, error) {
	return usersock.Path(file, suffix)
}

// wire: host → broker.
type request struct {
	Ask      *askRequest `json:"ask,omitempty"`
	Withdraw int         `json:"withdraw,omitempty"`
}

type askRequest struct {
	Ref       int             `json:"ref"`
	PID       int             `json:"pid,omitempty"`
	Caller    string          `json:"caller"`
	Server    string          `json:"server,omitempty"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Preview   string          `json:"preview,omitempty"`
	Rule      string          `json:"rule"`
	Choices   []Answer        `json:"choices"`
	// TimeoutMS is how long the host waits (capped at MaxTimeout).
	TimeoutMS int64 `json:"timeoutMs"`
}

// wire: broker → host. Error closes the connection.
type reply struct {
	Ref     int    `json:"ref,omitempty"`
	Answer  Answer `json:"answer,omitempty"`
	Refused string `json:"refused,omitempty"`
	Error   string `json:"error,omitempty"`
}

func validAnswer(a Answer) bool {
	switch a {
	case Once, Session, Always, Deny:
		return true
	}
	return false
}
