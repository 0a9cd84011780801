package tools

// The kinds of Caller.Kind the host's front ends use. Policy rules match
// them by these names (callers: [console, chat, call, gateway, ui]).
const (
	// CallerConsole is the person at the console of `dsh-host run`.
	CallerConsole = "console"
	// CallerChat is the model of `dsh-host chat` (the agent plugin).
	CallerChat = "chat"
	// CallerCall is a one-shot command (`dsh-host call`, `command`, ...),
	// run in its own process or attached to a running host.
	CallerCall = "call"
	// CallerGateway is a client of the gateway (`dsh-host serve`).
	CallerGateway = "gateway"
	// CallerUI is the person at the web console (`dsh-host ui`): its
	// try-it calls.
	CallerUI = "ui"
)

// Identity is who stands behind a caller, when a front end knows it (a
// gateway that authenticates its clients). Only the policy service
// interprets it.
type Identity struct {
	Subject string   // the authenticated subject (a user)
	Client  string   // the client application
	Scopes  []string // granted scopes
	Groups  []string // the subject's groups
	// Any stands for every identity a front end serves, for a listing it
	// then narrows per identity (a gateway with inbound OAuth builds its
	// surface so): what depends on who the caller is counts as possible.
	Any bool
}
