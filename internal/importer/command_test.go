package importer

import (
	"io"
	"strings"
	"testing"
)

// TestRunRefusesAHugeSource: a source past maxSource (a device or a log
// named by mistake, an endless pipe) is refused by its size, not read
// whole into memory first.
func TestRunRefusesAHugeSource(t *testing.T) {
	big := io.MultiReader(strings.NewReader("{"), repeat(' ', maxSource+1))
	err := Run(Options{Source: "-", In: big}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("Run: %v; want it refused for its size", err)
	}
}

// repeat reads as n bytes of b.
func repeat(b byte, n int64) io.Reader {
	return io.LimitReader(byteReader(b), n)
}

type byteReader byte

func (r byteReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}
