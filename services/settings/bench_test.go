package settings

import (
	"testing"
)

func BenchmarkRead(b *testing.B) {
	st := openBench(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Read[adapter](st, "mcp-adapter"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApply is Update without the disk: parse, merge, splice, verify.
func BenchmarkApply(b *testing.B) {
	f, err := parse("settings.yaml", []byte(commented))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		if _, _, _, err := apply("settings.yaml", f, "mcp-adapter", func(a *adapter) error { a.IDs["x"] = n; return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdate includes the lock, two fsyncs and the rename.
func BenchmarkUpdate(b *testing.B) {
	st := openBench(b)
	n := 0
	for b.Loop() {
		n++
		if err := Update(st, "mcp-adapter", func(a *adapter) error { a.IDs["x"] = n; return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

func openBench(b *testing.B) *Store {
	b.Helper()
	path := b.TempDir() + "/settings.yaml"
	if err := writeString(path, commented); err != nil {
		b.Fatal(err)
	}
	st, err := Open(path, discard)
	if err != nil {
		b.Fatal(err)
	}
	return st
}
