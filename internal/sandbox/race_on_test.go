//go:build race

package sandbox

// raceEnabled: the race detector maps its own memory in every process of
// this binary, beyond a small RLIMIT_DATA.
const raceEnabled = true
