package registry

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Server is one version of a server, as its server.json describes it.
type Server struct {
	Name        string     `json:"name"`
	Title       string     `json:"title,omitempty"`
	Description string     `json:"description,omitempty"`
	Version     string     `json:"version"`
	WebsiteURL  string     `json:"websiteUrl,omitempty"`
	Repository  Repository `json:"repository"`
	Packages    []Package  `json:"packages,omitempty"`
	Remotes     []Remote   `json:"remotes,omitempty"`
}

// Repository is where a server's source is.
type Repository struct {
	URL    string `json:"url,omitempty"`
	Source string `json:"source,omitempty"`
}

// Package is a way to run a server locally: a package of a package
// registry (npm, PyPI, an OCI image...) and what its command line needs.
type Package struct {
	RegistryType    string `json:"registryType"`
	RegistryBaseURL string `json:"registryBaseUrl,omitempty"`
	Identifier      string `json:"identifier"`
	Version         string `json:"version,omitempty"`
	// RuntimeHint is the runner the publisher suggests (npx, uvx, docker).
	RuntimeHint          string     `json:"runtimeHint,omitempty"`
	Transport            Transport  `json:"transport"`
	RuntimeArguments     []Argument `json:"runtimeArguments,omitempty"`
	PackageArguments     []Argument `json:"packageArguments,omitempty"`
	EnvironmentVariables []Input    `json:"environmentVariables,omitempty"`
}

// Transport is how a package speaks MCP: stdio, or an HTTP endpoint it
// serves (streamable-http, sse).
type Transport struct {
	Type    string  `json:"type"`
	URL     string  `json:"url,omitempty"`
	Headers []Input `json:"headers,omitempty"`
}

// Remote is an endpoint the publisher runs.
type Remote = Transport

// Registry types and transports dsh-host knows.
const (
	TypeNPM  = "npm"
	TypePyPI = "pypi"
	TypeOCI  = "oci"

	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// Input is a value the server needs from whoever runs it: an environment
// variable or a header (Name), or an argument's value.
type Input struct {
	Name        string   `json:"name,omitempty"`
	Description string   `json:"description,omitempty"`
	Value       string   `json:"value,omitempty"`
	Default     string   `json:"default,omitempty"`
	Format      string   `json:"format,omitempty"`
	Choices     []string `json:"choices,omitempty"`
	IsRequired  bool     `json:"isRequired,omitempty"`
	IsSecret    bool     `json:"isSecret,omitempty"`
}

// Argument is one command-line argument: positional (its value alone) or
// named (Name, such as --port, then its value when it has one).
type Argument struct {
	Input
	Type       string `json:"type"`
	ValueHint  string `json:"valueHint,omitempty"`
	IsRepeated bool   `json:"isRepeated,omitempty"`
}

// Argument kinds.
const (
	Positional = "positional"
	Named      = "named"
)

// Limits on a document, far above what real ones hold: a bigger one is
// refused rather than shown or written.
const (
	maxString = 4096
	maxName   = 200
	maxItems  = 64
)

// patterns are the registry's naming rules, compiled at their first use
// rather than in the package initialisation every command pays (issue 44).
var patterns = sync.OnceValue(func() *rules {
	return &rules{
		serverName: regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`),
		npmName:    regexp.MustCompile(`^(@[a-z0-9-~][a-z0-9-._~]*/)?[a-z0-9-~][a-z0-9-._~]*$`),
		pypiName:   regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`),
		anyName:    regexp.MustCompile(`^[^\s-][^\s]*$`),
		version:    regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.+_~-]*$`),
		envName:    regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`),
		headerName: regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"),
		optionName: regexp.MustCompile(`^-{1,2}[A-Za-z0-9][A-Za-z0-9._-]*$`),
	}
})

