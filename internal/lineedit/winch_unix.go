//go:build unix

package lineedit

import (
	"os"
	"os/signal"
	"syscall"
)

// watchWidth calls f when the terminal's size changes, until stop.
func watchWidth(f func(), stop <-chan struct{}) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ch:
				f()
			case <-stop:
				return
			}
		}
	}()
}
