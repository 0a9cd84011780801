package tools

import (
	"crypto/sha256"
	"encoding/hex"
)

// serverHashLen is how many hex digits of sha256(serverName) stand for a
// server whose name is cut (FitToolName): 32 bits, so that servers whose
// names share their start stay apart.
const serverHashLen = 8

// FitToolName is the name of an MCP server's tool, marker + serverName +
// "__" + rawName (marker is "mcp__" or ""), made a valid function name of
// at most limit characters (14 to MaxNameLen, as FitName) that keeps what
// tells the tool apart for a model, the tool's own name, whole wherever it
// can:
//
//   - the name itself, when it is valid and fits;
//   - FitName's (characters replaced, a hash of the identity appended),
//     when that cuts nothing;
//   - when rawName is valid, rawName whole after a shortened server part:
//     the start of serverName, "_" and 8 hex digits of sha256(serverName),
//     or the 8 digits alone when rawName leaves no room for more
//     ("mcp__everything-s_1f0c2a9b__get-tiny-image");
//   - as the last resort, the server part cut first and then the tool's,
//     followed by "_" and 12 hex digits of sha256(serverName + "\x00" +
//     rawName), as FitName.
//
// Like FitName it is a pure function of its arguments: a name is the same
// at every listing and after every restart, and a hash stands in for
// whatever was cut or replaced, so that distinct tools keep distinct names.
func FitToolName(marker, serverName, rawName string, limit int) string {
	identity := serverName + "\x00" + rawName
	full := marker + serverName + "__" + rawName
	whole, changed := sanitizeName(full)
	if !changed && len(whole) <= limit {
		return whole
	}
	if changed && len(whole) <= limit-13 {
		return withHash(whole, limit, identity)
	}
	server, _ := sanitizeName(serverName)
	raw, rawChanged := sanitizeName(rawName)
	sum := sha256.Sum256([]byte(serverName))
	h := hex.EncodeToString(sum[:])[:serverHashLen]
	if !rawChanged {
		// Room for the server's start: the rest after the marker, the
		// tool, "__", "_" and the hash.
		room := limit - len(marker) - len(raw) - 2 - 1 - serverHashLen
		switch {
		case room >= 1:
			return marker + server[:min(room, len(server))] + "_" + h + "__" + raw
		case room == 0 || room == -1:
			// No room for a letter of it: the hash alone, without its "_".
			return marker + h + "__" + raw
		}
	}
	// The tool's own name does not fit whole, or had characters replaced:
	// the server part keeps what the tool leaves, at least one character.
	room := limit - 13 - len(marker) - 2 - len(raw)
	return withHash(marker+server[:min(len(server), max(1, room))]+"__"+raw, limit, identity)
}
