// Package pkgstate holds no code, only a test over the whole module: no
// mutable package-level state outside the init-time plugin registry. A
// knob in a package variable is shared by every host, test and caller of
// a process, and whoever sets it changes the others' behaviour unseen;
// state belongs to a value (a field, an option, a service a front end
// installs). The test lists every package-level var of the module's
// non-test Go files and accepts only what cannot act as such a knob, or
// what its allowlist names with a reason.
package pkgstate
