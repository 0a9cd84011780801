//go:build !unix

package lineedit

// watchWidth: no SIGWINCH here; the width is read at each prompt.
func watchWidth(func(), <-chan struct{}) {}
