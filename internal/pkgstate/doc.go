// Package pkgstate holds no code, only a test over the whole module: no
// package-level variable is written after init, outside a short list of
// process-wide state with its reasons (the init-time plugin registry,
// caches of facts that cannot change while the process runs). A knob in a
// package variable is shared by every host, test and caller of a process,
// and whoever sets it changes the others' behaviour unseen; state belongs
// to a value (a field, an option, a service a front end installs). The
// test type-checks every package (go/types over `go list -export`) and
// finds assignments, increments, address-of and pointer-method calls on
// package-level variables; read-only tables may stay at package level.
package pkgstate
