package hostrun

import (
	"fmt"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/policy"
)

// AuditDir is the audit.dir of file's policy entry (the
// built-in default when it has none).
func AuditDir(file string) (string, error) {
	c, err := Load(file)
	if err != nil {
		return "", err
	}
	for _, e := range c.Entries {
		if e.ID != policy.PluginName {
			continue
		}
		pc, err := host.Decode[policy.Config](&e)
		if err != nil {
			return "", err
		}
		if !pc.Audit.Enabled {
			return "", fmt.Errorf("%s: the policy entry turns the audit trail off (audit.enabled: false)", file)
		}
		return host.EntryPath(e.File, pc.Audit.Dir), nil
	}
	return policy.DefaultConfig().Audit.Dir, nil
}
