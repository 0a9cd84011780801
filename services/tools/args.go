package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dsh-host/dsh-host/internal/schemafast"
)

// ErrInvalidArguments marks a call whose arguments the registry refused
// before any guard or the tool saw them: not one JSON object read without
// loss, or not matching the tool's input schema. The error is an
// *ArgumentsError.
var ErrInvalidArguments = errors.New("invalid arguments")

// ArgumentsError says why a call's arguments were refused.
type ArgumentsError struct {
	Tool string
	// Path is where in the arguments the problem is: "arguments",
	// "arguments.path", "arguments.items[2]".
	Path string
	// Detail is the problem: the schema's message, or why the JSON cannot
	// be read.
	Detail string
	// Schema is true for a mismatch with the input schema, false for
	// arguments that are not one readable JSON object.
	Schema bool
}

func (e *ArgumentsError) Error() string {
	if e.Schema {
		return fmt.Sprintf("arguments of %q do not match its input schema at %s: %s", e.Tool, e.Path, e.Detail)
	}
	return fmt.Sprintf("arguments of %q cannot be read: %s", e.Tool, e.Detail)
}

// Is makes every ArgumentsError match ErrInvalidArguments.
func (e *ArgumentsError) Is(target error) bool { return target == ErrInvalidArguments }

// Arguments returns the call's arguments decoded: the one view of them
// that the registry's schema check, every guard and the policy read. The
// registry decodes them once per call, after the pre-execute hooks, so
// this is what the tool receives; a Call made elsewhere decodes here.
//
// Numbers are kept as written: an integer that fits is an int64, any other
// number a float64 (one beyond a float64's range is the largest float64
// of its sign, not an error). A key given twice, invalid UTF-8, anything
// but one object, or nesting deeper than 512 is an error: the server may
// read such arguments otherwise than the policy would. The map is shared
// by every guard of the call: read it, do not modify it.
func (c Call) Arguments() (map[string]any, error) {
	if c.decoded != nil {
		return c.decoded.args, c.decoded.err
	}
	return DecodeArgs(c.Args)
}

// decodedArgs is a Call's arguments, decoded once.
type decodedArgs struct {
	args map[string]any
	err  error
}

// maxArgsDepth bounds the nesting of arguments.
const maxArgsDepth = 512

// DecodeArgs decodes a call's arguments as Call.Arguments describes. An
// empty raw is the empty object.
func DecodeArgs(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return map[string]any{}, nil
	}
	if !utf8.Valid(raw) {
		// encoding/json would read each bad byte as U+FFFD; a server may not.
		return nil, errors.New("the JSON is not valid UTF-8")
	}
	if raw[0] != '{' {
		return nil, errors.New("arguments must be a JSON object")
	}
	if !json.Valid(raw) {
		// Unmarshal says what is wrong, and where.
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		return nil, errors.New("not valid JSON")
	}
	p := argParser{raw: raw}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// argsError is a problem at a place in the arguments; the path is built
// on the way out, so that a call that succeeds builds none.
type argsError struct {
	path, msg string
}

func (e *argsError) Error() string { return "arguments" + e.path + " " + e.msg }

// within prefixes err's path with seg.
func within(seg string, err error) error {
	if e, ok := err.(*argsError); ok {
		return &argsError{path: seg + e.path, msg: e.msg}
	}
	return err
}

// argParser decodes JSON that json.Valid accepted: it decides only what
// encoding/json would decide otherwise (numbers as written, a key twice,
// depth), in one pass.
type argParser struct {
	raw []byte
	i   int
}

