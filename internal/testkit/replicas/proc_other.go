//go:build !linux

package replicas

import "os/exec"

// dieWithParent does nothing here: only Linux tells a child that its
// parent died; Cluster.Close stops the processes.
func dieWithParent(*exec.Cmd) {}
