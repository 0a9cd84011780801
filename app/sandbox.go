package app

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
)

// CheckSandbox writes to w, for each enabled stdio server of l.File (or
// the one whose serverName or id is server), the sandbox it would start
// in and the outcome of probes run inside it (internal/sandbox's Check),
// without starting the server. failed says a probe got through where the
// rules say it should not, or a server could not be checked. err is for
// what checks nothing: a composition that does not load, a server it does
// not have or that is not a stdio one.
//
// It runs in the caller's process, attached or not: the probes run on
// the caller's machine, as the server would.
func (l *Local) CheckSandbox(ctx context.Context, server string, w io.Writer) (failed bool, err error) {
	c, err := host.ReadComposition(l.File, nil)
	if err != nil {
		return false, err
	}
	var names []string
	checked := 0
	for i := range c.Entries {
		e := &c.Entries[i]
		if e.Name != mcpclient.PluginName || e.Disabled {
			continue
		}
		cfg, err := host.Decode[mcpclient.Config](e)
		if err != nil {
			return false, err
		}
		names = append(names, cfg.ServerName)
		if server != "" && cfg.ServerName != server && e.ID != server {
			continue
		}
		if cfg.Transport != mcpclient.TransportStdio {
			if server != "" {
				return false, fmt.Errorf("%s: %s is not a stdio server: nothing runs on this machine to sandbox", l.File, server)
			}
			continue
		}
		checked++
		fmt.Fprintf(w, "%s (entry %q):\n", cfg.ServerName, e.ID)
		rep, err := mcpclient.CheckSandbox(ctx, *cfg, e.File)
		if err != nil {
			fmt.Fprintf(w, "  cannot check: %v\n", err)
			failed = true
			continue
		}
		rep.Write(w)
		failed = failed || rep.Failed()
	}
	switch {
	case server != "" && checked == 0:
		return false, errors.New(l.notFound(server, names))
	case checked == 0:
		fmt.Fprintf(w, "%s has no enabled stdio server\n", l.File)
	}
	return failed, nil
}

// notFound says l.File has no enabled mcp-client entry called name, and
// which it has.
func (l *Local) notFound(name string, names []string) string {
	msg := fmt.Sprintf("%s has no enabled mcp-client entry with serverName %q", l.File, name)
	if len(names) > 0 {
		msg += fmt.Sprintf(" (it has: %v)", names)
	}
	return msg
}
