// Package sandbox starts a stdio MCP server with the rights it was given
// rather than the user's: on Linux, Landlock rules on the filesystem
// (read, write, execute), on TCP connect and bind (ABI 4 and later) and on
// signals and abstract unix sockets (ABI 6 and later), plus no_new_privs;
// a seccomp filter for what Landlock does not see, UDP and unix sockets,
// unless the entry allows them (seccomp_linux.go); and resource limits
// (limits.go).
//
// The host never restricts itself. Start rewrites a server's command so
// that the current binary is executed again with a marker argument;
// Main, which every binary of the project calls first thing in its main
// (and TestMain, in the test packages that start stdio servers), sees the
// marker, applies the policy passed in the environment to its own thread
// and execs the server's command. Landlock domains are inherited over
// exec and fork and can only narrow, so the server and whatever it starts
// stay inside.
//
// What a server needs to run is granted without being listed (defaults.go):
// system libraries and certificates, the runtime that starts it, its
// working directory, a temporary directory of its own and its roots.
//
// Before the start, Prepare does outside the sandbox what a runtime would
// otherwise do inside it with write access to a shared cache (prepare.go):
// npx's packages are installed and the package's program runs; go run's
// package is built and the binary runs.
//
// Check (check.go) runs probes (probe.go) in the sandbox a server would
// get, through a probe mode of the same binary, for `dsh-host sandbox
// check`.
//
// Where Landlock is missing (other systems, old kernels), mode auto starts
// the server unsandboxed with a warning and mode strict refuses to start it.
package sandbox
