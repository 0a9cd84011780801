package main

import (
	"context"
	"fmt"
)

func cmdImport(ctx context.Context, args []string, io Stdio) int {
	fmt.Fprintln(io.Err, "dsh-host import: not yet")
	return exitFail
}
