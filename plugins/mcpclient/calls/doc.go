// Package calls keeps one mcp-client instance's tools/calls in flight:
// each call's progress token, the caller its progress and the server's log
// messages go to, and its two timeouts, toolCallTimeoutMs (the silence
// allowed: every progress notification starts it again, and a question to
// a person stops it) and toolCallMaxMs (the whole). A Table also holds the
// delayed release of finished Streamable HTTP calls' contexts. It
// subscribes to the wire (package wire: Wire, WireLogs), so that a call
// ends only once the progress its server sent before the result has been
// relayed.
//
// Each call's timeouts and each release are a runtime timer of their own
// (time.AfterFunc), reset by progress and stopped at Finish. One timer per
// Table for all of them was measured against this on a gateway under 32
// clients: it saved under 1% of the gateway's CPU and nothing of a call's
// latency that a run could tell from its noise, so the simpler form stays.
package calls
