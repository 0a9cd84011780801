package host

// Key names a service and fixes its Go type, so that providers and
// injectors agree on both without string lookups or casts scattered in
// plugin code. Declare one per service, in the service's package:
//
//	var Key = host.NewKey[*Registry]("tools")
type Key[T any] struct{ name string }

// NewKey returns the key of the service called name. Two keys with the same
// name denote the same service; declare each key once.
func NewKey[T any](name string) Key[T] {
	if name == "" {
		panic("host: NewKey with an empty name")
	}
	return Key[T]{name: name}
}

// ServiceName returns the service's name.
func (k Key[T]) ServiceName() string { return k.name }

// AnyKey is any Key, whatever its type; plugins list the services they
// provide with it.
type AnyKey interface{ ServiceName() string }

// Dep is one injected service of a plugin: its name and whether the plugin
// can run without it.
type Dep struct {
	Service  string
	Optional bool
}

// Require declares a service the plugin cannot run without: an instance
// stays pending until a provider of it is active.
func Require[T any](k Key[T]) Dep { return Dep{Service: k.name} }

// Optional declares a service the plugin uses when present. Its appearance
// or disappearance restarts the instance, like a required one.
func Optional[T any](k Key[T]) Dep { return Dep{Service: k.name, Optional: true} }
