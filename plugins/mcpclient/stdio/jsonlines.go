package stdio

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
)

// jsonLines passes on the lines of a stdio server's stdout that are
// JSON-RPC messages and skips every other line, logging it (cut at
// maxStderrLine): a banner, a "[INFO] starting" log line, a JSON log line
// such as pino's {"level":30,...}; any of them would end the connection in
// go-sdk. A line whose first member is "jsonrpc" passes at once (what
// every SDK writes, and go-sdk's to judge). Any other is judged on at most
// lookAhead bytes: one that ends within them passes if it is a JSON object
// with a "jsonrpc" member, or an array of such (a batch); a longer one
// passes if its first member (of its first element, for a batch) is one a
// JSON-RPC message has (rpcMembers). Blank lines and the blanks
// before a line are dropped: between messages they mean nothing. It holds
// at most lookAhead bytes of a line: the rest of a passed line streams
// through, so go-sdk's frame limit applies to it as before, and of a
// skipped one only what is logged is kept.
type jsonLines struct {
	r      io.Reader
	logger *slog.Logger

	buf     [32 << 10]byte
	pending []byte // read, not yet handed on or judged
	state   lineState
	head    []byte // the start of the line being judged, then of a passed line being handed on
	headOff int    // how much of head is handed on
	headEnd bool   // head holds the whole passed line
	dropped []byte // the start of the line being skipped
	cut     bool   // dropped is cut
	// ended is set once the server's stdout reached its end (or failed):
	// the server, not the host, ended the connection.
	ended atomic.Bool
}

type lineState int

const (
	lineStart    lineState = iota // between lines: blanks are dropped
	lineHead                      // reading a line's start into head, to judge it
	lineHeadPass                  // handing on head, the start of a passed line
	linePass                      // handing on the rest of a passed line
	lineSkip
)

// lookAhead bounds what of a line is held to judge it.
const lookAhead = 64 << 10

// rpcMembers are the members a JSON-RPC message may start with: a line
// longer than lookAhead passes when its first member is one of them.
var rpcMembers = []string{"jsonrpc", "id", "method", "params", "result", "error"}

func (j *jsonLines) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if n := j.emit(p); n > 0 {
			return n, nil
		}
		n, err := j.r.Read(j.buf[:])
		j.pending = j.buf[:n]
		if n == 0 && err != nil {
			j.ended.Store(true)
			switch j.state {
			case lineSkip:
				j.logSkipped()
				j.state = lineStart
			case lineHead:
				// An unterminated last line: judged whole.
				if j.judgeHead(true); j.state == lineHeadPass {
					continue
				}
			}
			return 0, err
		}
	}
}