func (p *argParser) space() {
	for p.i < len(p.raw) {
		switch p.raw[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *argParser) value(depth int) (any, error) {
	p.space()
	switch c := p.raw[p.i]; c {
	case '{', '[':
		if depth >= maxArgsDepth {
			return nil, &argsError{msg: fmt.Sprintf("is nested deeper than %d", maxArgsDepth)}
		}
		if c == '{' {
			return p.object(depth + 1)
		}
		return p.array(depth + 1)
	case '"':
		return p.str()
	case 't':
		p.i += len("true")
		return true, nil
	case 'f':
		p.i += len("false")
		return false, nil
	case 'n':
		p.i += len("null")
		return nil, nil
	}
	start := p.i
	for p.i < len(p.raw) && strings.IndexByte("+-0123456789.eE", p.raw[p.i]) >= 0 {
		p.i++
	}
	return number(string(p.raw[start:p.i])), nil
}

func (p *argParser) object(depth int) (any, error) {
	p.i++ // {
	m := map[string]any{}
	for {
		p.space()
		if p.raw[p.i] == '}' {
			p.i++
			return m, nil
		}
		if p.raw[p.i] == ',' {
			p.i++
			p.space()
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		if _, dup := m[key]; dup {
			// encoding/json keeps the last; a server's parser may keep
			// the first.
			return nil, &argsError{msg: fmt.Sprintf("has the key %q twice", key)}
		}
		p.space()
		p.i++ // :
		v, err := p.value(depth)
		if err != nil {
			return nil, within(propertyPath(key), err)
		}
		m[key] = v
	}
}

func (p *argParser) array(depth int) (any, error) {
	p.i++ // [
	list := []any{}
	for {
		p.space()
		if p.raw[p.i] == ']' {
			p.i++
			return list, nil
		}
		if p.raw[p.i] == ',' {
			p.i++
		}
		v, err := p.value(depth)
		if err != nil {
			return nil, within("["+strconv.Itoa(len(list))+"]", err)
		}
		list = append(list, v)
	}
}

// str reads a string: as it is written when it has no escape, through
// encoding/json's unquoting when it has.
func (p *argParser) str() (string, error) {
	start := p.i
	escaped := false
	p.i++
	for p.raw[p.i] != '"' {
		if p.raw[p.i] == '\\' {
			escaped = true
			p.i++
		}
		p.i++
	}
	p.i++
	if !escaped {
		return string(p.raw[start+1 : p.i-1]), nil
	}
	if loneSurrogate(p.raw[start+1 : p.i-1]) {
		// A lone surrogate (\ud800): encoding/json reads U+FFFD, another
		// parser the surrogate itself.
		return "", &argsError{msg: "has a string with a lone UTF-16 surrogate escape"}
	}
	var s string
	if err := json.Unmarshal(p.raw[start:p.i], &s); err != nil {
		return "", err
	}
	return s, nil
}

// loneSurrogate reports whether body (a string's text between its quotes,
// valid JSON) has a \u escape of a UTF-16 surrogate that is not half of a
// high-low pair. It reads the escapes themselves: a written U+FFFD beside
// one must not hide it.
func loneSurrogate(body []byte) bool {
	high := false // the escape before was a high surrogate
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			if high {
				return true
			}
			continue
		}
		i++
		if body[i] != 'u' {
			if high {
				return true
			}
			continue
		}
		u, _ := strconv.ParseUint(string(body[i+1:i+5]), 16, 16)
		i += 4
		switch {
		case u >= 0xD800 && u < 0xDC00:
			if high {
				return true
			}
			high = true
		case u >= 0xDC00 && u < 0xE000:
			if !high {
				return true
			}
			high = false
		default:
			if high {
				return true
			}
		}
	}
	return high
}

// number reads a JSON number: an int64 when it is an integer that fits,
// else a float64, the largest of its sign when it is beyond range (the
// decoder has checked its syntax, so range is the only error left).
func number(s string) any {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && math.IsInf(f, 0) {
		return math.Copysign(math.MaxFloat64, f)
	}
	return f
}

// inputSchema is a tool's InputSchema, resolved at its first call.
type inputSchema struct {
	once     sync.Once
	resolved *jsonschema.Resolved
	fast     *schemafast.Checker
	// unusable says why the schema cannot be checked (a draft the
	// validator does not implement, a $ref it cannot resolve); "" when it
	// can.
	unusable string
	warned   atomic.Bool // the unusable schema was logged
}

func (s *inputSchema) load(raw json.RawMessage) {
	s.once.Do(func() {
		rs, err := resolveSchema(raw)
		if err == nil {
			if v := rs.Schema().Schema; !slices.Contains(validatableDrafts(), v) {
				err = fmt.Errorf("the $schema %q is not a draft the validator implements (draft-07, 2020-12)", v)
			}
		}
		if err != nil {
			s.unusable = err.Error()
			return
		}
		s.resolved, s.fast = rs, schemafast.Compile(rs)
	})
}

// validatableDrafts are the $schema values jsonschema-go validates.
func validatableDrafts() []string {
	return []string{"", "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2020-12/schema"}
}

// checkArgs decodes call's arguments once (storing them on call for the
// guards) and validates them against e's input schema.
func (r *Registry) checkArgs(e *entry, call *Call) error {
	args, err := DecodeArgs(call.Args)
	call.decoded = &decodedArgs{args: args, err: err}
	if e.def.ChecksArguments {
		return nil
	}
	if err != nil {
		return &ArgumentsError{Tool: call.Name, Path: "arguments", Detail: err.Error()}
	}
	if e.input == nil {
		return nil
	}
	e.input.load(e.def.InputSchema)
	if e.input.resolved == nil {
		if e.input.warned.CompareAndSwap(false, true) {
			r.log().Warn("tools: the input schema cannot be checked; the tool's arguments go unchecked", "tool", call.Name, "why", e.input.unusable)
		}
		return nil
	}
	if e.input.fast.Valid(args) {
		return nil
	}
	verr := e.input.resolved.Validate(args)
	if verr == nil {
		return nil
	}
	path, detail := locate(e.input.resolved.Schema(), args, "arguments", verr)
	return &ArgumentsError{Tool: call.Name, Path: path, Detail: detail, Schema: true}
}
