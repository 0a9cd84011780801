// Command driver is scripts/replicas' Go half: it runs dsh-host replicas
// behind HAProxy (internal/testkit/replicas), measures calls per second with 1 to N
// replicas, and SIGTERMs one of N under load, counting the calls lost.
// scripts/replicas builds it and the binaries it needs, and runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/replicas"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replicas", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o replicas.Options
	fs.StringVar(&o.DshHost, "dsh-host", "", "the dsh-host `binary`")
	fs.StringVar(&o.Fixture, "fixture", "", "the testdata/mcpfixture `binary`")
	fs.StringVar(&o.HAProxy, "haproxy", "haproxy", "the haproxy `binary`")
	fs.StringVar(&o.Template, "config", "", "the HAProxy config template (`FILE`)")
	fs.StringVar(&o.Dir, "dir", "", "where logs and configs go (`DIR`)")
	n := fs.Int("replicas", 3, "at most `N` replicas")
	workers := fs.Int("workers", 8, "concurrent clients, each calling one call after another")
	duration := fs.Duration("duration", 10*time.Second, "how long each run drives load")
	mode := fs.String("mode", "stateless", "stateless, stateful (sessions, sticky on Mcp-Session-Id) or both")
	sweep := fs.Bool("sweep", true, "measure calls per second with 1 to N replicas")
	term := fs.Bool("sigterm", true, "run N replicas and SIGTERM one halfway")
	fs.DurationVar(&o.DrainTimeout, "drain-timeout", 0, "each replica's --drain-timeout (0: the default, 30s); below -slow-ms the SIGTERMed replica cuts its calls")
	slowMS := fs.Int("slow-ms", 0, "call the fixture's slow tool for `MS` milliseconds instead of add (calls in flight at the SIGTERM)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.DshHost == "" || o.Fixture == "" || o.Template == "" || o.Dir == "" || *n < 1 || *workers < 1 || *duration <= 0 {
		fmt.Fprintln(stderr, "replicas: -dsh-host, -fixture, -config and -dir are required; -replicas, -workers and -duration must be positive")
		return 2
	}
	var modes []bool // stateful or not
	switch *mode {
	case "stateless":
		modes = []bool{false}
	case "stateful":
		modes = []bool{true}
	case "both":
		modes = []bool{false, true}
	default:
		fmt.Fprintf(stderr, "replicas: -mode %q: want stateless, stateful or both\n", *mode)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fmt.Fprintf(stdout, "%d workers, %v per run; logs in %s\n", *workers, *duration, o.Dir)
	fmt.Fprintln(stdout, "sigterm: the replica SIGTERMed halfway @ the requests it had served / its calls in flight when it began to drain")
	fmt.Fprintln(stdout, "lost: calls and connects that failed; reopened: sessions opened again after one; retries, redisp., 5xx-to-cl: HAProxy's")
	fmt.Fprintf(stdout, "%-9s %-8s %-8s %8s %9s %5s %8s %8s %8s %10s  %s\n", "mode", "replicas", "sigterm", "calls", "calls/s", "lost", "reopened", "retries", "redisp.", "5xx-to-cl", "served by r1/r2/...")
	code := 0
	runNo := 0
	for _, stateful := range modes {
		type plan struct {
			replicas  int
			terminate bool
		}
		var plans []plan
		if *sweep {
			for k := 1; k <= *n; k++ {
				plans = append(plans, plan{k, false})
			}
		}
		if *term {
			plans = append(plans, plan{*n, true})
		}
		for _, p := range plans {
			runNo++
			s := replicas.Scenario{Options: o, Workers: *workers, Duration: *duration, Terminate: p.terminate, SlowMS: *slowMS}
			s.Replicas = p.replicas
			s.Stateful = stateful
			s.Dir = filepath.Join(o.Dir, fmt.Sprintf("run%d", runNo))
			if err := os.MkdirAll(s.Dir, 0o755); err != nil {
				fmt.Fprintln(stderr, "replicas:", err)
				return 1
			}
			out, err := s.Run(ctx)
			if err != nil {
				fmt.Fprintf(stderr, "replicas: %v (logs in %s)\n", err, s.Dir)
				return 1
			}
			printOutcome(stdout, out)
			if len(out.Load.Errors) > 0 {
				fmt.Fprintf(stdout, "          first errors: %s\n", strings.Join(out.Load.Errors, "\n                        "))
			}
			if s.Terminate && out.TerminatedErr != nil {
				fmt.Fprintf(stdout, "          %s after SIGTERM: %v (want exit 0)\n", out.Terminated, out.TerminatedErr)
				code = 1
			}
			// Stateless replicas must lose nothing; a stateful one loses
			// its sessions, which the table shows.
			if !stateful && out.Load.Lost() > 0 {
				code = 1
			}
		}
	}
	return code
}

func printOutcome(w io.Writer, out replicas.Outcome) {
	mode := "stateless"
	if out.Stateful {
		mode = "stateful"
	}
	term := "-"
	if out.Terminated != "" {
		term = fmt.Sprintf("%s@%d/%d", out.Terminated, out.ServedBefore, out.InFlightAtDrain)
	}
	served := make([]string, 0, len(out.Served))
	for i := 1; i <= out.Replicas; i++ {
		served = append(served, fmt.Sprint(out.Served[fmt.Sprintf("r%d", i)]))
	}
	fmt.Fprintf(w, "%-9s %-8d %-8s %8d %9.0f %5d %8d %8d %8d %10d  %s\n", mode, out.Replicas, term, out.Load.Calls, out.Load.PerSecond(),
		out.Load.Lost(), out.Reopened(), out.Retries, out.Redispatches, out.Sent5xx, strings.Join(served, "/"))
}
