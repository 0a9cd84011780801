// Package bridge carries what an MCP server offers besides tools, and what
// it asks back during a call.
//
// A Bridge feeds the resources service (services/resources): it registers
// as the provider of its serverName and, when the server advertises
// resources, lists every page of resources/list and
// resources/templates/list at each connection, again on
// notifications/resources/list_changed, and, for a URI someone subscribed
// to, on notifications/resources/updated (the subscribers hear of it
// first). Each list keeps at most 10,000 entries (a cut is logged once).
// Subscriptions are renewed on every new connection, eight at a time under
// one deadline. Reads, subscriptions and completion/complete go to the
// live connection (through its Link), bounded by toolCallTimeoutMs. The
// server's prompts become slash commands named PublicPromptName with the
// commands service (resources.PromptCommand), and prompts of the resources
// service, whose prompts/get the gateway serves. All of it re-syncs on the
// supervisor: a failed list keeps the previous one; Clear withdraws it all.
//
// Questions answers a server's requests back: elicitation (the 2025-11-25
// elicitation/create, and the input requests of a 2026-07-28 round trip,
// which come with the call's own context) through services/elicit, pages a
// call must open first (URLElicitationRequired) as URL requests, and
// sampling through the sampler on the call's context (services/sampling).
// A 2025-11-25 request names no call: it is the call's when exactly one is
// in flight; with several, the installed answerer is asked and every
// call's silence waits. A decline nobody chose carries its reason in
// _meta[ReasonKey].
package bridge
