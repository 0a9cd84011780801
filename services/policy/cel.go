package policy

import (
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// celEnv is the environment the `when` expressions of one config compile
// in, built at the first (a millisecond's work, once per rule set).
type celEnv struct {
	env *cel.Env
	err error
}

func newCELEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("args", cel.DynType),
		cel.Variable("tool", cel.StringType),
		cel.Variable("server", cel.StringType),
		cel.Variable("caller", cel.MapType(cel.StringType, cel.DynType)),
		// An argument's integer is an int, any other number a double
		// (tools.Call.Arguments): `args.ratio > 3` must compare them
		// across types.
		cel.CrossTypeNumericComparisons(true),
	)
}

// compile compiles a rule's `when` into a program that yields a bool.
func (e *celEnv) compile(expr string) (cel.Program, error) {
	if e.env == nil && e.err == nil {
		e.env, e.err = newCELEnv()
	}
	if e.err != nil {
		return nil, fmt.Errorf("CEL environment: %w", e.err)
	}
	env := e.env
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("CEL: %v", iss.Err())
	}
	if !ast.OutputType().IsExactType(types.BoolType) && !ast.OutputType().IsExactType(types.DynType) {
		return nil, fmt.Errorf("CEL: the expression is a %s; a rule's when must be a bool", ast.OutputType())
	}
	prog, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("CEL: %w", err)
	}
	return prog, nil
}
