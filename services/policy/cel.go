package policy

import (
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// celEnv is the environment every `when` compiles in, built once: its
// declarations never change.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("args", cel.DynType),
		cel.Variable("tool", cel.StringType),
		cel.Variable("server", cel.StringType),
		cel.Variable("caller", cel.MapType(cel.StringType, cel.DynType)),
		// JSON numbers are doubles: `args.count > 3` must compare them
		// with integer literals.
		cel.CrossTypeNumericComparisons(true),
	)
})

// compileWhen compiles a rule's `when` into a program that yields a bool.
func compileWhen(expr string) (cel.Program, error) {
	env, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
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
