package askbroker

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func benchComposition(b *testing.B) string {
	dir, err := os.MkdirTemp("", "dshb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	b.Setenv("DSH_HOME", dir)
	return filepath.Join(dir, "composition.yml")
}

// BenchmarkAskNoConsole is what every unanswerable ask now pays before
// it is denied when no console is attached.
func BenchmarkAskNoConsole(b *testing.B) {
	file := benchComposition(b)
	for b.Loop() {
		if _, err := AskConsole(context.Background(), file, call, time.Minute); err != ErrNoConsole {
			b.Fatal(err)
		}
	}
}

// BenchmarkAskAnswered is one ask's round trip to a console that answers
// at once.
func BenchmarkAskAnswered(b *testing.B) {
	file := benchComposition(b)
	br, err := Listen(file)
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := br.Subscribe(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events {
			if ev.Ask != nil {
				br.Answer(ev.Ask.ID, Once)
			}
		}
	}()
	for b.Loop() {
		if a, err := AskConsole(context.Background(), file, call, time.Minute); a != Once {
			b.Fatal(a, err)
		}
	}
	cancel()
	<-done
}
