package host

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	yamlv3 "go.yaml.in/yaml/v3"
)

// The config types below cover every field form yaml.v3 knows; each is the
// config of one test plugin, registered in init.

type Common struct {
	Name  string `yaml:"name"`
	Level int    `yaml:"level"`
}

// Base is embedded without ",inline": yaml.v3 reads it as the key "base".
type Base struct {
	ID string `yaml:"id"`
}

type endpoint struct {
	Host string `yaml:"host"`
	Port int    `yaml:"port"`
}

// level decodes itself from a word.
type level int

func (l *level) UnmarshalYAML(n *yamlv3.Node) error {
	switch n.Value {
	case "low":
		*l = 1
	case "high":
		*l = 2
	default:
		return fmt.Errorf("level %q is neither low nor high", n.Value)
	}
	return nil
}

// hostPort decodes itself from "host:port" or from a mapping of any keys.
type hostPort struct {
	Host string
	Port int
}

func (h *hostPort) UnmarshalYAML(n *yamlv3.Node) error {
	if n.Kind == yamlv3.MappingNode {
		var m map[string]string
		if err := n.Decode(&m); err != nil {
			return err
		}
		h.Host = m["h"]
		h.Port, _ = strconv.Atoi(m["p"])
		return nil
	}
	host, port, ok := strings.Cut(n.Value, ":")
	if !ok {
		return errors.New("want host:port")
	}
	h.Host = host
	h.Port, _ = strconv.Atoi(port)
	return nil
}

// csv is a TextUnmarshaler: a comma-separated list.
type csv []string

func (c *csv) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		return errors.New("empty list")
	}
	*c = strings.Split(string(b), ",")
	return nil
}

// mode and port are custom scalar types.
type (
	mode string
	port uint16
)

type (
	inlineStructCfg struct {
		Common `yaml:",inline"`
		Extra  string `yaml:"extra"`
	}
	inlinePtrCfg struct {
		*Common `yaml:",inline"`
		Extra   string `yaml:"extra"`
	}
	inlineMapCfg struct {
		Known string         `yaml:"known"`
		Rest  map[string]int `yaml:",inline"`
	}
	embeddedCfg struct {
		Base
		Extra string `yaml:"extra"`
	}
	pointerCfg struct {
		Endpoint *endpoint `yaml:"endpoint"`
		Other    *endpoint `yaml:"other"`
	}
	collectionsCfg struct {
		List   []endpoint          `yaml:"list"`
		Ptrs   []*endpoint         `yaml:"ptrs"`
		ByName map[string]endpoint `yaml:"byName"`
	}
	unmarshalerCfg struct {
		Level  level     `yaml:"level"`
		Levels []level   `yaml:"levels"`
		Addr   hostPort  `yaml:"addr"`
		Addrs  *hostPort `yaml:"addrs"`
	}
	textCfg struct {
		Tags csv            `yaml:"tags"`
		ByID map[string]csv `yaml:"byID"`
	}
	durationCfg struct {
		Wait  time.Duration            `yaml:"wait"`
		Waits map[string]time.Duration `yaml:"waits"`
	}
	skippedCfg struct {
		Kept    string `yaml:"kept"`
		Skipped string `yaml:"-"`
	}
	scalarCfg struct {
		Mode  mode   `yaml:"mode"`
		Port  port   `yaml:"port"`
		Modes []mode `yaml:"modes"`
	}
	anyCfg struct {
		Value any            `yaml:"value"`
		Free  map[string]any `yaml:"free"`
	}
)

// registerDecode registers a test plugin for config type C, named after it.
func registerDecode[C any](name string, defaults func() C) {
	Register(Definition[C]{Name: "test-decode-" + name, Defaults: defaults, Apply: func(*Scope, C) error { return nil }})
}

