// Package app is the application API every front end of dsh-host stands
// on: the command line's one-shot commands, run's console, chat, serve, a
// web console. App asks a host what a person or a script wants of it —
// status, tools, a call, the prompt, a slash command, resources, reload,
// login, trust, policy explain, the audit trail, chat turns — in typed
// requests and answers, so that no front end decodes a plugin's config,
// parses a status text or builds a tool name.
//
// There are two implementations, and one test suite runs against both
// (app_test.go), so that a command attached to a running host and one
// that started its own cannot drift apart:
//
//   - Local answers from a *host.Host in this process;
//   - internal/control's Client asks a running host over its control
//     socket, whose Server answers with a Local.
//
// Much of it is not request and answer, and is designed in as callbacks
// and channels that the socket carries both ways:
//
//   - a call's progress goes to CallRequest.Progress as it comes;
//   - a server's questions (elicitation) and the policy's asks during a
//     call, a command or a chat turn go to the request's Answer (without
//     one, Elicit and Yes say how a script answers); over the socket they
//     travel on the call's stream with an id, the answer comes back on its
//     own request, and a question nobody answers within QuestionWait is
//     declined;
//   - a chat turn's text, reasoning, steps, tool calls and progress go to
//     ChatRequest.Events;
//   - each chat front end talks in a conversation of its own, whose
//     handle ChatSession answers and its later requests name
//     (conversations.go);
//   - Watch follows the instances' state changes on a bounded channel: a
//     follower that does not keep up loses changes, counted in the next
//     event's Dropped, and never slows the host;
//   - Audit yields the policy's trail as an iterator, following it as it
//     is written when asked; it reads files, so a slow reader slows only
//     itself.
//
// Cancelling a request's context cancels it on the host, over the socket
// too (the connection closes, and the host's side ends).
package app
