// Package webui is dsh-host's web console: pages a browser on this
// machine shows of a host through the application API (app.App), for
// `dsh-host ui` and `run`/`serve --ui`.
//
// Servers, Tools (with a try-it form made from a tool's input schema),
// Trust (held tool definitions), Approvals (the asks of the composition's
// approval broker), Audit (live) and Composition. The pages are
// html/template with embedded assets and a little plain JavaScript;
// nothing is loaded from elsewhere.
//
// It is safe by construction (security.go): it listens on loopback only;
// a random token in the printed URL is traded for an HttpOnly,
// SameSite=Strict cookie; the Host and Origin of every request are
// checked; a POST needs the cookie and this page's origin; the
// Content-Security-Policy allows scripts and styles of the page's own
// origin only, none inline; and every text a server controls is escaped
// by html/template or set as text by the script.
package webui
