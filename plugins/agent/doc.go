// Package agent is the agent plugin: a model on any OpenAI-compatible chat
// completions API (DeepSeek by default) using the host's tools. It is what
// `dsh-host chat` talks to. It requires the tools service, uses the
// attachments, resources, elicitation and commands services when present,
// declares its key's variable secret, and provides Key: an *Agent. Its
// configuration keys, defaults and numbers are in docs/chat.md.
//
// Its parts: chatapi is the API client (request encoding, one streamed
// request with the retry policy, reasoning_content, errors a person can act
// on); schemaprofile rewrites tool schemas for APIs that take a subset of
// JSON Schema (Gemini); sessions is the JSON-lines store of conversations,
// which the front ends use directly. This package is the loop.
//
// # Lifecycle
//
// apply (plugin.go) validates the entry, reads the key from its variable
// (an unset one fails the instance, naming it), builds the Agent and
// registers /new, /model, /context and /compact. A restart of the instance
// (its entry edited, a service it injects gone) starts a new conversation.
//
// A front end talks in Agent.Main (the console) or a NewConversation
// (`chat -p`). Conversation.Turn adds the user's message (@server:uri
// mentions attach resources, mcp.go), then each step:
//
//  1. prepare: Assemble the tools for the agent's caller (folding, masks
//     and keep rules apply), rewrite their schemas under the profile, and
//     encode the request with the tools array spliced in byte for byte and
//     a system message of `system` and the assembly's sections;
//  2. compact first when the estimate passes compactAt (compact.go);
//  3. send it through chatapi, the answer streamed to Output.Text and the
//     reasoning to Output.Reasoning;
//  4. run the step's tool calls in parallel through the registry
//     (runtools.go), results in the order of the calls; a server's
//     sampling request during a call is answered by the model once the
//     person approves it (mcp.go); images go as image parts when the model
//     takes them, only those of the latest step;
//  5. again, until an answer without tool calls, or ErrMaxSteps.
//
// commit then keeps the turn and appends it to the conversation's session,
// if one is recorded (Record, Resume). A turn that fails or is cancelled
// leaves the conversation as it was; cancelling its context cancels the
// stream and every tool call in flight. A conversation runs one turn at a
// time, but Reset (/new) and Len never wait for one: a turn running
// through a Reset keeps none of its messages.
//
// The reasoning of a tool-calling turn stays on its assistant messages
// when the API wants it back (reasoningContent, reasoning.go); a history
// with such a turn without it turns thinking off for the request.
package agent
