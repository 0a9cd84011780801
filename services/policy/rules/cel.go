package rules

import (
	"fmt"

	"strings"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
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

// celVars are the variables a `when` reads, found once when it is
// compiled: where one is unbound (a door has no arguments nor tool), a
// failure may be its absence rather than the rule's (gate.go).
type celVars uint8

const (
	readsArgs celVars = 1 << iota
	readsTool
	readsServer
	readsCaller
)

// varBits maps the environment's variables to their bits.
func varBits(name string) celVars {
	switch name {
	case "args":
		return readsArgs
	case "tool":
		return readsTool
	case "server":
		return readsServer
	case "caller":
		return readsCaller
	}
	return 0
}

// compile compiles a rule's `when` into a program that yields a bool, and
// says which variables it reads.
func (e *celEnv) compile(expr string) (cel.Program, celVars, error) {
	if e.env == nil && e.err == nil {
		e.env, e.err = newCELEnv()
	}
	if e.err != nil {
		return nil, 0, fmt.Errorf("CEL environment: %w", e.err)
	}
	env := e.env
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, 0, fmt.Errorf("CEL: %v", iss.Err())
	}
	if !ast.OutputType().IsExactType(types.BoolType) && !ast.OutputType().IsExactType(types.DynType) {
		return nil, 0, fmt.Errorf("CEL: the expression is a %s; a rule's when must be a bool", ast.OutputType())
	}
	prog, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, 0, fmt.Errorf("CEL: %w", err)
	}
	return prog, readVars(ast), nil
}

// readVars walks the checked expression for the identifiers it reads. A
// comprehension's own variable named like one (`l.exists(args, ...)`)
// counts as reading it: more rules are then read as needing what a door
// lacks, which leaves them to the calls, as before this was known.
func readVars(a *cel.Ast) celVars {
	var reads celVars
	celast.PreOrderVisit(a.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() == celast.IdentKind {
			reads |= varBits(strings.TrimPrefix(e.AsIdent(), "."))
		}
	}))
	return reads
}