type rules struct {
	// serverName is the registry's rule: a reverse-DNS namespace, a slash,
	// a name.
	serverName *regexp.Regexp
	// npmName is an npm package name, scoped or not.
	npmName *regexp.Regexp
	// pypiName is a PyPI project name (PEP 508).
	pypiName *regexp.Regexp
	// anyName is the identifier of a package of another type.
	anyName *regexp.Regexp
	// version is a version or a tag: no spaces, no shell or path tricks,
	// not an option.
	version *regexp.Regexp
	// envName is an environment variable's name.
	envName *regexp.Regexp
	// headerName is an HTTP header's name (RFC 9110 token).
	headerName *regexp.Regexp
	// optionName is a named argument: an option.
	optionName *regexp.Regexp
}

// ValidName reports whether name can be a registry server's name.
func ValidName(name string) bool {
	return len(name) <= maxName && patterns().serverName.MatchString(name)
}

// Validate checks what dsh-host reads of s and refuses a hostile document:
// a value of the wrong shape, a control character in text a terminal or
// the composition would get, a name or package that is an option or a
// path, more items than a server has. Each problem names its field.
func (s *Server) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, a...)))
	}
	text := func(field, v string) {
		if err := checkText(v); err != nil {
			bad(field, "%v", err)
		}
	}
	if !ValidName(s.Name) {
		bad("name", "%q is not a registry server name (namespace/name, letters, digits, . _ -)", clip(s.Name))
	}
	if !patterns().version.MatchString(s.Version) || len(s.Version) > maxName {
		bad("version", "%q is not a version", clip(s.Version))
	}
	text("title", s.Title)
	if err := checkProse(s.Description); err != nil {
		bad("description", "%v", err)
	}
	text("websiteUrl", s.WebsiteURL)
	text("repository.url", s.Repository.URL)
	if len(s.Packages) > maxItems || len(s.Remotes) > maxItems {
		bad("packages", "more than %d packages or remotes", maxItems)
		return errors.Join(errs...)
	}
	for i, p := range s.Packages {
		errs = append(errs, p.validate(fmt.Sprintf("packages[%d]", i))...)
	}
	for i, r := range s.Remotes {
		errs = append(errs, r.validate(fmt.Sprintf("remotes[%d]", i), true)...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("server.json of %q is refused: %w", clip(s.Name), errors.Join(errs...))
	}
	return nil
}

func (p *Package) validate(at string) []error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", at, field, fmt.Sprintf(format, a...)))
	}
	var rule *regexp.Regexp
	switch p.RegistryType {
	case TypeNPM:
		rule = patterns().npmName
	case TypePyPI:
		rule = patterns().pypiName
	default:
		// OCI images, MCPB bundles (URLs), NuGet...: add does not run
		// them, so any name without spaces will do.
		rule = patterns().anyName
	}
	// A package of a type dsh-host does not run is not refused: it is
	// skipped when one is picked. Its identifier must still be harmless.
	if len(p.Identifier) > maxName || rule != nil && !rule.MatchString(p.Identifier) || strings.HasPrefix(p.Identifier, "-") || checkText(p.Identifier) != nil {
		bad("identifier", "%q is not a %s package name", clip(p.Identifier), p.RegistryType)
	}
	if p.Version != "" && (!patterns().version.MatchString(p.Version) || len(p.Version) > maxName) {
		bad("version", "%q is not a version", clip(p.Version))
	}
	for field, v := range map[string]string{"registryType": p.RegistryType, "registryBaseUrl": p.RegistryBaseURL, "runtimeHint": p.RuntimeHint} {
		if err := checkText(v); err != nil {
			bad(field, "%v", err)
		}
	}
	for _, e := range p.Transport.validate(at+".transport", false) {
		errs = append(errs, e)
	}
	if len(p.RuntimeArguments)+len(p.PackageArguments)+len(p.EnvironmentVariables) > 3*maxItems {
		bad("packageArguments", "too many arguments and variables")
		return errs
	}
	for i, a := range p.RuntimeArguments {
		errs = append(errs, a.validate(fmt.Sprintf("%s.runtimeArguments[%d]", at, i))...)
	}
	for i, a := range p.PackageArguments {
		errs = append(errs, a.validate(fmt.Sprintf("%s.packageArguments[%d]", at, i))...)
	}
	for i, e := range p.EnvironmentVariables {
		field := fmt.Sprintf("%s.environmentVariables[%d]", at, i)
		if !patterns().envName.MatchString(e.Name) || len(e.Name) > maxName {
			errs = append(errs, fmt.Errorf("%s.name: %q is not an environment variable's name", field, clip(e.Name)))
		}
		errs = append(errs, e.validate(field)...)
	}
	return errs
}

