package main

// The plugins and services this binary ships. Each registers itself from its
// package's init; a new capability is one more line here.
import (
	_ "github.com/dsh-host/dsh-host/gateway"
	_ "github.com/dsh-host/dsh-host/plugins/agent"
	_ "github.com/dsh-host/dsh-host/plugins/greeter"
	_ "github.com/dsh-host/dsh-host/plugins/mcpclient"
	_ "github.com/dsh-host/dsh-host/plugins/mcpfold"
	_ "github.com/dsh-host/dsh-host/plugins/mcpoutput"
	_ "github.com/dsh-host/dsh-host/plugins/metrics"
	_ "github.com/dsh-host/dsh-host/plugins/workspace"
	_ "github.com/dsh-host/dsh-host/services/attachments"
	_ "github.com/dsh-host/dsh-host/services/commands"
	_ "github.com/dsh-host/dsh-host/services/elicit"
	_ "github.com/dsh-host/dsh-host/services/logins"
	_ "github.com/dsh-host/dsh-host/services/policy"
	_ "github.com/dsh-host/dsh-host/services/resources"
	_ "github.com/dsh-host/dsh-host/services/settings"
	_ "github.com/dsh-host/dsh-host/services/tools"
)
