//go:build !unix

package usersock

import "io/fs"

// ownedByMe accepts fi: on Windows the directory under the user's profile
// is private by its ACL, not by a mode.
func ownedByMe(fs.FileInfo) error { return nil }

// TryLock does nothing on Windows: Listen tells a live host by connecting
// to its socket, and two hosts of one composition started in the same
// instant may both replace a stale socket.
func TryLock(string) (func(), bool, error) { return func() {}, true, nil }