func (t *Transport) validate(at string, remote bool) []error {
	var errs []error
	switch t.Type {
	case TransportStdio:
		if remote {
			errs = append(errs, fmt.Errorf("%s.type: a remote is streamable-http or sse, not stdio", at))
		}
	case TransportStreamableHTTP, TransportSSE:
		if remote && !strings.HasPrefix(t.URL, "https://") && !strings.HasPrefix(t.URL, "http://") {
			errs = append(errs, fmt.Errorf("%s.url: %q is not an http(s) URL", at, clip(t.URL)))
		}
	default:
		errs = append(errs, fmt.Errorf("%s.type: %q is not stdio, streamable-http or sse", at, clip(t.Type)))
	}
	if err := checkText(t.URL); err != nil || strings.ContainsAny(t.URL, " \"'<>\\") {
		errs = append(errs, fmt.Errorf("%s.url: %q is not a URL", at, clip(t.URL)))
	}
	if len(t.Headers) > maxItems {
		return append(errs, fmt.Errorf("%s.headers: more than %d", at, maxItems))
	}
	for i, h := range t.Headers {
		field := fmt.Sprintf("%s.headers[%d]", at, i)
		if !patterns().headerName.MatchString(h.Name) || len(h.Name) > maxName {
			errs = append(errs, fmt.Errorf("%s.name: %q is not a header name", field, clip(h.Name)))
		}
		errs = append(errs, h.validate(field)...)
	}
	return errs
}

func (a *Argument) validate(at string) []error {
	var errs []error
	switch a.Type {
	case Positional:
	case Named:
		if !patterns().optionName.MatchString(a.Name) || len(a.Name) > maxName {
			errs = append(errs, fmt.Errorf("%s.name: %q is not an option (--name)", at, clip(a.Name)))
		}
	default:
		errs = append(errs, fmt.Errorf("%s.type: %q is not positional or named", at, clip(a.Type)))
	}
	if err := checkText(a.ValueHint); err != nil {
		errs = append(errs, fmt.Errorf("%s.valueHint: %w", at, err))
	}
	return append(errs, a.Input.validate(at)...)
}

func (in *Input) validate(at string) []error {
	var errs []error
	if err := checkProse(in.Description); err != nil {
		errs = append(errs, fmt.Errorf("%s.description: %w", at, err))
	}
	for field, v := range map[string]string{"value": in.Value, "default": in.Default, "format": in.Format, "name": in.Name} {
		if err := checkText(v); err != nil {
			errs = append(errs, fmt.Errorf("%s.%s: %w", at, field, err))
		}
	}
	if len(in.Choices) > maxItems {
		errs = append(errs, fmt.Errorf("%s.choices: more than %d", at, maxItems))
	}
	for _, c := range in.Choices {
		if err := checkText(c); err != nil {
			errs = append(errs, fmt.Errorf("%s.choices: %w", at, err))
			break
		}
	}
	return errs
}

// checkText refuses text that is not UTF-8, too long, or holds a control
// character (an escape sequence would drive the terminal that shows it,
// a line break forge lines of the composition's comments).
func checkText(s string) error {
	if len(s) > maxString {
		return fmt.Errorf("longer than %d bytes", maxString)
	}
	if !utf8.ValidString(s) {
		return errors.New("not UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Cf, r) {
			return fmt.Errorf("holds the control character %U", r)
		}
	}
	return nil
}

// checkProse is checkText for a description, which may break lines and
// hold tabs (a terminal shows them; nothing is written of it).
func checkProse(s string) error {
	return checkText(strings.NewReplacer("\n", " ", "\t", " ").Replace(s))
}

// clip is v made safe to quote in an error: at most 80 bytes, and %q
// escapes the rest.
func clip(v string) string {
	if len(v) > 80 {
		return v[:80] + "…"
	}
	return v
}
