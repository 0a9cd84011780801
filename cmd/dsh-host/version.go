package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dsh-host/dsh-host/internal/version"
)

const versionAbout = `
Print the build: version, commit, Go version and platform. A release build
(scripts/release) stamps the version and commit; a build from a work tree
says "dev" and the commit git recorded ("-dirty" with local changes). The
gateway reports the same version as its serverInfo.version, the traces as
service.version, and /metrics as dsh_build_info. --version is the same.`

// cmdVersion prints the build's identity (internal/version).
func cmdVersion(_ context.Context, args []string, std Stdio) int {
	fs := flagSet("version", "[--json]", versionAbout)
	asJSON := fs.Bool("json", false, "print it as a JSON object")
	if code, ok := parseFlags(fs, args, std); !ok {
		return code
	}
	bi := version.Get()
	if *asJSON {
		b, _ := json.Marshal(bi)
		fmt.Fprintln(std.Out, string(b))
		return exitOK
	}
	fmt.Fprintln(std.Out, bi.Line())
	return exitOK
}
