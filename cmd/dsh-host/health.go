package main

import (
	"context"
	"fmt"
	"os"

	"github.com/dsh-host/dsh-host/internal/health"
)

const healthAbout = `
Check a running "dsh-host serve --http" from outside: GET URL's /healthz
(the process answers), or /readyz with --ready (it serves every server's
tools and is not draining), whatever path URL has. Exit 0 on a 2xx answer,
1 on any other answer or none within --timeout. It needs no shell or curl,
so a scratch image's HEALTHCHECK can run it:

  dsh-host health http://127.0.0.1:8931/
  dsh-host health --ready https://127.0.0.1:8931/ --insecure
  DSH_HEALTH_URL=https://127.0.0.1:8080/ dsh-host health --insecure

Without URL, it checks $DSH_HEALTH_URL. --insecure skips the certificate's
verification on a loopback address only. It sends no token (the health
paths take none), follows no redirect and uses no HTTP proxy.`

// cmdHealth checks a gateway's health endpoint (internal/health).
func cmdHealth(ctx context.Context, args []string, std Stdio) int {
	fs := flagSet("health", "[--ready] [--timeout D] [--insecure] [URL]", healthAbout)
	ready := fs.Bool("ready", false, "check /readyz instead of /healthz")
	timeout := fs.Duration("timeout", health.DefaultTimeout, "give up after this long")
	insecure := fs.Bool("insecure", false, "do not verify an https certificate on a loopback address (a probe on 127.0.0.1 of a certificate for another name, or self-signed)")
	pos, code, ok := parseArgs(fs, args, std)
	if !ok {
		return code
	}
	if u := os.Getenv(health.EnvURL); len(pos) == 0 && u != "" {
		pos = []string{u}
	}
	if len(pos) != 1 {
		return usageError(fs, std, "want one URL (or %s), got %d arguments", health.EnvURL, len(pos))
	}
	if *timeout <= 0 {
		return usageError(fs, std, "--timeout %s: must be positive", *timeout)
	}
	r, err := health.Check(ctx, pos[0], health.Options{Ready: *ready, Timeout: *timeout, Insecure: *insecure})
	if err != nil {
		fmt.Fprintf(std.Err, "dsh-host health: %v\n", err)
		return exitFail
	}
	if !r.OK() {
		fmt.Fprintf(std.Err, "dsh-host health: %s: %d %s\n", r.URL, r.Status, r.Body)
		return exitFail
	}
	fmt.Fprintf(std.Out, "%s: %d %s\n", r.URL, r.Status, r.Body)
	return exitOK
}