// emit hands on what of pending (and head) it can, into p.
func (j *jsonLines) emit(p []byte) int {
	out := 0
	for out < len(p) && (len(j.pending) > 0 || j.state == lineHeadPass) {
		switch j.state {
		case lineStart:
			switch j.pending[0] {
			case ' ', '\t', '\r', '\n':
				j.pending = j.pending[1:]
			case '{', '[':
				j.state = lineHead
			default:
				j.skip(nil)
			}
		case lineHead:
			end := bytes.IndexByte(j.pending, '\n')
			if len(j.head) == 0 && bytes.HasPrefix(j.pending, []byte(`{"jsonrpc"`)) {
				// The usual message: no need to read it twice.
				j.state = linePass
				continue
			}
			if len(j.head) == 0 && end >= 0 && end < lookAhead {
				// The whole line is at hand: judged where it is.
				line := j.pending[:end+1]
				if rpcMessage(line) {
					j.state = linePass
				} else {
					j.pending = j.pending[end+1:]
					j.skip(line)
					j.logSkipped()
					j.state = lineStart
				}
				continue
			}
			take := j.pending
			if end >= 0 {
				take = take[:end+1]
			}
			if room := lookAhead - len(j.head); len(take) > room {
				take = take[:room]
			}
			j.head = append(j.head, take...)
			j.pending = j.pending[len(take):]
			if take[len(take)-1] == '\n' {
				j.judgeHead(true)
			} else if len(j.head) == lookAhead {
				j.judgeHead(false)
			}
		case lineHeadPass:
			n := copy(p[out:], j.head[j.headOff:])
			out += n
			j.headOff += n
			if j.headOff == len(j.head) {
				j.head, j.headOff = j.head[:0], 0
				j.state = linePass
				if j.headEnd {
					j.state = lineStart
				}
			}
		case linePass:
			line := j.pending
			end := bytes.IndexByte(line, '\n')
			if end >= 0 {
				line = line[:end+1]
			}
			n := copy(p[out:], line)
			out += n
			j.pending = j.pending[n:]
			if end >= 0 && n == len(line) {
				j.state = lineStart
			}
		case lineSkip:
			end := bytes.IndexByte(j.pending, '\n')
			chunk := j.pending
			if end >= 0 {
				chunk = chunk[:end]
			}
			if room := max(0, maxStderrLine-len(j.dropped)); len(chunk) > room {
				chunk, j.cut = chunk[:room], true
			}
			j.dropped = append(j.dropped, chunk...)
			if end < 0 {
				j.pending = nil
				continue
			}
			j.pending = j.pending[end+1:]
			j.logSkipped()
			j.state = lineStart
		}
	}
	return out
}

// judgeHead decides on the line whose start is in head: whole tells that
// head holds all of it.
func (j *jsonLines) judgeHead(whole bool) {
	pass := false
	if whole {
		pass = rpcMessage(j.head)
	} else {
		pass = rpcStart(j.head)
	}
	if pass {
		j.state, j.headEnd, j.headOff = lineHeadPass, whole, 0
		return
	}
	j.skip(j.head)
	j.head = j.head[:0]
	if whole {
		j.logSkipped()
		j.state = lineStart
	}
}

// skip starts skipping a line whose start (already read) is start.
func (j *jsonLines) skip(start []byte) {
	start = bytes.TrimRight(start, "\n")
	j.state = lineSkip
	j.cut = len(start) > maxStderrLine
	j.dropped = append(j.dropped[:0], start[:min(len(start), maxStderrLine)]...)
}

// rpcMessage reports whether line (its newline included or not) is a
// JSON-RPC message, or a batch of them.
func rpcMessage(line []byte) bool {
	line = bytes.TrimSpace(line)
	var msg struct {
		JSONRPC json.RawMessage `json:"jsonrpc"`
	}
	if len(line) > 0 && line[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(line, &batch) != nil || len(batch) == 0 {
			return false
		}
		for _, m := range batch {
			msg.JSONRPC = nil
			if json.Unmarshal(m, &msg) != nil || msg.JSONRPC == nil {
				return false
			}
		}
		return true
	}
	return json.Unmarshal(line, &msg) == nil && msg.JSONRPC != nil
}

// rpcStart reports whether the start of a line too long to judge whole
// looks like a JSON-RPC message: its first member is one of rpcMembers.
func rpcStart(head []byte) bool {
	b := bytes.TrimLeft(head, " \t\r")
	if len(b) > 0 && b[0] == '[' {
		b = bytes.TrimLeft(b[1:], " \t\r")
	}
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	b = bytes.TrimLeft(b[1:], " \t\r")
	if len(b) == 0 || b[0] != '"' {
		return false
	}
	name, _, ok := bytes.Cut(b[1:], []byte{'"'})
	return ok && slices.Contains(rpcMembers, string(name))
}

func (j *jsonLines) logSkipped() {
	line := string(bytes.TrimRight(j.dropped, "\r"))
	if j.cut {
		line += "…"
	}
	j.logger.Warn("server stdout: skipped a line that is not a JSON-RPC message (servers must log to stderr)", "line", line)
	j.dropped = j.dropped[:0]
	j.cut = false
}
