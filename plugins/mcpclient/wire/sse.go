package wire

import "bytes"

// sseReader reads a Server-Sent Events stream as go-sdk does (its
// scanEventsLimited, which it does not export), fed the bytes go-sdk reads,
// as go-sdk reads them: a line ends at '\n' and loses its trailing "\r\n"
// characters; a blank line ends an event; "data" fields, trimmed, make up
// its data, joined by '\n'; "event" names it, "id" gives its id; a line
// without ':' is malformed, and so is an event past max bytes (max <= 0: no
// cap): go-sdk then fails the stream, and the reader stops.
type sseReader struct {
	max   int
	event func(name, id string, data []byte) bool // false: read no further

	line     []byte // the line read so far
	name, id string
	data     []byte
	hasData  bool
	size     int // bytes of the event so far, its lines' ends included
	done     bool
}

// feed reads b, the next bytes of the stream.
func (r *sseReader) feed(b []byte) {
	for len(b) > 0 && !r.done {
		i := bytes.IndexByte(b, '\n')
		part := b
		if i >= 0 {
			part = b[:i+1]
		}
		b = b[len(part):]
		r.size += len(part)
		if r.max > 0 && r.size > r.max {
			r.stop()
			return
		}
		r.line = append(r.line, part...)
		if i >= 0 {
			r.endLine()
		}
	}
}

// end reads the end of the stream: a last line without its '\n', and the
// event it ends.
func (r *sseReader) end() {
	if r.done {
		return
	}
	if len(r.line) > 0 {
		r.endLine()
	}
	r.dispatch()
	r.stop()
}

func (r *sseReader) endLine() {
	line := bytes.TrimRight(r.line, "\r\n")
	r.line = r.line[:0]
	if len(line) == 0 {
		r.dispatch()
		return
	}
	key, value, ok := bytes.Cut(line, []byte{':'})
	if !ok {
		r.stop()
		return
	}
	switch string(key) {
	case "event":
		r.name = string(bytes.TrimSpace(value))
	case "id":
		r.id = string(bytes.TrimSpace(value))
	case "data":
		if r.hasData {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, bytes.TrimSpace(value)...)
		r.hasData = true
	}
}

// dispatch hands on the event read, and starts the next.
func (r *sseReader) dispatch() {
	// The data is not reused: a decoded message may keep slices of it.
	name, id, data := r.name, r.id, r.data
	r.name, r.id, r.data, r.hasData, r.size = "", "", nil, false, 0
	if (len(data) > 0 || id != "") && !r.event(name, id, data) {
		r.stop()
	}
}

func (r *sseReader) stop() {
	r.done = true
	r.line, r.data = nil, nil
}
