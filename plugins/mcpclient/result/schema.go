package result

import (
	"errors"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dsh-host/dsh-host/internal/schemafast"
)

// OutputSchema is a tool's resolved outputSchema with its fast check,
// which accepts the common shapes of structuredContent in a few map
// look-ups where jsonschema-go's Validate costs a call several
// microseconds; Validate still decides every other case, and words every
// refusal.
type OutputSchema struct {
	resolved *jsonschema.Resolved
	fast     *schemafast.Checker // nil when the schema is beyond it
}

// NewOutputSchema returns rs with its fast check; nil for a nil rs.
func NewOutputSchema(rs *jsonschema.Resolved) *OutputSchema {
	if rs == nil {
		return nil
	}
	return &OutputSchema{resolved: rs, fast: schemafast.Compile(rs)}
}

// Validate checks structuredContent sc against the schema. A tool that
// declares an outputSchema must send structuredContent.
func (s *OutputSchema) Validate(sc any) error {
	if sc == nil {
		return errors.New("the result has no structuredContent")
	}
	if s.fast.Valid(sc) {
		return nil
	}
	return s.resolved.Validate(sc)
}
