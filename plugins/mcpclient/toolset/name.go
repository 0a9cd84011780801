package toolset

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxPublicName is the model function-name limit public names must fit.
const maxPublicName = 64

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
	joined := "mcp__" + serverName + "__" + rawName
	var b strings.Builder
	b.Grow(len(joined))
	changed := false
	for _, r := range joined {
		switch {
		case r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r > 0xFFFF:
			// Two UTF-16 code units, each replaced.
			b.WriteString("__")
			changed = true
		default:
			b.WriteByte('_')
			changed = true
		}
	}
	normalized := b.String()
	if !changed && len(normalized) <= maxPublicName {
		return normalized
	}
	sum := sha256.Sum256([]byte(serverName + "\x00" + rawName))
	const keep = maxPublicName - 13 // room for "_" and 12 hex digits
	if len(normalized) > keep {
		normalized = normalized[:keep]
	}
	return normalized + "_" + hex.EncodeToString(sum[:])[:12]
}
