//go:build !unix

package control

import "io/fs"

// ownedByMe accepts fi: on Windows the directory under the user's profile
// is private by its ACL, not by a mode.
func ownedByMe(fs.FileInfo) error { return nil }

// lockFile does nothing on Windows: two hosts of one composition started
// in the same instant may both replace a stale socket.
func lockFile(string) (func(), error) { return func() {}, nil }
