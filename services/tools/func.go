package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// Func returns the Definition of a tool whose arguments are an In: the
// input schema is inferred from In's type (json tags name the properties,
// a `jsonschema:"..."` tag describes one, a field without omitempty is
// required), and each call's arguments, which the registry checks against
// that schema (a missing required property, an unknown one or a value of
// the wrong type is an *ArgumentsError naming the problem, and fn does not
// run), are decoded into an In before fn sees them. fn's value is the Output's Value, rendered
// as usual (a string as plain text). Set Render or OutputSchema on the
// result when needed.
//
// Func panics when In's schema cannot be inferred (a channel, a func): a
// programmer error, found at registration.
func Func[In any](name, description string, fn func(ctx context.Context, in In) (any, error)) Definition {
	schema, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("tools.Func %q: %v", name, err))
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		panic(fmt.Sprintf("tools.Func %q: %v", name, err))
	}
	if _, err := schema.Resolve(nil); err != nil {
		panic(fmt.Sprintf("tools.Func %q: %v", name, err))
	}
	return Definition{
		Name:        name,
		Description: description,
		InputSchema: raw,
		Execute: func(ctx context.Context, call Call) (Output, error) {
			// The registry has checked the arguments against the schema
			// (a missing required property, "ZONE" for "zone"): decoding
			// them alone would not.
			var in In
			if err := json.Unmarshal(call.Args, &in); err != nil {
				return Output{}, fmt.Errorf("arguments do not fit the tool's input schema: %w", err)
			}
			v, err := fn(ctx, in)
			return Output{Value: v}, err
		},
	}
}
