// Package agent is the agent plugin: a model on any OpenAI-compatible chat
// completions API (DeepSeek by default) using the host's tools. It is what
// `dsh-host chat` talks to, and the fullest example of a plugin: it
// requires the tools service, uses attachments and commands when present,
// declares its key's variable secret, and provides a service of its own.
//
// # Composition
//
//	plugins:
//	  - id: agent
//	    name: agent
//	    config:
//	      baseUrl: https://api.deepseek.com   # the API root (default)
//	      model: deepseek-flash               # default; or deepseek-v4-pro
//	      apiKeyEnv: DEEPSEEK_API_KEY         # the variable holding the key (default); "" sends none
//	      system: "Answer briefly."           # extra system text
//	      imageInput: false                   # the model takes images (default false)
//	      maxSteps: 25                        # tool rounds per turn (default 25)
//	      temperature: 0.2                    # sent when set, 0..2
//	      timeoutMs: 600000                   # per request, to the end of its stream; 0: none
//	      contextWindow: 1000000              # the model's context in tokens; default: known (DeepSeek's 1000000) or 32768
//	      compactAt: 0.8                      # compact when a request would pass this share of it
//	      schemaProfile: auto                 # auto | standard | gemini (auto: gemini for Google's API)
//	      reasoningContent: auto              # auto | send | omit (auto: send for DeepSeek's API)
//
// The key is read from the variable when the instance starts (an unset
// variable fails it, naming the variable), sent only as the bearer token
// to baseUrl, and left out of every MCP server's environment
// (Definition.Secrets). The client is built without openai-go's
// environment defaults, so OPENAI_API_KEY and friends never go to another
// provider.
//
// # The loop
//
// Conversation.Turn adds the user's message, then for each step: Assemble
// for the agent's caller (Kind "chat", ID the entry's id, ImageInput from
// imageInput), so folding, masks and keep rules apply; one streamed request
// with the assembly's tools array spliced in byte for byte
// (Assembly.ToolsJSON) and a system message made of `system` and the
// assembly's sections; the answer streamed to Output.Text and any
// reasoning (DeepSeek's delta.reasoning_content) to Output.Reasoning. Under
// reasoningContent send, a tool-calling turn's reasoning stays on its
// assistant messages and goes back with them, as DeepSeek's thinking mode
// requires; a request whose history has such a turn without it turns
// thinking off (reasoning.go). The tool calls of a step run
// in parallel through Registry.Execute; their tool messages follow in the
// order of the calls, each with its tool_call_id. Arguments that are not
// valid JSON come back as a tool error. What a call reports while it runs
// (tools.Channels.Progress: an MCP server's progress notifications) goes to
// Output.Progress. An image in a result is sent as an
// image part (in a user message after the tool messages, since a tool
// message carries text only) when imageInput is on and the attachments
// service holds it; otherwise the tool message says it was omitted. Only
// the latest step's images are sent: once the model has answered a
// request, the image parts of earlier steps are replaced by a line saying
// the image was left out, so a few screenshots are not sent again with
// every later request. The
// loop ends at an answer without tool calls, or after maxSteps tool rounds
// with ErrMaxSteps. A turn that fails or is cancelled leaves the
// conversation as it was, so it stays valid for the next message;
// cancelling the turn's context cancels the stream and every tool call in
// flight, which the MCP client passes on to its servers. A conversation
// runs one turn at a time, but Reset (/new) and Len never wait for one: a
// turn running through a Reset keeps none of its messages.
//
// # Errors and retries
//
// openai-go's own retries are off; the agent's policy runs instead: a 429
// waits for Retry-After (or retry-after-ms) with a countdown on the status
// output, up to a minute; a 5xx, a stream cut midway and a connection
// that timed out or was reset are retried with doubling backoff from 1 s;
// three retries at most. Any other failure to reach the API (a DNS or TLS
// error, a refused connection, a bad baseUrl) fails at once, naming
// baseUrl. A 401 or 403 names the variable the key was read from; a
// context-length refusal says so and suggests /new or folding.
//
// # Context
//
// Before each request the agent estimates its prompt tokens: the count the
// API reported for the conversation's last request plus a token per 4
// bytes the body grew since (a token per 4 bytes before any count). When
// the estimate passes compactAt of contextWindow, the turns before the
// running one (and before the last one too, when it is small) are sent to
// the same model with a request to summarise them, and replaced by a
// summary pair (the summary as a user message, an acknowledgement as the
// assistant's, so roles alternate); a tool result over 2000 bytes is cut
// in what the model summarises, kept in the attachments store, and named
// in the summary by its reference. The session gets a "compact" line, so a
// resumed conversation sends the compacted history. Nothing to compact, or
// a failed summary, is said on the status output and the request goes as
// it is. /compact does it by hand (keeping the last turn); /context shows
// the estimate split by the request's bytes into system text, tools,
// history and the rest, parts that add up to it.
//
// # Schema profiles
//
// Gemini's API refuses tool parameter schemas with $ref, $defs, anyOf and
// other JSON Schema keywords. Under schemaProfile gemini (auto picks it for
// generativelanguage.googleapis.com and *aiplatform.googleapis.com) each
// schema is rewritten into Gemini's subset (references inlined, recursion
// cut, unions collapsed, unknown keywords dropped) once per distinct
// schema, and the arguments of a call to a tool whose schema was rewritten
// are validated against its real schema before the call: a mismatch is a
// tool error the model reads, and the tool is not called.
//
// # MCP in the conversation
//
// With the resources service, an @server:uri mention in a message (at its
// start or after a space, server a known serverName) attaches the
// resource's contents after the text, each under a line naming it; images
// go as image parts when the model takes them. A mention that cannot be
// read fails the turn before anything is sent. Conversation.Prompt gets an
// MCP prompt (mcp__server__prompt, its arguments as its slash command takes
// them) and inserts its messages as turns, consecutive ones of a role
// joined; when the last is the user's the model answers it. A server that
// sends a sampling request during one of the agent's tool calls is
// answered by the agent's model, in a request without tools, once the
// person approves it through the elicitation service (a question like the
// policy's approvals); under a one-shot chat (Output.OneShot) it is
// approved with --yes and declined, with that reason, without.
//
// # Front ends
//
// The plugin provides Key: an *Agent whose Main conversation the console
// of `dsh-host chat` talks in, and NewConversation for one-shot use
// (`dsh-host chat -p`). With the commands service it registers /new (a new
// main conversation), /model [NAME] (show or switch the model until the
// instance restarts), /context and /compact. A restart of the instance (its entry edited, a
// service it injects gone) starts a new conversation.
//
// # Sessions
//
// A front end saves a conversation by Record(NewSession(...)): each
// committed turn is then appended to the session's JSON-lines file and
// fsynced (its messages as the API received them, the model, the usage), so
// a crash loses at most the turn in progress. OpenSession reads one back
// (a torn last line is skipped with a warning) and Resume puts its history
// in a conversation, which then sends it byte for byte as before;
// ListSessions and LastSession serve /sessions and chat --continue. Reset
// drops the session: the front end starts a new one at the next turn.
package agent
