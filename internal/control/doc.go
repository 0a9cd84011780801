// Package control is how the command line reaches a running dsh-host: `run`
// and `serve` listen on a control socket, one per composition file, and the
// one-shot subcommands (status, tools, call, prompt, command, resources,
// read, reload, trust, policy explain) ask that host instead of starting
// their own.
//
// The socket is a Unix socket (AF_UNIX, also on Windows 10 and later) at
// $DSH_HOME/run/<hash>.sock, the hash being of the composition's absolute
// path with symlinks resolved, so that two compositions in two directories
// get two sockets. Only the user who runs the host may connect: the
// directory is 0700, the socket 0600, and on Linux each connection's peer
// credentials (SO_PEERCRED) must name the host's uid. The host that
// listens holds a lock file beside the socket, so that a second host of
// the same composition leaves the socket alone (ErrInUse) and a socket
// left by a host that died is replaced.
//
// The protocol is HTTP/1.1 over that socket with JSON bodies: app's wire.
// Server answers with an app.App (an app.Local over the host), Client is
// an app.App that asks it, so that a front end works the same attached or
// not. It is not MCP. A call, a chat turn and a watch answer NDJSON lines:
// progress, chat events, status changes and questions as they come, the
// result last. A question (a server's elicitation, the policy's ask) is
// answered on POST /v1/answer by the call's and the question's ids
// (questions.go); one unanswered within the bound is declined.
package control
