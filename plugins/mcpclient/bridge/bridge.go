package bridge

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/resources"
)

// Conn is one connection of the client that owns it.
type Conn interface {
	Session() *mcp.ClientSession
	// Closed is closed when the session ended.
	Closed() <-chan struct{}
}

// Link is what a Bridge needs of the client that owns the connection.
type Link interface {
	// Acquire returns the live connection for one request, starting a
	// lazy server, and done to end the use.
	Acquire(ctx context.Context) (cn Conn, done func(), err error)
	// Current returns the live connection, starting nothing.
	Current() (Conn, error)
	// Release ends a request's context once the request is over (over
	// Streamable HTTP, after its response stream drained).
	Release(cancel context.CancelFunc, err error)
	// Probe asks for a check of cn after a request failed below the
	// protocol level.
	Probe(cn Conn)
}

// Options are a Bridge's settings and services.
type Options struct {
	// Server is the serverName, Label the instance's name in logs.
	Server, Label string
	Log           *slog.Logger
	// Scope owns the provider and the commands.
	Scope *host.Scope
	// Resources and Commands are the services fed; each nil when absent.
	Resources *resources.Registry
	Commands  *commands.Registry
	// ListTimeout bounds a sync's lists (startupTimeoutMs);
	// RequestTimeout each request (toolCallTimeoutMs).
	ListTimeout, RequestTimeout time.Duration
	// Store keeps a prompt message's images and audio; nil: none is kept.
	Store *attachments.Store
}

// Deps are the services a Bridge feeds, both optional: an instance that
// injects them starts again when one comes or goes.
func Deps() []host.Dep {
	return []host.Dep{host.Optional(resources.Key), host.Optional(commands.Key)}
}

// Lookup fills opt's services from those injected in s.
func (opt *Options) Lookup(s *host.Scope) {
	opt.Resources, _ = host.Lookup(s, resources.Key)
	opt.Commands, _ = host.Lookup(s, commands.Key)
}

// New returns the bridge of one instance and registers it as a provider
// of the resources service, when there is one.
func New(opt Options, link Link) (*Bridge, error) {
	b := &Bridge{opt: opt, link: link}
	return b, b.register()
}

// Answered reports whether err is an error response from the server, as
// opposed to a failure to reach it.
func Answered(err error) bool {
	var rpcErr *jsonrpc.Error
	return errors.As(err, &rpcErr) && rpcErr.Code != codeRejectedByTransport
}

// codeRejectedByTransport is the JSON-RPC code go-sdk gives a request that
// never reached the server (its jsonrpc2.ErrRejected).
const codeRejectedByTransport = -32005
