//go:build !unix

package stdio

import "os/exec"

func ownProcessGroup(*exec.Cmd) {}

func killProcessGroup(*exec.Cmd) {}
