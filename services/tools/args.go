package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// read such arguments otherwise than the policy would.
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
		return nil, errors.New("the JSON is not valid UTF-8")
	}
	if raw[0] != '{' {
		return nil, errors.New("arguments must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // the '{'
		return nil, err
	}
	m, err := decodeObject(dec, "arguments", 1)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return m, nil
}

func decodeObject(dec *json.Decoder, path string, depth int) (map[string]any, error) {
	m := map[string]any{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string) // the decoder checks that an object's token here is a key
		if _, dup := m[key]; dup {
			return nil, fmt.Errorf("%s has the key %q twice", path, key)
		}
		v, err := decodeValue(dec, path+propertyPath(key), depth)
		if err != nil {
			return nil, err
		}
		m[key] = v
	}
	if _, err := dec.Token(); err != nil { // the '}'
		return nil, err
	}
	return m, nil
}

func decodeValue(dec *json.Decoder, path string, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= maxArgsDepth {
			return nil, fmt.Errorf("%s is nested deeper than %d", path, maxArgsDepth)
		}
		if t == '{' {
			return decodeObject(dec, path, depth+1)
		}
		list := []any{}
		for i := 0; dec.More(); i++ {
			v, err := decodeValue(dec, path+"["+strconv.Itoa(i)+"]", depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		if _, err := dec.Token(); err != nil { // the ']'
			return nil, err
		}
		return list, nil
	case json.Number:
		return number(t), nil
	}
	return tok, nil // string, bool, nil
}

// number reads a JSON number: an int64 when it is an integer that fits,
// else a float64, the largest of its sign when it is beyond range (the
// decoder has checked its syntax, so range is the only error left).
func number(n json.Number) any {
	s := string(n)
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
