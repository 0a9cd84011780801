// Package outputs is the contract between mcp-client, which cuts a tool
// result longer than maxResultBytes and stores its whole text, and the
// mcp-output plugin, which offers the tool that reads the rest.
//
// mcp-output provides an Offer; each mcp-client instance holds it while it
// runs. The tool is registered while at least one instance holds the
// offer: only mcp-client cuts results, so a host without MCP servers pays
// no prompt bytes for it, and the tool list stays the same for as long as
// a server is configured (prompt caches keep hitting).
package outputs

import (
	"sync"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// ToolName reads the rest of a result that maxResultBytes cut: the cut
// text names it, with the stored text's id and the offset to read on from.
// Its name does not start with the fold's prefix mcp__, so the fold never
// hides it.
const ToolName = "mcp_read_output"

// PluginName is the built-in plugin that provides the Offer.
const PluginName = "mcp-output"

// Key is mcp-output's offer of ToolName.
var Key = host.NewKey[*Offer](PluginName)

// Offer registers a tool while at least one instance holds it.
type Offer struct {
	scope *host.Scope // the provider's: the tool is its registration
	reg   *tools.Registry
	def   *tools.Definition

	mu         sync.Mutex
	holders    int
	unregister func()
}

// NewOffer returns the offer of def, registered on s in reg while held.
// A nil def offers nothing (there is nothing to read), and Offers reports
// false.
func NewOffer(s *host.Scope, reg *tools.Registry, def *tools.Definition) *Offer {
	return &Offer{scope: s, reg: reg, def: def}
}

// Offers reports whether holding the offer registers a tool.
func (o *Offer) Offers() bool { return o.def != nil }

// Hold keeps the tool registered until s is disposed.
func (o *Offer) Hold(s *host.Scope) error {
	if o.def == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.holders == 0 {
		unregister, err := o.reg.Register(o.scope, *o.def)
		if err != nil {
			return err
		}
		o.unregister = unregister
	}
	o.holders++
	s.Effect(ToolName+" offer", func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.holders--; o.holders == 0 {
			o.unregister()
			o.unregister = nil
		}
	})
	return nil
}