func init() {
	registerDecode("inline-struct", func() inlineStructCfg { return inlineStructCfg{Common: Common{Level: 3}} })
	registerDecode("inline-ptr", func() inlinePtrCfg { return inlinePtrCfg{} })
	registerDecode("inline-map", func() inlineMapCfg { return inlineMapCfg{Rest: map[string]int{"dflt": 1}} })
	registerDecode("embedded", func() embeddedCfg { return embeddedCfg{Base: Base{ID: "none"}} })
	registerDecode("pointer", func() pointerCfg { return pointerCfg{Other: &endpoint{Host: "localhost", Port: 80}} })
	registerDecode("collections", func() collectionsCfg { return collectionsCfg{} })
	registerDecode("unmarshaler", func() unmarshalerCfg { return unmarshalerCfg{Level: 1} })
	registerDecode("text", func() textCfg { return textCfg{Tags: csv{"default"}} })
	registerDecode("duration", func() durationCfg { return durationCfg{Wait: time.Second} })
	registerDecode("skipped", func() skippedCfg { return skippedCfg{Skipped: "default"} })
	registerDecode("scalar", func() scalarCfg { return scalarCfg{Mode: "auto", Port: 8080} })
	registerDecode("any", func() anyCfg { return anyCfg{} })
	registerDecode("noconfig", func() struct{} { return struct{}{} })
}

// parseEntryConfig parses a composition of one entry of plugin, with config
// (unindented YAML) as its config block on line 5.
func parseEntryConfig(t testing.TB, plugin, config string) Entry {
	t.Helper()
	c, err := ParseComposition("d.yml", []byte("plugins:\n  - id: e\n    name: "+plugin+"\n    config:\n"+indent(config, 6)), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Entries[0]
}

// TestDecodeAgreesWithYAML decodes each snippet three ways: through the
// host (an entry parsed from a file, and one built in code from its Config),
// and with a yaml.v3 Decoder with KnownFields over the same bytes, each over
// the plugin's defaults. All three must agree, on the value or on failing.
func TestDecodeAgreesWithYAML(t *testing.T) {
	tests := []struct {
		name, plugin, config string
		fails                bool // yaml.v3 refuses it too
	}{
		{name: "inline struct", plugin: "inline-struct", config: "name: n\nextra: x\n"},
		{name: "inline struct, defaults kept", plugin: "inline-struct", config: "extra: x\n"},
		{name: "inline pointer to struct", plugin: "inline-ptr", config: "name: n\nlevel: 2\nextra: x\n"},
		{name: "inline map takes other keys", plugin: "inline-map", config: "known: k\nanything: 1\nelse: 2\n"},
		{name: "inline map value of the wrong type", plugin: "inline-map", config: "other: x\n", fails: true},
		{name: "embedded struct", plugin: "embedded", config: "base: {id: b}\nextra: x\n"},
		{name: "embedded struct is not inline", plugin: "embedded", config: "id: b\n", fails: true},
		{name: "nil pointer to struct", plugin: "pointer", config: "endpoint: {host: h, port: 1}\n"},
		{name: "pointer to struct over defaults", plugin: "pointer", config: "other:\n  port: 8080\n"},
		{name: "null pointer", plugin: "pointer", config: "other: null\n"},
		{name: "slice and map of structs", plugin: "collections", config: "list:\n  - {host: a, port: 1}\n  - host: b\nptrs: [{port: 2}, null]\nbyName:\n  x: {host: c}\n"},
		{name: "unknown key in a slice item", plugin: "collections", config: "list: [{hots: a}]\n", fails: true},
		{name: "unknown key in a map value", plugin: "collections", config: "byName: {x: {prot: 1}}\n", fails: true},
		{name: "UnmarshalYAML", plugin: "unmarshaler", config: "level: high\nlevels: [low, high]\naddr: example.org:443\naddrs: {h: a, p: \"2\"}\n"},
		{name: "UnmarshalYAML fails", plugin: "unmarshaler", config: "level: medium\n", fails: true},
		{name: "TextUnmarshaler", plugin: "text", config: "tags: a,b,c\nbyID: {x: \"1,2\"}\n"},
		{name: "TextUnmarshaler fails", plugin: "text", config: "tags: \"\"\n", fails: true},
		{name: "time.Duration", plugin: "duration", config: "wait: 1m30s\nwaits: {a: 5ms, b: 2h}\n"},
		{name: "time.Duration not a duration", plugin: "duration", config: "wait: soon\n", fails: true},
		{name: "a - field keeps its default", plugin: "skipped", config: "kept: k\n"},
		{name: "a - field has no key", plugin: "skipped", config: "skipped: s\n", fails: true},
		{name: "custom scalar types", plugin: "scalar", config: "mode: manual\nport: 9090\nmodes: [a, b]\n"},
		{name: "custom scalar out of range", plugin: "scalar", config: "port: 70000\n", fails: true},
		{name: "any and map[string]any", plugin: "any", config: "value: {a: [1, 2]}\nfree: {deep: {er: 1}}\n"},
		{name: "anchor, alias and merge key", plugin: "collections", config: "list:\n  - &a {host: a, port: 1}\n  - <<: *a\n    port: 2\n  - *a\n"},
		{name: "unknown key in a merged mapping", plugin: "collections", config: "byName:\n  x: &a {hots: a}\n  y: {<<: *a}\n", fails: true},
		{name: "env expansion re-types a number", plugin: "scalar", config: "port: ${PORT:-7070}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := lookupPlugin("test-decode-" + tt.plugin)
			if !ok {
				t.Fatalf("no plugin test-decode-%s", tt.plugin)
			}
			want := p.newConfig()
			// yaml.v3 does not expand variables; the host does, before.
			raw := strings.ReplaceAll(tt.config, "${PORT:-7070}", "7070")
			dec := yamlv3.NewDecoder(strings.NewReader(raw))
			dec.KnownFields(true)
			yerr := dec.Decode(want)

			e := parseEntryConfig(t, "test-decode-"+tt.plugin, tt.config)
			fromFile, errs := decodeConfig(p, &e)
			code := Entry{ID: "e", Name: e.Name, Config: e.Config}
			fromCode, codeErrs := decodeConfig(p, &code)

			if tt.fails != (yerr != nil) {
				t.Fatalf("yaml.v3: %v; the test expects failing: %v", yerr, tt.fails)
			}
			if tt.fails {
				if errs == nil || codeErrs == nil {
					t.Errorf("host decoded what yaml.v3 refuses (%v): from file %v, from code %v", yerr, errs, codeErrs)
				}
				return
			}
			if errs != nil || codeErrs != nil {
				t.Fatalf("host: from file %v, from code %v; yaml.v3 decodes it", errs, codeErrs)
			}
			if diff := cmp.Diff(want, fromFile); diff != "" {
				t.Errorf("from file (-yaml.v3 +host):\n%s", diff)
			}
			if diff := cmp.Diff(want, fromCode); diff != "" {
				t.Errorf("from code (-yaml.v3 +host):\n%s", diff)
			}
		})
	}
}

