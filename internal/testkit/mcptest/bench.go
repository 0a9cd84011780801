package mcptest

import (
	"slices"
	"testing"
	"time"
)

// Rotated runs a side-by-side benchmark: it warms every path warm times
// (connections, caches), then makes one timed call of each path per
// b.Loop iteration, in an order that rotates. A call that follows another
// to the same process finds that process's threads still awake, so no path
// may always go first. It returns each path's samples, in paths' order.
func Rotated(b *testing.B, warm int, paths ...func() time.Duration) [][]time.Duration {
	b.Helper()
	for range warm {
		for _, p := range paths {
			p()
		}
	}
	samples := make([][]time.Duration, len(paths))
	rotation := 0
	b.ResetTimer()
	for b.Loop() {
		for k := range paths {
			i := (rotation + k) % len(paths)
			samples[i] = append(samples[i], paths[i]())
		}
		rotation++
	}
	b.StopTimer()
	return samples
}

// Percentile returns the p-th percentile (1 to 100) of ds, which it
// leaves unsorted.
func Percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i]
}
