package stdio

import (
	"bytes"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// lineLogger writes a child's stderr to the instance logger, one record per
// line, and keeps the last few lines to explain a failed start.
type lineLogger struct {
	logger *slog.Logger
	mu     sync.Mutex
	buf    []byte
	tail   []string // the last stderrTail lines, each cut at stderrTailLine
	// errorLine is the last line that names an error (errorLinePattern),
	// cut: a failed start quotes it even when more lines followed it
	// than the tail keeps (node's stack after "Cannot find module").
	errorLine string
	// sandboxed is set for a server in the sandbox: a permission error
	// on its stderr is then logged once as the sandbox's possible doing.
	sandboxed, permWarned bool
	// permLine is the first such line, for a failed start's hint.
	permLine string
}

// permissionPattern matches a line that reports the kernel's refusal.
// This file's patterns compile at first use, not in every command's
// package initialisation (issue 44: 23 KB for a server that may never
// write to stderr).
var permissionPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b(?:EACCES|EPERM|permission denied|operation not permitted)\b`)
})

// absPath finds an absolute path in a line ("sh: 1: /opt/rt/bin/rt:
// Permission denied").
var absPath = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:^|[\s'"(])(/[^\s:'"()]+)`) })

// refused returns the path of the first permission error, or "": the
// last one before the error's words ("sh: /a/server.sh: 2: exec:
// /opt/rt: Permission denied" names /opt/rt), else the first after them
// ("EACCES: permission denied, open '/x'").
func (l *lineLogger) refused() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	at := permissionPattern().FindStringIndex(l.permLine)
	if at == nil {
		return ""
	}
	if ms := absPath().FindAllStringSubmatch(l.permLine[:at[0]], -1); len(ms) > 0 {
		return ms[len(ms)-1][1]
	}
	if m := absPath().FindStringSubmatch(l.permLine[at[1]:]); m != nil {
		return m[1]
	}
	return ""
}

// sandboxWiden says which keys widen the sandbox.
const sandboxWiden = "widen sandbox.read, sandbox.write, sandbox.connect, sandbox.udp, sandbox.unix or sandbox.limits, or set sandbox.mode: off (dsh-host sandbox check shows what is granted; docs/sandbox.md)"

// errorLinePattern matches a line that names an error: "Error: ...",
// "Error [ERR_MODULE_NOT_FOUND]: ...", "ModuleNotFoundError: ...",
// "java.io.IOException: ...", "panic: ...", "error: ...".
var errorLinePattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^\s*(?:uncaught\s+)?[\w$.]*(?:error|exception|fatal|panic)(?:\s*\[[^\]]*\])?:\s*\S`)
})

// What a failed start quotes of the server's stderr.
const (
	stderrTail     = 5
	stderrTailLine = 300
)

// last returns the last lines of stderr, the unfinished one included;
// the last line that names an error comes first when it is not among them.
func (l *lineLogger) last() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.tail)
	if rest := strings.TrimSpace(string(l.buf)); rest != "" {
		out = append(out, cutLine(rest))
	}
	if len(out) > stderrTail {
		out = out[len(out)-stderrTail:]
	}
	if l.errorLine != "" && !slices.Contains(out, l.errorLine) {
		if len(out) == stderrTail {
			out = out[1:]
		}
		out = append([]string{l.errorLine}, out...)
	}
	return out
}

func cutLine(s string) string {
	if len(s) <= stderrTailLine {
		return s
	}
	n := stderrTailLine
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
	for len(l.buf) > maxStderrLine {
		l.emit(l.buf[:maxStderrLine])
		l.buf = l.buf[maxStderrLine:]
	}
	return len(p), nil
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit(l.buf)
		l.buf = nil
	}
}

func (l *lineLogger) emit(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(line) > maxStderrLine {
		line = line[:maxStderrLine]
	}
	if len(line) == 0 {
		return
	}
	l.logger.Info("server stderr", "line", string(line))
	if len(l.tail) == stderrTail {
		l.tail = append(l.tail[:0], l.tail[1:]...)
	}
	l.tail = append(l.tail, cutLine(string(line)))
	if errorLinePattern().Match(line) {
		l.errorLine = l.tail[len(l.tail)-1]
	}
	if l.sandboxed && !l.permWarned && permissionPattern().Match(line) {
		l.permWarned = true
		l.permLine = string(line)
		l.logger.Warn("sandbox: the server reported a permission error, which the sandbox may have caused; if it needs more, "+sandboxWiden, "line", cutLine(string(line)))
	}
}