// benchMCPConfig is shaped like mcp-client's config (which host tests cannot
// import): scalars, a list, two string maps and nested blocks.
type benchMCPConfig struct {
	Transport          string            `yaml:"transport"`
	ServerName         string            `yaml:"serverName"`
	Description        string            `yaml:"description"`
	Command            string            `yaml:"command"`
	Args               []string          `yaml:"args"`
	Env                map[string]string `yaml:"env"`
	Cwd                string            `yaml:"cwd"`
	URL                string            `yaml:"url"`
	Headers            map[string]string `yaml:"headers"`
	ToolCallTimeoutMs  int               `yaml:"toolCallTimeoutMs"`
	StartupTimeoutMs   int               `yaml:"startupTimeoutMs"`
	FailOnStartupError bool              `yaml:"failOnStartupError"`
	Reconnect          struct {
		Enabled        bool `yaml:"enabled"`
		InitialDelayMs int  `yaml:"initialDelayMs"`
		MaxDelayMs     int  `yaml:"maxDelayMs"`
		MaxAttempts    int  `yaml:"maxAttempts"`
	} `yaml:"reconnect"`
	Tools struct {
		Include []string `yaml:"include"`
		Exclude []string `yaml:"exclude"`
	} `yaml:"tools"`
	MaxResultBytes int `yaml:"maxResultBytes"`
}

func init() {
	Register(Definition[benchMCPConfig]{
		Name: "test-decode-bench",
		Defaults: func() benchMCPConfig {
			var c benchMCPConfig
			c.ToolCallTimeoutMs, c.StartupTimeoutMs, c.MaxResultBytes = 60000, 30000, 1<<20
			c.Reconnect.Enabled, c.Reconnect.InitialDelayMs, c.Reconnect.MaxDelayMs, c.Reconnect.MaxAttempts = true, 500, 30000, 10
			return c
		},
		Apply: func(*Scope, benchMCPConfig) error { return nil },
	})
}

