package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/cel-go/cel"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/services/policy"
	"github.com/dsh-host/dsh-host/services/policy/rules"
	"github.com/dsh-host/dsh-host/services/tools"
)

// fuzzWhens are the deny rules' conditions the fuzz combines with its
// arguments: %s is a string of the input, %d a number.
var fuzzWhens = []string{
	`args.path.startsWith(%s)`,
	`args.n > %d`,
	`args.n == %d`,
	`%s in args.tags`,
	`args.a.b == %s`,
	`size(args.path) > %d`,
	`args.path == %s || args.n < %d`,
}

// FuzzDenyNeverReachesTheTool: for any arguments and a deny rule, a call
// whose arguments, as a server decodes them (encoding/json, numbers as
// doubles, Infinity beyond range), satisfy the rule's when never reaches
// the tool; nor does one on which the when fails. It runs the registry's
// whole pipeline (decoding, the guard) over an in-process tool.
//
//	go test -run '^$' -fuzz FuzzDenyNeverReachesTheTool -fuzztime 20s ./services/policy
func FuzzDenyNeverReachesTheTool(f *testing.F) {
	for _, seed := range []struct {
		args string
		when uint8
		s    string
		n    int64
	}{
		{`{"path":"/etc/passwd","pad":1e400}`, 0, "/etc", 0},
		{`{"path":["/etc/passwd"]}`, 0, "/etc", 0},
		{`{"path":"/tmp","path":"/etc/passwd"}`, 0, "/etc", 0},
		{`{"n":1e400}`, 1, "", 10},
		{`{"n":9007199254740993}`, 2, "", 9007199254740993},
		{`{"n":3.0}`, 2, "", 3},
		{`{"tags":["a","b"]}`, 3, "b", 0},
		{`{"a":{"b":"x"},"a":{"b":"y"}}`, 4, "x", 0},
		{`{"path":"/x","n":-1e400}`, 6, "/y", 0},
	} {
		f.Add([]byte(seed.args), seed.when, seed.s, seed.n)
	}
	env, err := cel.NewEnv(cel.Variable("args", cel.DynType), cel.CrossTypeNumericComparisons(true))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args []byte, which uint8, s string, n int64) {
		s = strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r == '/' || r == '.' {
				return r
			}
			return -1
		}, s)
		when := fuzzWhens[int(which)%len(fuzzWhens)]
		switch strings.Count(when, "%") {
		case 2:
			when = fmt.Sprintf(when, strconv.Quote(s), n)
		default:
			if strings.Contains(when, "%s") {
				when = fmt.Sprintf(when, strconv.Quote(s))
			} else {
				when = fmt.Sprintf(when, n)
			}
		}
		reg := tools.New(nil)
		scope := host.NewScope(context.Background(), "fuzz", nil)
		defer func() { _ = scope.Dispose(0) }()
		var reached atomic.Int32
		if _, err := reg.Register(scope, tools.Definition{Name: "mcp__fx__op", Origin: tools.Origin{Server: "fx", RawName: "op"},
			Execute: func(context.Context, tools.Call) (tools.Output, error) {
				reached.Add(1)
				return tools.Output{Value: "ok"}, nil
			}}); err != nil {
			t.Fatal(err)
		}
		cfg := policy.Config{Rules: []rules.Rule{{Tools: []string{"mcp__fx__op"}, When: when, Action: rules.Deny}}}
		if err := policy.ValidateConfig(&cfg); err != nil {
			t.Skip(err) // a condition this input makes invalid
		}
		p, err := policy.New(reg, cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		reg.OnGuard(scope, "*", p.Guard)
		res := reg.Execute(context.Background(), tools.Caller{Kind: tools.CallerGateway}, "mcp__fx__op", args)
		if reached.Load() == 0 {
			return
		}
		if res.Err != nil {
			t.Fatalf("the tool ran and the call failed: %v", res.Err)
		}
		// It ran: the server's view of the arguments must not satisfy the
		// when, and the when must evaluate on it.
		view, ok := serverView(args)
		if !ok {
			t.Fatalf("%s reached the tool, but a server's decoder refuses it", args)
		}
		ast, iss := env.Compile(when)
		if iss.Err() != nil {
			t.Fatal(iss.Err())
		}
		prog, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := prog.Eval(map[string]any{"args": view})
		if err != nil {
			return // the server's view of numbers may fail where ours holds exactly
		}
		if b, _ := out.Value().(bool); b {
			t.Fatalf("%s reached the tool past deny when %s, which its server's view satisfies", args, when)
		}
	})
}

// serverView decodes args as a server might: encoding/json with doubles,
// a number beyond range as Infinity (what Python and JavaScript read).
func serverView(args []byte) (any, bool) {
	if len(bytes.TrimSpace(args)) == 0 {
		return map[string]any{}, true
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	return doubles(v), true
}

func doubles(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = doubles(e)
		}
	case []any:
		for i, e := range x {
			x[i] = doubles(e)
		}
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil && !math.IsInf(f, 0) {
			return math.NaN()
		}
		return f
	}
	return v
}
