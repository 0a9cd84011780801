package addserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// Request is `dsh-host add`'s command line.
type Request struct {
	// Args are the positional arguments; Command what followed "--"
	// (nil without it).
	Args, Command []string
	// Transport, Use and Name are --transport, --use and --name.
	Transport, Use, Name string
	// Env and Headers are --env and --header.
	Env, Headers Pairs
}

// UsageError is a command line add cannot read.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// PlanOf builds the entry r asks for: a command line, a URL, or a
// registry server (its questions asked on out, answered from in; the
// registry read is the one environ names).
func PlanOf(ctx context.Context, r Request, environ []string, in io.Reader, out io.Writer) (*Plan, error) {
	usage := func(format string, a ...any) error { return &UsageError{fmt.Sprintf(format, a...)} }
	switch {
	case r.Command != nil:
		if len(r.Args) != 1 || len(r.Command) == 0 || r.Transport != "" && r.Transport != "stdio" {
			return nil, usage("want NAME -- COMMAND [ARGS...]")
		}
		return Command(r.Args[0], r.Command[0], r.Command[1:], r.Env)
	case r.Transport != "":
		if len(r.Args) != 2 {
			return nil, usage("want --transport %s NAME URL", r.Transport)
		}
		return Remote(r.Args[0], r.Transport, r.Args[1], r.Headers)
	case len(r.Args) == 1 && IsRef(r.Args[0]):
		if len(r.Env) > 0 || len(r.Headers) > 0 {
			return nil, usage("--env and --header go with a command line or a URL; a registry server's values are asked for")
		}
		reg, err := Registry(environ)
		if err != nil {
			return nil, err
		}
		return FromRegistry(ctx, reg, r.Args[0], From{Prefer: r.Use, Name: r.Name, Env: os.LookupEnv}, NewLineAsker(in, out))
	}
	return nil, usage("want NAME -- COMMAND [ARGS...], --transport http|sse NAME URL, or a registry name (io.github.owner/server)")
}

// IsUsage reports whether err is a command line add cannot read.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}
