//go:build !linux

package sandbox

import (
	"errors"
	"os"
	"os/exec"
)

func applyLimits(Limits) error {
	return errors.New("resource limits are applied on Linux only")
}

func limitNotes(Limits, int) []string { return nil }

func serverUID(*exec.Cmd) int { return os.Getuid() }
