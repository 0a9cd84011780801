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
// required), and each call's arguments are checked against that schema and
// decoded into an In before fn sees them: a missing required property, an
// unknown one or a value of the wrong type is a tool error naming the
// problem, and fn does not run. fn's value is the Output's Value, rendered
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
	resolved, err := schema.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("tools.Func %q: %v", name, err))
	}
	return Definition{
		Name:        name,
		Description: description,
		InputSchema: raw,
		Execute: func(ctx context.Context, call Call) (Output, error) {
			// json.Unmarshal alone would let a missing required property
			// through as its zero value, and take "ZONE" for "zone": the
			// schema the model was shown is what the arguments must fit.
			var generic any
			if err := json.Unmarshal(call.Args, &generic); err != nil {
				return Output{}, fmt.Errorf("arguments are not JSON: %w", err)
			}
			if err := resolved.Validate(generic); err != nil {
				return Output{}, fmt.Errorf("arguments do not fit the tool's input schema: %w", err)
			}
			var in In
			if err := json.Unmarshal(call.Args, &in); err != nil {
				return Output{}, fmt.Errorf("arguments do not fit the tool's input schema: %w", err)
			}
			v, err := fn(ctx, in)
			return Output{Value: v}, err
		},
	}
}
