package agent

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// The instruction files read from the working directory and its parents,
// as Codex (AGENTS.md) and Claude Code (CLAUDE.md) read them.
func instructionNames() []string { return []string{"AGENTS.md", "CLAUDE.md"} }

// Bounds of the instruction files in the system prompt: a file past
// maxInstructionFile is cut, and files past maxInstructions in all are
// left out (named, so /context says so).
const (
	maxInstructionFile = 16 << 10
	maxInstructions    = 32 << 10
)

// InstructionFile is one instruction file the system prompt carries.
type InstructionFile struct {
	Path  string
	Bytes int // as read into the prompt
	// Cut is how many bytes of the file were left out.
	Cut int
	// Left says the file was left out: the nearer files took the budget.
	Left bool
}

// workContext is what the system prompt says about the work: where, when,
// on what, and the instruction files found from dir up to the repository
// root (the first directory with .git) or home, outermost first so that
// the nearest file's word comes last.
type workContext struct {
	Text  string
	Files []InstructionFile
}

func readWorkContext(dir, home string, now time.Time) workContext {
	var b strings.Builder
	fmt.Fprintf(&b, "# Environment\nWorking directory: %s\nPlatform: %s/%s\nToday's date: %s\n", dir, runtime.GOOS, runtime.GOARCH, now.Format("2006-01-02 (Monday)"))
	var dirs []string
	for d := dir; ; {
		dirs = append(dirs, d)
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil || d == home {
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	// The nearest files take the budget first; the prompt lists them
	// outermost first.
	type found struct {
		InstructionFile
		text string
	}
	var all []found
	total := 0
	for _, d := range dirs {
		for _, name := range slices.Backward(instructionNames()) {
			p := filepath.Join(d, name)
			text, cut, ok := readInstruction(p)
			if !ok {
				continue
			}
			f := found{InstructionFile: InstructionFile{Path: p, Bytes: len(text), Cut: cut}, text: text}
			if total+len(text) > maxInstructions {
				f.Bytes, f.Cut, f.text, f.Left = 0, cut+len(text), "", true
			}
			total += f.Bytes
			all = append(all, f)
		}
	}
	var files []InstructionFile
	for _, f := range slices.Backward(all) {
		files = append(files, f.InstructionFile)
		text, cut, p := f.text, f.Cut, f.Path
		if f.Left {
			fmt.Fprintf(&b, "\n# %s\n(left out: the instruction files past %d bytes are not read)\n", p, maxInstructions)
			continue
		}
		fmt.Fprintf(&b, "\n# Instructions from %s\n%s\n", p, strings.TrimSpace(text))
		if cut > 0 {
			fmt.Fprintf(&b, "(cut: %d more bytes)\n", cut)
		}
	}
	return workContext{Text: b.String(), Files: files}
}

// readInstruction reads a regular file's first maxInstructionFile bytes
// and says how many more it has.
func readInstruction(p string) (text string, cut int, ok bool) {
	// Without blocking: a FIFO named AGENTS.md must not hang the start.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", 0, false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		return "", 0, false
	}
	data, err := io.ReadAll(io.LimitReader(f, maxInstructionFile))
	if err != nil {
		return "", 0, false
	}
	return string(data), int(max(info.Size()-int64(len(data)), 0)), true
}
