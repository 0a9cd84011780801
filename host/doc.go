// Package host runs plugin instances from a composition file and keeps them
// in step with it: the Go equivalent of a cordis loader, in the shape of a
// Caddy module system.
//
// # Plugins
//
// A plugin is registered once, by name, from its package's init, with
// [Register] and a [Definition]: the services it injects ([Require],
// [Optional]) and provides, a typed config with defaults and validation,
// the names its instances hold exclusively ([Claim]), and an Apply
// function. The binary blank-imports the plugins it ships; host imports
// none of them.
//
//	func init() {
//		host.Register(host.Definition[Config]{
//			Name:   "greeter",
//			Inject: []host.Dep{host.Require(tools.Key)},
//			Apply: func(s *host.Scope, cfg Config) error {
//				_, err := host.Get(s, tools.Key).Register(s, tools.Definition{...})
//				return err
//			},
//		})
//	}
//
// # Compositions
//
// A composition ([ReadComposition], [ParseComposition]) lists instances,
// in one file or several:
//
//	include: [composition.d/*.yml]   # more files, each with a plugins list
//	plugins:
//	  - id: github          # unique, stable: reloads diff by it
//	    name: mcp-client    # the registered plugin
//	    disabled: false
//	    config:
//	      env:
//	        GITHUB_TOKEN: ${GITHUB_TOKEN}
//
// The layers (the main file, then each included file) are read in order
// and their entries appended; an id defined twice is an error naming both
// places. String values expand ${VAR} and ${VAR:-default}; an unset
// variable without a default is an error naming it. [Check] decodes each
// entry's config from its YAML node into the plugin's config type, as
// yaml.v3 does, and strictly: a key the type does not have is an error
// naming the file, line, entry id and key; so is a [KeyError] a plugin's
// Validate returns, at that key's line. It also reports two entries
// claiming one name, and service cycles. Plugins marked Builtin get an
// instance with id equal to their name unless the composition lists that
// id; so do the entries of [Options].Entries.
//
// # Instances and scopes
//
// Each entry runs as an instance. Apply receives the instance's [Scope]:
// everything the instance does that outlives the call is registered on it
// and undone, last first, when the instance is disposed. Services take the
// scope in every registration (a tool, a hook, a command) and record it
// with [Scope.Effect], so a plugin never writes a teardown for them; its
// own goroutines ([Scope.Go]), timers ([Scope.AfterFunc]) and other
// cleanup ([Scope.OnDispose]) go there too. The scope's context is
// cancelled at dispose. If Apply returns an error or panics, what it
// registered is undone at once and the instance is failed (a panic's stack
// goes to the log). Register the teardown first, then do the work, so that
// a partial failure cleans itself up.
//
// # Services
//
// A service is a Go value under a typed [Key]. An instance provides it with
// [Provide]; an instance that injects it reads it with [Get] (required) or
// [Lookup] (optional); code outside any plugin, such as a front end, reads
// what a running host provides with Lookup on the [Host]. A service is
// visible only while its provider is active. An instance whose required
// service is missing is pending, and says what it waits for; it starts
// when a provider becomes active, is disposed when the provider goes away,
// and starts again when one returns. A change of provider of an optional
// service restarts the instance too. Instances start after the providers
// of what they inject, independent ones in parallel; a cycle is an error.
//
// # Reload
//
// [Host.Update] reconciles the running instances with a composition by
// id: added entries start, removed ones are disposed, changed ones
// (plugin, config or disabled) are replaced, and unchanged ones are not
// touched at all. A changed entry that runs a config that was ready is
// never left without it: a plugin with Definition.Overlap starts the new
// instance beside the old one and swaps once the new one is ready
// (Scope.Ready), any other is disposed, started anew, and started again
// with its previous config if the new one fails; either way Status says
// the previous config was kept, and why. A composition that does not parse
// or validate changes nothing. A plugin whose Apply fails leaves its
// instance failed, visible in Status, and touches no other instance;
// nothing retries it until its entry changes or [Host.Reload] is called.
// Every update that starts, restarts or disposes an instance logs at info
// what it did and how many it left alone (one that touches none, at
// debug), and at debug why (the config keys that changed).
//
// [Host.Watch] applies a file and re-applies it whenever it, or a file it
// includes, changes on disk, following editors that save by rename, one
// reload at a time: a change that arrives while instances are still
// starting waits, then the files as they are by then are applied.
//
// # Status and shutdown
//
// [Host.Status] reports every instance's [State] (pending, starting, active,
// failed, disabled), since when, and its error; [Host.OnStatus] and
// [Host.WaitStatus] follow changes. [Host.Shutdown] disposes every instance,
// dependents first, each within Options.DisposeTimeout: a stuck disposer is
// logged and abandoned, never waited on forever.
//
// # Differences from cordis
//
// A changed entry is replaced, not updated in place; unless its plugin
// declares that two instances can overlap, the old one is disposed before
// its replacement starts: an id owns exclusive things (a provided service,
// a listener) that old and new could not both hold. Plugins declare the
// services they provide, so the host can order startup and reject cycles
// before running anything. Services are found by typed keys, never by
// strings, and an instance sees the values it was started with: a new
// provider means a restart, not a value swapped under it. There are no
// nested plugins or groups: a composition is a flat list of entries.
package host
