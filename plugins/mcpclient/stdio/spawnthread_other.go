//go:build !linux

package stdio

// onOwnThread runs start: only Linux ties the parent-death signal to the
// forking thread (spawnthread_linux.go).
func onOwnThread(start func() error) (release func(), err error) {
	if err := start(); err != nil {
		return nil, err
	}
	return func() {}, nil
}
