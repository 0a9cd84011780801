// Package calls keeps one mcp-client instance's tools/calls in flight:
// each call's progress token, the caller its progress and the server's log
// messages go to, and its two timeouts, toolCallTimeoutMs (the silence
// allowed: every progress notification starts it again, and a question to
// a person stops it) and toolCallMaxMs (the whole). A Table also holds the
// delayed release of finished Streamable HTTP calls' contexts.
//
// The times share one runtime timer per Table (alarm), armed for the
// earliest of them. A runtime timer per call cost more than its
// bookkeeping: starting a timer that becomes the process's earliest wakes
// the thread the runtime keeps waiting in the network poller (an eventfd
// written and read, and a context switch); strace counted that on about a
// third of the calls made through `dsh-host serve --stdio`. These times
// only ever move later, and calls start with the same timeouts, so the
// armed timer is left alone on almost every call, and a finished call
// needs nothing: the timer finds it gone.
package calls
