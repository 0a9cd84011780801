package bearer

import (
	"crypto/subtle"
	"fmt"
	"net"
)

// MinStaticLen is the shortest static token, in bytes, a listener beyond
// loopback accepts: the gateway's and the metrics listener's alike, since
// a short token is guessed by anyone who can reach either port. 16 random
// bytes are 128 bits; `openssl rand -hex 16` prints them as 32.
const MinStaticLen = 16

// CheckStatic refuses a static token too short for a listener on addr
// (HOST:PORT): beyond loopback it needs MinStaticLen bytes; on loopback
// any token is taken (only local processes reach it). An address that
// does not parse is taken as beyond loopback. The error does not show
// the token; its caller names where the token came from.
func CheckStatic(token, addr string) error {
	h, _, err := net.SplitHostPort(addr)
	if err == nil && LoopbackHost(h) {
		return nil
	}
	if len(token) < MinStaticLen {
		return fmt.Errorf("the token is %d bytes, too short for the non-loopback address %q: use at least %d random bytes, such as `openssl rand -hex 16` prints",
			len(token), addr, MinStaticLen)
	}
	return nil
}

// HasStatic reports whether header, a request's Authorization, carries
// "Bearer TOKEN" with token: the one check of a listener's static token,
// which takes the same time whatever token was sent.
func HasStatic(header string, token []byte) bool {
	got, ok := Token(header)
	return ok && subtle.ConstantTimeCompare([]byte(got), token) == 1
}
