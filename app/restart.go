package app

import (
	"context"

	"github.com/dsh-host/dsh-host/host"
)

// Restart replaces the run of entry id by a new run of the same config
// (host.Host.Restart): beside the old one for an MCP server, so that
// calls see no gap, and the old run stays if the new one fails. An
// unknown id or a disabled entry is an error naming it.
func (l *Local) Restart(ctx context.Context, id string) (ReloadResult, error) {
	o, err := l.Host.Restart(ctx, id)
	if err != nil {
		return ReloadResult{}, err
	}
	return ReloadResult{Instances: l.Host.Status(), Outcomes: []host.Outcome{o}}, nil
}
