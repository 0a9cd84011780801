package elicit

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Form is a form-mode request's schema as fields to fill.
type Form struct {
	// Fields come required first (in the schema's required order), then
	// the others by name: the schema reaches the host as a decoded JSON
	// object, whose key order is gone.
	Fields []Field
}

// Field is one property of the requested schema.
type Field struct {
	Name        string
	Title       string
	Description string
	// Type is "string", "number", "integer", "boolean" or "array" (a
	// multi-select enum).
	Type string
	// Format is a string's format: email, uri, date or date-time.
	Format   string
	Required bool
	// Default is the schema's default, nil when it has none.
	Default any
	// Options are the choices of an enum (single, or each item of a
	// multi-select), with their titles (SEP-1330; legacy enumNames too).
	Options []Option
	// Numeric and length bounds; nil when the schema sets none.
	Minimum, Maximum     *float64
	MinLength, MaxLength *int
	MinItems, MaxItems   *int
}

// Option is one choice of an enum.
type Option struct {
	Value string
	// Title is what a person reads; the value when the schema gives none.
	Title string
}

// Label is how a person is asked for the field: its title, else its name.
func (f *Field) Label() string {
	if f.Title != "" {
		return f.Title
	}
	return f.Name
}

// schema is what a form reads of a requested JSON Schema.
type schema struct {
	Type        any                `json:"type"`
	Title       string             `json:"title"`
	Description string             `json:"description"`
	Format      string             `json:"format"`
	Default     json.RawMessage    `json:"default"`
	Enum        []any              `json:"enum"`
	EnumNames   []string           `json:"enumNames"`
	OneOf       []titled           `json:"oneOf"`
	AnyOf       []titled           `json:"anyOf"`
	Items       *schema            `json:"items"`
	Properties  map[string]*schema `json:"properties"`
	Required    []string           `json:"required"`
	Minimum     *float64           `json:"minimum"`
	Maximum     *float64           `json:"maximum"`
	MinLength   *int               `json:"minLength"`
	MaxLength   *int               `json:"maxLength"`
	MinItems    *int               `json:"minItems"`
	MaxItems    *int               `json:"maxItems"`
}

type titled struct {
	Const any    `json:"const"`
	Title string `json:"title"`
}

// ParseForm reads a requested schema (any JSON-marshalable value, as
// go-sdk hands it over) into a Form. A nil schema is a form with no fields.
func ParseForm(requested any) (*Form, error) {
	if requested == nil {
		return &Form{}, nil
	}
	raw, ok := requested.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(requested)
		if err != nil {
			return nil, fmt.Errorf("the requested schema does not encode: %w", err)
		}
		raw = b
	}
	var s schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("the requested schema is not a JSON Schema object: %w", err)
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range s.Properties {
			if !required[n] && !yield(n) {
				return
			}
		}
	})
	var order []string
	for _, r := range s.Required {
		if _, ok := s.Properties[r]; ok && !slices.Contains(order, r) {
			order = append(order, r)
		}
	}
	order = append(order, names...)
	f := &Form{}
	for _, name := range order {
		fd, err := field(name, s.Properties[name], required[name])
		if err != nil {
			return nil, err
		}
		f.Fields = append(f.Fields, fd)
	}
	return f, nil
}

func field(name string, p *schema, required bool) (Field, error) {
	if p == nil {
		p = &schema{}
	}
	typ, _ := p.Type.(string)
	fd := Field{
		Name: name, Title: p.Title, Description: p.Description, Type: typ, Format: p.Format, Required: required,
		Minimum: p.Minimum, Maximum: p.Maximum, MinLength: p.MinLength, MaxLength: p.MaxLength,
		MinItems: p.MinItems, MaxItems: p.MaxItems,
	}
	switch {
	case len(p.Enum) > 0:
		if fd.Type == "" {
			fd.Type = "string"
		}
		fd.Options = options(p.Enum, p.EnumNames)
	case len(p.OneOf) > 0:
		if fd.Type == "" {
			fd.Type = "string"
		}
		fd.Options = titledOptions(p.OneOf)
	}
	if fd.Type == "array" {
		if p.Items == nil {
			return Field{}, fmt.Errorf("field %q: an array needs items with an enum (a multi-select)", name)
		}
		if len(p.Items.Enum) > 0 {
			fd.Options = options(p.Items.Enum, p.Items.EnumNames)
		} else {
			fd.Options = titledOptions(p.Items.AnyOf)
		}
		if len(fd.Options) == 0 {
			return Field{}, fmt.Errorf("field %q: an array needs items with an enum (a multi-select)", name)
		}
	}
	switch fd.Type {
	case "string", "number", "integer", "boolean", "array":
	default:
		return Field{}, fmt.Errorf("field %q has type %q; a form takes string, number, integer, boolean or a multi-select array", name, fd.Type)
	}
	if len(p.Default) > 0 && string(p.Default) != "null" {
		var v any
		if err := json.Unmarshal(p.Default, &v); err != nil {
			return Field{}, fmt.Errorf("field %q: default: %w", name, err)
		}
		if err := fd.check(v); err != nil {
			return Field{}, fmt.Errorf("field %q: its default %s does not fit it: %w", name, p.Default, err)
		}
		fd.Default = v
	}
	return fd, nil
}

