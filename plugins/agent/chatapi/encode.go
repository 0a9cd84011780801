package chatapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/openai/openai-go/v3"
)

// Encoder keeps the JSON of a conversation's messages from one request
// to the next. openai-go's encoder re-compacts every nested value it
// marshals, so encoding a 200-turn history (0.5 MB) took most of a
// step's time, again at every step, although only the last messages are
// new. A message is known by the pointer its union holds: history
// messages are never changed in place, only replaced (dropAnsweredImages,
// compaction, Resume), and a replaced one has a new pointer. Only the
// messages of the last request are kept.
type Encoder struct {
	mu sync.Mutex
	m  map[any][]byte
}

// messageKey is the pointer m's union holds; nil for an empty union.
func messageKey(m openai.ChatCompletionMessageParamUnion) any {
	switch {
	case m.OfUser != nil:
		return m.OfUser
	case m.OfAssistant != nil:
		return m.OfAssistant
	case m.OfTool != nil:
		return m.OfTool
	case m.OfSystem != nil:
		return m.OfSystem
	case m.OfDeveloper != nil:
		return m.OfDeveloper
	case m.OfFunction != nil:
		return m.OfFunction
	}
	return nil
}

// encodeMessages returns the JSON of each of msgs, as encoding/json
// writes it (what a whole request's Marshal writes for it), and their total
// length. A nil e keeps nothing.
func (e *Encoder) encodeMessages(msgs []openai.ChatCompletionMessageParamUnion) ([][]byte, int, error) {
	var next map[any][]byte
	if e != nil {
		e.mu.Lock()
		defer e.mu.Unlock()
		next = make(map[any][]byte, len(msgs))
	}
	raws := make([][]byte, len(msgs))
	n := 0
	for i, m := range msgs {
		k := messageKey(m)
		var raw []byte
		if e != nil && k != nil {
			raw = e.m[k]
		}
		if raw == nil {
			var err error
			if raw, err = json.Marshal(m); err != nil {
				return nil, 0, fmt.Errorf("encode message %d: %w", i, err)
			}
		}
		if next != nil && k != nil {
			next[k] = raw
		}
		raws[i] = raw
		n += len(raw) + 1
	}
	if e != nil {
		e.m = next
	}
	return raws, n, nil
}

// emptyMessages is how a request without messages starts when encoded.
const emptyMessages = `{"messages":[]`

// EncodeParams encodes p with msgs as its messages, those known to e from
// the last request not encoded again, and extra (more fields, starting
// with a comma) before its closing brace: the bytes of json.Marshal(p)
// with p.Messages = msgs, extra spliced in, in one allocation.
func EncodeParams(p openai.ChatCompletionNewParams, msgs []openai.ChatCompletionMessageParamUnion, e *Encoder, extra []byte) ([]byte, error) {
	splice := func(b []byte) ([]byte, error) {
		if len(extra) == 0 {
			return b, nil
		}
		if len(b) < 2 || b[len(b)-1] != '}' {
			return nil, fmt.Errorf("unexpected %q", b)
		}
		return append(append(b[:len(b)-1:len(b)-1], extra...), '}'), nil
	}
	if len(msgs) == 0 {
		b, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		return splice(b)
	}
	p.Messages = []openai.ChatCompletionMessageParamUnion{}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(b, []byte(emptyMessages)) || b[len(b)-1] != '}' {
		// Not the layout this relies on (a change of openai-go): the
		// whole request is encoded at once.
		p.Messages = msgs
		if b, err = json.Marshal(p); err != nil {
			return nil, err
		}
		return splice(b)
	}
	raws, n, err := e.encodeMessages(msgs)
	if err != nil {
		return nil, err
	}
	rest := b[len(emptyMessages) : len(b)-1]
	out := make([]byte, 0, len(`{"messages":[]`)+n+len(rest)+len(extra)+1)
	out = append(out, `{"messages":[`...)
	for i, raw := range raws {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, raw...)
	}
	out = append(out, ']')
	out = append(out, rest...)
	out = append(out, extra...)
	return append(out, '}'), nil
}

// Share makes e start from what from kept, the map shared: a request
// replaces it and never changes an entry, so both may go on (a benchmark
// starts many conversations from one long one).
func (e *Encoder) Share(from *Encoder) {
	from.mu.Lock()
	m := from.m
	from.mu.Unlock()
	e.mu.Lock()
	e.m = m
	e.mu.Unlock()
}
