//go:build !unix

package gateway

// openFileLimit returns 0: the descriptor limit is not known here, and the
// connection cap is the configured one.
func openFileLimit() uint64 { return 0 }