func options(values []any, names []string) []Option {
	out := make([]Option, 0, len(values))
	for i, v := range values {
		s := fmt.Sprint(v)
		o := Option{Value: s, Title: s}
		if i < len(names) && names[i] != "" {
			o.Title = names[i]
		}
		out = append(out, o)
	}
	return out
}

func titledOptions(entries []titled) []Option {
	out := make([]Option, 0, len(entries))
	for _, e := range entries {
		s := fmt.Sprint(e.Const)
		o := Option{Value: s, Title: e.Title}
		if o.Title == "" {
			o.Title = s
		}
		out = append(out, o)
	}
	return out
}

// Parse reads a person's typed answer for the field: a number, a yes or
// no, an option by value, title or number in the list (a multi-select takes
// them separated by commas), or text checked against the field's format and
// bounds.
func (f *Field) Parse(text string) (any, error) {
	text = strings.TrimSpace(text)
	var v any
	switch f.Type {
	case "boolean":
		switch strings.ToLower(text) {
		case "y", "yes", "true", "1", "on":
			v = true
		case "n", "no", "false", "0", "off":
			v = false
		default:
			return nil, errors.New("answer yes or no")
		}
	case "integer":
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, errors.New("want a whole number")
		}
		v = float64(n)
	case "number":
		n, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
			return nil, errors.New("want a number")
		}
		v = n
	case "array":
		var picked []any
		for part := range strings.SplitSeq(text, ",") {
			if part = strings.TrimSpace(part); part == "" {
				continue
			}
			o, err := f.option(part)
			if err != nil {
				return nil, err
			}
			picked = append(picked, o)
		}
		if picked == nil {
			picked = []any{}
		}
		v = picked
	default:
		if len(f.Options) > 0 {
			o, err := f.option(text)
			if err != nil {
				return nil, err
			}
			v = o
		} else {
			v = text
		}
	}
	if err := f.check(v); err != nil {
		return nil, err
	}
	return v, nil
}

// option finds an option by value, title (case-insensitive) or 1-based
// number.
func (f *Field) option(s string) (string, error) {
	for _, o := range f.Options {
		if o.Value == s {
			return o.Value, nil
		}
	}
	for _, o := range f.Options {
		if strings.EqualFold(o.Title, s) {
			return o.Value, nil
		}
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(f.Options) {
		return f.Options[n-1].Value, nil
	}
	return "", fmt.Errorf("%q is not one of the choices (give a number from 1 to %d, a value or a title)", s, len(f.Options))
}

// Check checks content against the form: every required field is there and
// every value fits its field.
func (f *Form) Check(content map[string]any) error {
	var errs []error
	for i := range f.Fields {
		fd := &f.Fields[i]
		v, ok := content[fd.Name]
		if !ok {
			if fd.Required {
				errs = append(errs, fmt.Errorf("%s is required and has no default", fd.Name))
			}
			continue
		}
		if err := fd.check(v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", fd.Name, err))
		}
	}
	return errors.Join(errs...)
}

// check checks one value, as JSON decodes it (numbers are float64).
func (f *Field) check(v any) error {
	switch f.Type {
	case "boolean":
		if _, ok := v.(bool); !ok {
			return errors.New("want true or false")
		}
	case "number", "integer":
		n, ok := number(v)
		if !ok {
			return errors.New("want a number")
		}
		if f.Type == "integer" && n != math.Trunc(n) {
			return errors.New("want a whole number")
		}
		if f.Minimum != nil && n < *f.Minimum {
			return fmt.Errorf("want at least %g", *f.Minimum)
		}
		if f.Maximum != nil && n > *f.Maximum {
			return fmt.Errorf("want at most %g", *f.Maximum)
		}
	case "array":
		items, ok := v.([]any)
		if !ok {
			if ss, isStrings := v.([]string); isStrings {
				for _, s := range ss {
					items = append(items, s)
				}
				ok = true
			}
		}
		if !ok {
			return errors.New("want a list of choices")
		}
		for _, it := range items {
			if err := f.isOption(it); err != nil {
				return err
			}
		}
		if f.MinItems != nil && len(items) < *f.MinItems {
			return fmt.Errorf("pick at least %d", *f.MinItems)
		}
		if f.MaxItems != nil && len(items) > *f.MaxItems {
			return fmt.Errorf("pick at most %d", *f.MaxItems)
		}
	default:
		s, ok := v.(string)
		if !ok {
			return errors.New("want text")
		}
		if len(f.Options) > 0 {
			return f.isOption(s)
		}
		n := len([]rune(s))
		if f.MinLength != nil && n < *f.MinLength {
			return fmt.Errorf("want at least %d characters", *f.MinLength)
		}
		if f.MaxLength != nil && n > *f.MaxLength {
			return fmt.Errorf("want at most %d characters", *f.MaxLength)
		}
		return checkFormat(f.Format, s)
	}
	return nil
}

func (f *Field) isOption(v any) error {
	s, ok := v.(string)
	if ok {
		for _, o := range f.Options {
			if o.Value == s {
				return nil
			}
		}
	}
	return fmt.Errorf("%v is not one of the choices", v)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func checkFormat(format, s string) error {
	if s == "" {
		return nil
	}
	switch format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			return errors.New("want an email address such as ada@example.com")
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" {
			return errors.New("want an absolute URI such as https://example.com")
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return errors.New("want a date as YYYY-MM-DD")
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return errors.New("want a date and time as 2006-01-02T15:04:05Z")
		}
	}
	return nil
}
