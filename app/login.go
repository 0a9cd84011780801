package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/mcpclient"
	"github.com/dsh-host/dsh-host/services/logins"
)

// LoginRequest names a remote MCP server of the composition: its
// serverName, or its entry's id.
type LoginRequest struct {
	Server string `json:"server"`
	// Browser shows the authorization URL to the person logging in and
	// opens it (its Timeout bounds the wait); Login needs one.
	Browser *logins.BrowserStep `json:"-"`
}

// Login logs in to req's server in the browser and stores the token
// where every dsh-host process of this user finds it ($DSH_HOME/oauth): a
// running host waiting for it connects by itself. It returns what the
// login did, for a person.
//
// It runs in the caller's process, attached or not: the browser is the
// caller's, and the store is shared.
func (l *Local) Login(ctx context.Context, req LoginRequest) (string, error) {
	if req.Browser == nil {
		return "", fmt.Errorf("login to %s: nobody to show the authorization URL to", req.Server)
	}
	cfg, err := l.server(req.Server)
	if err != nil {
		return "", err
	}
	return mcpclient.Login(ctx, cfg, req.Browser)
}

// Logout deletes the stored login of req's server, and revokes its
// tokens where the authorization server offers revocation.
func (l *Local) Logout(ctx context.Context, req LoginRequest) (string, error) {
	cfg, err := l.server(req.Server)
	if err != nil {
		return "", err
	}
	return mcpclient.Logout(ctx, cfg)
}

// server returns the config of the enabled mcp-client entry of l.File
// whose serverName (or id) is name, decoded as the host applies it: its
// errors name file, entry and key.
func (l *Local) server(name string) (mcpclient.Config, error) {
	c, err := host.ReadComposition(l.File, nil)
	if err != nil {
		return mcpclient.Config{}, err
	}
	var names []string
	for i := range c.Entries {
		e := &c.Entries[i]
		if e.Name != mcpclient.PluginName || e.Disabled {
			continue
		}
		cfg, err := host.Decode[mcpclient.Config](e)
		if err != nil {
			return mcpclient.Config{}, err
		}
		if cfg.ServerName == name || e.ID == name {
			return *cfg, nil
		}
		names = append(names, cfg.ServerName)
	}
	return mcpclient.Config{}, errors.New(l.notFound(name, names))
}
