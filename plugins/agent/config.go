package agent

import (
	"errors"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/agent/schemaprofile"
)

// config is an agent entry's config.
type config struct {
	// BaseURL is the OpenAI-compatible API root; requests go to
	// BaseURL + "/chat/completions".
	BaseURL string `yaml:"baseUrl"`
	Model   string `yaml:"model"`
	// APIKeyEnv names the environment variable holding the API key; empty
	// sends no key (a local server).
	APIKeyEnv string `yaml:"apiKeyEnv"`
	// System is extra system prompt text, before the assembly's sections.
	System string `yaml:"system"`
	// ImageInput says the model takes images: tool results' images reach
	// it as image parts.
	ImageInput bool `yaml:"imageInput"`
	// MaxSteps bounds the tool rounds of one turn.
	MaxSteps int `yaml:"maxSteps"`
	// Temperature is sent when set.
	Temperature *float64 `yaml:"temperature"`
	// TimeoutMs bounds each model request, from sending it to the end of
	// its stream; 0 means no bound.
	TimeoutMs int `yaml:"timeoutMs"`
	// ContextWindow is the model's context in tokens; 0 takes the known
	// window of the model (knownWindow).
	ContextWindow int `yaml:"contextWindow"`
	// CompactAt is the share of the window a request may reach before
	// the older turns are summarised (compact.go).
	CompactAt float64 `yaml:"compactAt"`
	// SchemaProfile says how tool parameter schemas are sent: "auto"
	// (gemini for Google's API, else as registered), "standard" or
	// "gemini" (package schemaprofile).
	SchemaProfile string `yaml:"schemaProfile"`
	// ReasoningContent says whether the model's reasoning goes back to
	// it: "auto" (send for DeepSeek's API), "send" or "omit"
	// (reasoning.go).
	ReasoningContent string `yaml:"reasoningContent"`
	// Price is what each model costs (price.go); a model not named takes
	// DeepSeek's published prices on DeepSeek's API, and has no cost
	// shown elsewhere.
	Price map[string]priceConfig `yaml:"price"`
	// WorkContext puts the working directory, the date, the platform and
	// the AGENTS.md and CLAUDE.md files of the directory and its parents
	// in the system prompt (workcontext.go).
	WorkContext bool `yaml:"workContext"`

	prices map[string]pricing // Price, validated
}

func defaults() config {
	return config{
		BaseURL:          "https://api.deepseek.com",
		Model:            defaultModel,
		APIKeyEnv:        "DEEPSEEK_API_KEY",
		MaxSteps:         25,
		TimeoutMs:        600_000,
		CompactAt:        0.8,
		SchemaProfile:    schemaprofile.Auto,
		ReasoningContent: reasoningAuto,
		WorkContext:      true,
	}
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validate checks c, naming the key of every problem.
func validate(c *config) error {
	var errs []error
	c.BaseURL = strings.TrimRight(strings.TrimSpace(c.BaseURL), "/")
	if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, host.KeyErrorf("baseUrl", "%q is not an http(s) URL (for example https://api.deepseek.com)", c.BaseURL))
	}
	c.Model = strings.TrimSpace(c.Model)
	if c.Model == "" {
		errs = append(errs, host.KeyErrorf("model", "must not be empty (for example %s)", defaultModel))
	} else if err := retiredModel(c.Model, c.BaseURL); err != nil {
		errs = append(errs, host.KeyErrorf("model", "%w", err))
	}
	if c.APIKeyEnv != "" && !envName.MatchString(c.APIKeyEnv) {
		errs = append(errs, host.KeyErrorf("apiKeyEnv", "%q is not an environment variable name; it names the variable that holds the key, never the key itself", c.APIKeyEnv))
	}
	if c.MaxSteps < 1 || c.MaxSteps > 1000 {
		errs = append(errs, host.KeyErrorf("maxSteps", "%d is out of range 1..1000", c.MaxSteps))
	}
	if t := c.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > 2) {
		errs = append(errs, host.KeyErrorf("temperature", "%v is out of range 0..2", *t))
	}
	if c.TimeoutMs < 0 {
		errs = append(errs, host.KeyErrorf("timeoutMs", "%d must be 0 (no bound) or more", c.TimeoutMs))
	}
	if c.ContextWindow != 0 && c.ContextWindow < minContextWindow {
		errs = append(errs, host.KeyErrorf("contextWindow", "%d is too small; give the model's context in tokens (at least %d), or leave it out for the model's known window", c.ContextWindow, minContextWindow))
	}
	if math.IsNaN(c.CompactAt) || c.CompactAt <= 0 || c.CompactAt > 1 {
		errs = append(errs, host.KeyErrorf("compactAt", "%v is out of range; a share of contextWindow above 0, at most 1 (default 0.8)", c.CompactAt))
	}
	if err := checkProfile(c); err != nil {
		errs = append(errs, err)
	}
	if err := checkReasoning(c); err != nil {
		errs = append(errs, err)
	}
	if err := checkPrices(c); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// minContextWindow is the smallest contextWindow taken: below it no
// conversation fits, with or without compaction.
const minContextWindow = 256

// oneOf trims *v and, when it is none of choices, names key and what to
// use instead (hint).
func oneOf(key string, v *string, noun, hint string, choices ...string) error {
	*v = strings.TrimSpace(*v)
	if slices.Contains(choices, *v) {
		return nil
	}
	return host.KeyErrorf(key, "%q is not a %s; use %s", *v, noun, hint)
}

func checkProfile(c *config) error {
	return oneOf("schemaProfile", &c.SchemaProfile, "profile",
		"auto (gemini for Google's API, else standard), standard (schemas as registered) or gemini (rewritten for Gemini)",
		schemaprofile.Auto, schemaprofile.Standard, schemaprofile.Gemini)
}
