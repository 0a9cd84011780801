package mcpclient

import (
	"fmt"
	"sync"

	"github.com/dsh-host/dsh-host/services/tools"
)

// serverNames holds, per tool registry (one per host), which instance holds
// each serverName. Keying by registry keeps separate hosts (and tests)
// apart, like the original's table keyed by the app root.
var serverNames = struct {
	sync.Mutex
	byRegistry map[*tools.Registry]map[string]string
}{byRegistry: map[*tools.Registry]map[string]string{}}

// reserveServerName claims name for instance on reg. The release func frees
// it and is idempotent.
func reserveServerName(reg *tools.Registry, name, instance string) (release func(), err error) {
	serverNames.Lock()
	defer serverNames.Unlock()
	held := serverNames.byRegistry[reg]
	if holder, taken := held[name]; taken {
		return nil, fmt.Errorf("mcp-client: serverName %q is already in use by instance %q — pick a unique serverName", name, holder)
	}
	if held == nil {
		held = map[string]string{}
		serverNames.byRegistry[reg] = held
	}
	held[name] = instance
	var once sync.Once
	return func() {
		once.Do(func() {
			serverNames.Lock()
			defer serverNames.Unlock()
			m := serverNames.byRegistry[reg]
			if m[name] == instance {
				delete(m, name)
			}
			if len(m) == 0 {
				delete(serverNames.byRegistry, reg)
			}
		})
	}, nil
}
