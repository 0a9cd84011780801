// Package settings is the user's settings file ($DSH_HOME/settings.yaml),
// read and updated one section at a time.
//
// The file is a YAML mapping of section name to section value; each plugin
// owns one section (the folding plugin keeps its server ids under
// "mcp-adapter", for instance):
//
//	# my settings
//	mcp-adapter:
//	  serverIds: {github: 1}
//
// [Read] decodes one section into a typed value. [Update] changes one
// section under an advisory lock on settings.yaml.lock, re-reading the file
// under the lock so that a concurrent writer in another process loses
// nothing, and writes it atomically (temporary file, fsync, rename). Only
// the updated section's lines are rewritten: every other byte of the file,
// comments and blank lines included, stays as it was, and comments inside
// the section are carried over where their keys remain. [Watch] follows
// hand edits.
//
// A file that does not parse is reported as a [*ParseError] with its line
// and is never overwritten: Update refuses until the user fixes it.
//
// Reads see the user file under two more layers, merged key by key with
// koanf: a project file ([WithProject]; the plugin's is .dsh/settings.yaml
// beside the composition) and environment overrides ([WithEnviron],
// [EnvPrefix]). Update writes the user file alone, from its own section,
// never from the merged view. [Store.Effective] and the /settings command
// tell where each effective value came from.
package settings

import "github.com/dsh-host/dsh-host/host"

// Key is the settings service.
var Key = host.NewKey[*Store]("settings")
