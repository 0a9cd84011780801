package main

// Temporary: gateway mode (serve.go) is being written; this file goes away
// when it lands.

import (
	"context"
	"fmt"
)

func cmdServe(ctx context.Context, args []string, io Stdio) int {
	fmt.Fprintln(io.Err, "dsh-host serve: gateway mode is not built into this binary yet")
	return exitFail
}
