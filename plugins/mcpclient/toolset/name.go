package toolset

import "github.com/dsh-host/dsh-host/services/tools"

// PublicName returns the model-facing name of the tool rawName served by
// the server configured as serverName: "mcp__<serverName>__<rawName>" when
// that is already a valid function name of at most 64 characters, and
// otherwise the name with every character outside [A-Za-z0-9_-] replaced by
// "_", cut to 51 characters, followed by "_" and the first 12 hex digits of
// sha256(serverName + "\x00" + rawName). The hash keeps distinct identities
// apart when replacement or truncation would make them collide.
//
// It is a pure function of its arguments and a stable contract: public names
// live in session histories and permission rules. Characters are counted as
// UTF-16 code units, as the original implementation did, so a character
// outside the Basic Multilingual Plane becomes "__".
func PublicName(serverName, rawName string) string {
	return tools.FitName(PublicPrefix(serverName)+rawName, tools.MaxNameLen, serverName+"\x00"+rawName)
}

// PublicPrefix starts the public name of every tool of the server
// configured as serverName: "mcp__<serverName>__". A valid serverName is at
// most 32 characters of the kind a name keeps, so FitName, which cuts a
// name's end and replaces only invalid characters, never changes it.
func PublicPrefix(serverName string) string { return "mcp__" + serverName + "__" }