const benchConfig = `transport: stdio
serverName: github
description: GitHub issues and pull requests
command: npx
args: [-y, "@modelcontextprotocol/server-github", --read-only, --verbose]
env:
  GITHUB_TOKEN: ghp_0123456789
  GITHUB_HOST: github.com
  HTTPS_PROXY: http://proxy:3128
  LOG_LEVEL: info
cwd: /tmp
url: ""
headers: {X-Trace: "1"}
toolCallTimeoutMs: 120000
startupTimeoutMs: 20000
failOnStartupError: true
reconnect:
  enabled: true
  initialDelayMs: 250
  maxDelayMs: 10000
  maxAttempts: 5
tools:
  include: [search_*, get_*]
  exclude: [delete_*]
maxResultBytes: 65536
`

// indent prefixes every line of s with n spaces.
func indent(s string, n int) string {
	pad := string(bytes.Repeat([]byte{' '}, n))
	var b bytes.Buffer
	for line := range bytes.Lines([]byte(s)) {
		b.WriteString(pad)
		b.Write(line)
	}
	return b.String()
}

// BenchmarkDecodeConfig decodes an mcp-client-like config side by side: from
// an entry parsed from a file, from an entry built in code (Config only),
// and, for reference, with a plain yaml.v3 Decoder over the same bytes.
func BenchmarkDecodeConfig(b *testing.B) {
	c, err := ParseComposition("bench.yml", []byte("plugins:\n  - id: gh\n    name: test-decode-bench\n    config:\n"+indent(benchConfig, 6)), nil)
	if err != nil {
		b.Fatal(err)
	}
	p, _ := lookupPlugin("test-decode-bench")
	file := c.Entries[0]
	code := Entry{ID: file.ID, Name: file.Name, Config: file.Config}
	for _, bc := range []struct {
		name  string
		entry *Entry
	}{{"file", &file}, {"code", &code}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, errs := decodeConfig(p, bc.entry); errs != nil {
					b.Fatal(errs)
				}
			}
		})
	}
	b.Run("yaml.v3", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cfg := p.newConfig()
			dec := yamlv3.NewDecoder(bytes.NewReader([]byte(benchConfig)))
			dec.KnownFields(true)
			if err := dec.Decode(cfg); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDecodeErrors checks the errors of a config: each names the entry, the
// key path and the line of the composition (the config block starts on
// line 5), unknown keys in file order, and all of them at once.
func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, plugin, config string
		want                 []string
	}{
		{
			name: "unknown keys at depth, in file order", plugin: "collections",
			config: "list:\n  - host: a\n    prt: 1\nptrs:\n  - {host: b, hst: c}\nbyName:\n  x:\n    port: 1\n  y: {pot: 2}\nextra: 1\n",
			want: []string{
				`d.yml:7: entry "e": config key list[0].prt: unknown key; did you mean port? (known keys: host, port)`,
				`d.yml:9: entry "e": config key ptrs[0].hst: unknown key; did you mean host? (known keys: host, port)`,
				`d.yml:13: entry "e": config key byName.y.pot: unknown key; did you mean port? (known keys: host, port)`,
				`d.yml:14: entry "e": config key extra: unknown key (known keys: byName, list, ptrs)`,
			},
		},
		{
			name: "inline struct, pointer and embedded struct", plugin: "pointer",
			config: "endpoint:\n  hst: h\nother: {prt: 1}\n",
			want: []string{
				`d.yml:6: entry "e": config key endpoint.hst: unknown key; did you mean host? (known keys: host, port)`,
				`d.yml:7: entry "e": config key other.prt: unknown key; did you mean port? (known keys: host, port)`,
			},
		},
		{
			name: "inline struct keys are the parent's", plugin: "inline-struct",
			config: "name: n\nlevl: 2\n",
			want:   []string{`d.yml:6: entry "e": config key levl: unknown key; did you mean level? (known keys: extra, level, name)`},
		},
		{
			name: "nothing under an inline map or a self-decoding type is unknown", plugin: "unmarshaler",
			config: "addrs: {h: a, zz: b}\nlevl: low\n",
			want:   []string{`d.yml:6: entry "e": config key levl: unknown key; did you mean level? (known keys: addr, addrs, level, levels)`},
		},
		{
			name: "type errors, each with its key and line", plugin: "collections",
			config: "list:\n  - host: a\n    port: high\nbyName: {x: {port: [1]}, y: {host: {a: b}}}\n",
			want: []string{
				"d.yml:7: entry \"e\": config key list[0].port: cannot unmarshal !!str `high` into int",
				`d.yml:8: entry "e": config key byName.x.port: cannot unmarshal !!seq into int`,
				`d.yml:8: entry "e": config key byName.y.host: cannot unmarshal !!map into string`,
			},
		},
		{
			name: "a long value is found though yaml.v3 cuts it", plugin: "scalar",
			config: "modes: [a, b]\nport: seventy-thousand\n",
			want:   []string{"d.yml:6: entry \"e\": config key port: cannot unmarshal !!str `seventy...` into host.port"},
		},
		{
			name: "a type's own unmarshaler fails", plugin: "unmarshaler",
			config: "levels: [low, medium]\n",
			want:   []string{`d.yml:5: entry "e": config key levels[1]: level "medium" is neither low nor high`},
		},
		{
			name: "a TextUnmarshaler fails", plugin: "text",
			config: "byID:\n  x: a\n  y: \"\"\n",
			want:   []string{`d.yml:7: entry "e": config key byID.y: empty list`},
		},
		{
			name: "a plugin that takes no config", plugin: "noconfig",
			config: "x: 1\n",
			want:   []string{`d.yml:5: entry "e": config key x: unknown key; plugin test-decode-noconfig takes no config here`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := lookupPlugin("test-decode-" + tt.plugin)
			e := parseEntryConfig(t, "test-decode-"+tt.plugin, tt.config)
			_, errs := decodeConfig(p, &e)
			var got []string
			for _, err := range errs {
				got = append(got, err.Error())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeErrorsInCode: an entry built in code has no lines; its errors
// give the entry's.
func TestDecodeErrorsInCode(t *testing.T) {
	p, _ := lookupPlugin("test-decode-collections")
	e := Entry{ID: "e", Name: "test-decode-collections", File: "code", Line: 9, Config: map[string]any{
		"list":   []any{map[string]any{"host": "a", "port": "high"}},
		"byName": map[string]any{"x": map[string]any{"hst": "b"}},
	}}
	_, errs := decodeConfig(p, &e)
	want := `code:9: entry "e": config key byName.x.hst: unknown key; did you mean host? (known keys: host, port)`
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("errors = %q; want %q", errs, want)
	}
	delete(e.Config, "byName")
	_, errs = decodeConfig(p, &e)
	want = "code:9: entry \"e\": config key list[0].port: cannot unmarshal !!str `high` into int"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("errors = %q; want %q", errs, want)
	}
}

// Decode gives a front end an entry's config as the host would apply it,
// typed: defaults under what the entry sets, and problems that name the
// file, entry and key.
func TestDecode(t *testing.T) {
	c, err := ParseComposition("dc.yml", []byte(`plugins:
  - {id: plain, name: test-noop}
  - {id: set, name: test-noop, config: {tags: [a]}}
  - {id: typo, name: test-noop, config: {greetng: hi}}
  - {id: bad, name: test-noop, config: {greeting: invalid}}
  - {id: nope, name: test-nope}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"", "", `dc.yml:4: entry "typo"`, `entry "bad"`, `unknown plugin "test-nope"`} {
		e := &c.Entries[i]
		cfg, err := Decode[noopConfig](e)
		if want == "" {
			if err != nil || cfg.Greeting != "hello" {
				t.Errorf("%s: %v, %v; want the default greeting", e.ID, cfg, err)
			}
			continue
		}
		if err == nil || cfg != nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, error %v, want nil and %q", e.ID, cfg, err, want)
		}
	}
}

// TestDecodeWrongType: asking for another plugin's config type is an
// error naming the entry and both types, never a zero config (a front end
// that looked up the wrong entry would act on defaults).
func TestDecodeWrongType(t *testing.T) {
	e := &Entry{ID: "n", Name: "test-noop", File: "w.yml", Line: 2}
	cfg, err := Decode[Common](e)
	want := `w.yml:2: entry "n": plugin test-noop's config is host.noopConfig, not host.Common`
	if cfg != nil || err == nil || err.Error() != want {
		t.Errorf("Decode[Common] = %v, %v; want nil, %s", cfg, err, want)
	}
	// A pointer type is not the config type either.
	if cfg, err := Decode[*noopConfig](e); cfg != nil || err == nil {
		t.Errorf("Decode[*noopConfig] = %v, %v; want an error", cfg, err)
	}
}
