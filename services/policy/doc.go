// Package policy decides who may call what: every tool call, and every
// reach for a server's resources and prompts, passes its guard, and every
// call it sees is written to an audit trail. It is the built-in `policy`
// plugin (plugin.go), one instance per composition, replaced whole on an
// edit (Overlap: the new rules guard before the old ones go).
//
// Its jobs are parts, each a package with its own tests:
//
//   - rules (services/policy/rules): the ordered allow/ask/deny rules and
//     their CEL `when`; an Engine decides a call (Decide), a server's
//     doors (Gate), what a caller is offered (AlwaysDenied), and says
//     why (Explain). A `when` that cannot be evaluated fails closed.
//   - pins (services/policy/pins): trust on first use of MCP tools; a
//     tool that appears or changes later is held until a person reviews
//     and approves exactly what was shown (Review, TrustDigest).
//   - audit (services/policy/audit): the trail, one hash-chained JSON
//     line per call across rotated files, and Verify.
//
// This package wires them to the tools registry and adds what needs the
// host: asking a person (ask.go: elicitation, session and saved "always"
// approvals), the /policy command, the config, and the audit Record built
// from a finished call (audit.go).
//
// A call goes through them in this order (Guard):
//
//  1. pins: a held tool is refused with a *pins.Held (to a model, the
//     change is named, not shown);
//  2. rules: the first rule that matches decides, else the default;
//  3. ask: an ask decision is put to whoever answers for the caller
//     (console, chat, a one-shot's --yes), or refused when nobody can;
//     a deny is a *Denial naming the rule;
//  4. the tool runs (or not), and the finish hook writes its Record,
//     with the decision, rule and answer the guard left in the call's
//     notes, to the audit trail.
//
// Listings take steps 1 and 2 only (hides: held tools and tools a caller
// is always denied are not offered); a server's resources and prompts
// take step 2 (Gate). docs/policy.md is the user's side of all this.
package policy
