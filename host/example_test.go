package host_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/dsh-host/dsh-host/host"
)

// Greeter is a service: a Go value other plugins inject by its key.
type Greeter interface{ Greet(name string) string }

// GreeterKey is declared once, in the service's package.
var GreeterKey = host.NewKey[Greeter]("example-greeter")

type greeter struct{ greeting string }

func (g greeter) Greet(name string) string { return g.greeting + ", " + name }

// Config is the greeter plugin's config; yaml tags name its keys.
type Config struct {
	Greeting string `yaml:"greeting"`
}

func init() {
	// A plugin that provides the service...
	host.Register(host.Definition[Config]{
		Name:     "example-greeter",
		Provides: []host.AnyKey{GreeterKey},
		Defaults: func() Config { return Config{Greeting: "Hello"} },
		Apply: func(s *host.Scope, cfg Config) error {
			return host.Provide[Greeter](s, GreeterKey, greeter{cfg.Greeting})
		},
	})
	// ...and one that injects it. It starts after its provider and is
	// restarted when the provider changes.
	host.Register(host.Definition[struct{}]{
		Name:   "example-welcome",
		Inject: []host.Dep{host.Require(GreeterKey)},
		Apply: func(s *host.Scope, _ struct{}) error {
			g := host.Get(s, GreeterKey)
			s.SetDetail(g.Greet("world"))
			s.OnDispose("say goodbye", func() error { return nil })
			return nil
		},
	})
}

func Example() {
	h := host.New(&host.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer h.Shutdown(context.Background())

	c, err := host.ParseComposition("composition.yml", []byte(`
plugins:
  - id: welcome
    name: example-welcome
  - id: greeter
    name: example-greeter
    config:
      greeting: ${GREETING:-Hi}
`), func(string) (string, bool) { return "", false })
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := h.Update(context.Background(), c); err != nil {
		fmt.Println(err)
		return
	}
	for _, id := range []string{"welcome", "greeter"} {
		st := host.Find(h.Status(), id)
		fmt.Printf("%s: %s %s\n", st.ID, st.State, st.Detail)
	}
	// Output:
	// welcome: active Hi, world
	// greeter: active
}

func ExampleCheck() {
	c, _ := host.ParseComposition("composition.yml", []byte(`
plugins:
  - id: greeter
    name: example-greeter
    config:
      greting: Hello
`), nil)
	fmt.Println(host.Check(c))
	// Output:
	// composition.yml:6: entry "greeter": config key greting: unknown key; did you mean greeting? (known keys: greeting)
}
