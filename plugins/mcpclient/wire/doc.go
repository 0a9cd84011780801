// Package wire is mcp-client's one tap on the JSON-RPC messages beneath
// go-sdk, for the little go-sdk does not expose (docs/upstream.md: each
// subscriber goes once go-sdk has what it stands in for).
//
// A Tap wraps a connection's transport: over stdio, legacy SSE or in
// memory it wraps go-sdk's Connection, which hands it each message already
// decoded; over Streamable HTTP, whose connection go-sdk lets no wrapper
// stand in for, it sits in the HTTP client, decodes each POST's body and
// each message of the answers (a JSON body, or an SSE stream read as
// go-sdk reads it: one reader, the same fields, the same event-size bound,
// events named other than "message" skipped, nothing heard once go-sdk
// would stop reading). Each message is decoded once: the server's with
// go-sdk's own jsonrpc.DecodeMessage, so that what is heard is what go-sdk
// reads, whatever the order or escaping of members; the client's own POSTs
// (go-sdk's writing) with encoding/json, which costs a fraction of it.
// DecodeMessage allocates 33 KiB a message, so over Streamable HTTP a
// server's message that no subscriber can want is not decoded whole: one
// with no escape and no followed method's name written out is no followed
// request or notification, and an answer no subscriber awaits (Awaits) is
// read for its id alone, to know where go-sdk stops. On the gateway under
// 32 clients over Streamable HTTP (BenchmarkThroughput, -cpuprofile) that
// took DecodeMessage from 7.2% to 4.5% of the process's CPU: past the 2%
// such a check must save to stay.
//
// Subscribers name the methods they follow. A subscriber hears the
// server's requests and notifications of those methods, and the responses
// to the client's requests of them together with the request answered;
// it may mend a request of them before it is sent. The tap keeps the
// client's requests awaiting an answer, per connection: an answer, a
// notifications/cancelled, or an HTTP answer that ends without it
// (go-sdk then ends the call itself) removes one, and at most maxPending
// are kept.
package wire
