package addserver

import (
	"slices"
	"strings"
)

// A document's environment variables are the server's; these are read by
// what runs it (npx and node, uvx and python, the dynamic loader, the
// shell, TLS and proxies): one would fetch the package from another
// registry (npm_config_registry, UV_INDEX_URL), run code before it
// (NODE_OPTIONS, LD_PRELOAD) or watch its traffic, which runtimeArguments
// are left out for already. npm reads its npm_config_* in any case.
var (
	runnerPrefixes = []string{"NPM_CONFIG_", "NODE_", "NPX_", "COREPACK_", "UV_", "PIP_", "PYTHON", "LD_", "DYLD_"}
	runnerNames    = []string{"PATH", "HOME", "XDG_CONFIG_HOME", "BASH_ENV", "ENV", "SHELL",
		"SSL_CERT_FILE", "SSL_CERT_DIR", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"}
	// serverOwn, of those prefixes, are the server's own settings that
	// servers document, and steer nothing.
	serverOwn = []string{"NODE_ENV", "PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE"}
)

// runnerVariable reports whether name is read by a server's runner rather
// than the server.
func runnerVariable(name string) bool {
	up := strings.ToUpper(name)
	if slices.Contains(serverOwn, name) {
		return false
	}
	for _, p := range runnerPrefixes {
		if strings.HasPrefix(up, p) {
			return true
		}
	}
	for _, n := range runnerNames {
		if up == n {
			return true
		}
	}
	return false
}
