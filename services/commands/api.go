// Package commands is the slash-command service: front ends (the console,
// `dsh-host command`) run commands that plugins register.
package commands

// This file fixes the API other packages build against; the mcpfold issue
// writes the implementation.

import (
	"context"
	"errors"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/tools"
)

// Key is the commands service.
var Key = host.NewKey[*Registry]("commands")

// Command is one slash command.
type Command struct {
	Name        string // ^[a-z][a-z0-9_-]*$, without the slash
	Description string
	Usage       string // hint for the arguments, e.g. "[list [server|tool] | config]"
	Handler     Handler
}

// Handler runs a command.
type Handler func(ctx context.Context, inv Invocation) Reply

// Invocation is one run of a command.
type Invocation struct {
	// Input is the text after "/name", trimmed.
	Input string
	// Caller is who runs it (its mask limits the tools it sees).
	Caller tools.Caller
}

// Reply is a command's answer: text, and whether it is an error.
type Reply struct {
	Text  string
	Error bool
}

// Registry holds the commands. (Being written in the mcpfold issue.)
type Registry struct{}

var errUnimplemented = errors.New("commands: unimplemented")

// Register adds c; a taken or invalid name is an error. With a non-nil scope
// the command goes away with it.
func (r *Registry) Register(s *host.Scope, c Command) (remove func(), err error) {
	return nil, errUnimplemented
}

// Run parses line ("/name input") and runs the command. An unknown command
// is an error reply listing the known ones.
func (r *Registry) Run(ctx context.Context, caller tools.Caller, line string) Reply {
	return Reply{Text: errUnimplemented.Error(), Error: true}
}

// List returns the commands sorted by name.
func (r *Registry) List() []Command { return nil }
