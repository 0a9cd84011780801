package stdio

import (
	"runtime"
	"sync"
)

// onOwnThread runs start, which forks a child, on an OS thread locked to
// a goroutine that waits until release is called (once the child is
// reaped). Linux sends the parent-death signal (parentDeathSignal) when
// the forking thread exits, not the process, and Go ends a thread when a
// goroutine locked to it returns: any code of the process that locks a
// thread and returns (golang/go#27505) could otherwise kill a healthy
// server, if the server had been started on that thread before.
func onOwnThread(start func() error) (release func(), err error) {
	errc := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := start()
		errc <- err
		if err == nil {
			<-done
		}
	}()
	if err := <-errc; err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }, nil
}
