package host

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// logTail is a log the host writes to and a test reads a piece at a time.
type logTail struct {
	mcptest.SyncBuffer
	mark int // what take has returned so far
}

// take returns what was written since the last take.
func (l *logTail) take() string {
	all := l.String()
	s := all[l.mark:]
	l.mark = len(all)
	return s
}

// TestReloadLog: each update logs at info what it decided (started,
// restarted, disposed, failed, how many were left alone) and at debug why,
// naming changed config keys but not their values.
func TestReloadLog(t *testing.T) {
	var out logTail
	logger := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := newHost(t, &Options{Logger: logger})
	apply(t, h, "plugins:\n  - {id: a, name: test-noop}\n  - {id: b, name: test-noop, config: {nested: {level: 1, wait: 1s}}}\n  - {id: c, name: test-noop}\n")
	out.take()

	apply(t, h, `plugins:
  - {id: a, name: test-noop}
  - {id: b, name: test-noop, config: {greeting: secret-value, nested: {level: 2, wait: 1s}}}
  - {id: d, name: test-noop}
  - {id: f, name: test-fail}
`)
	log := out.take()
	for _, want := range []string{
		`msg="composition reconciled" started="d, f" restarted=b disposed=c failed=f unchanged=2`,
		`msg="instance restarted" instance=b why="config changed: greeting, nested.level" state=active`,
		`msg="instance started" instance=d why="new entry in test.yml" state=active`,
		`msg="instance disposed" instance=c why="entry removed"`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}
	if strings.Contains(log, "secret-value") {
		t.Errorf("log shows a config value:\n%s", log)
	}

	// An update that touches nothing says so at debug only.
	apply(t, h, "plugins:\n  - {id: a, name: test-noop}\n")
	out.take()
	apply(t, h, "plugins:\n  - {id: a, name: test-noop}\n")
	if log := out.take(); !strings.Contains(log, `level=DEBUG msg="composition reconciled" unchanged=2`) {
		t.Errorf("a no-op update logged:\n%s", log)
	}
}

// TestApplyPanicLogsStack: a panic in a plugin's Apply fails the instance
// with a one-line error and logs the stack.
func TestApplyPanicLogsStack(t *testing.T) {
	var out logTail
	h := newHost(t, &Options{Logger: slog.New(slog.NewTextHandler(&out, nil))})
	apply(t, h, "plugins:\n  - {id: p, name: test-panic}\n")
	st := Find(h.Status(), "p")
	if st.State != StateFailed || strings.Contains(st.Err, "\n") || !strings.Contains(st.Err, "apply panicked") {
		t.Errorf("status = %+v", st)
	}
	if log := out.take(); !strings.Contains(log, "stack=") || !strings.Contains(log, "runtime/debug.Stack") {
		t.Errorf("log has no stack:\n%s", log)
	}
}

// TestReloadLogDisabled: an entry that is disabled is disposed, not
// restarted; one enabled again is started; one added disabled starts
// nothing and is left alone.
func TestReloadLogDisabled(t *testing.T) {
	var out logTail
	logger := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := newHost(t, &Options{Logger: logger})
	apply(t, h, "plugins:\n  - {id: a, name: test-noop}\n  - {id: b, name: test-noop, disabled: true}\n")
	if log := out.take(); !strings.Contains(log, `msg="composition reconciled" started="test-builtin, a" unchanged=1`) {
		t.Errorf("adding a disabled entry:\n%s", log)
	}
	apply(t, h, "plugins:\n  - {id: a, name: test-noop, disabled: true}\n  - {id: b, name: test-noop}\n")
	log := out.take()
	for _, want := range []string{
		`msg="composition reconciled" started=b disposed=a unchanged=1`,
		`msg="instance disposed" instance=a why=disabled`,
		`msg="instance started" instance=b why=enabled state=active`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}
}
