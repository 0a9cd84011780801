package agent

import (
	"fmt"

	"github.com/dsh-host/dsh-host/plugins/agent/chatapi"
)

// DeepSeek's models, as its Models & Pricing page lists them
// (api-docs.deepseek.com/quick_start/pricing): both think by default, both
// take 1M tokens. deepseek-v4-flash is an older name DeepSeek still takes,
// served and billed as deepseek-flash; deepseek-chat and deepseek-reasoner
// were retired on 2026-07-24.
const defaultModel = "deepseek-flash"

// knownModel is what is published of a model.
type knownModel struct {
	window int
	// pricing is the price at DeepSeek's peak hours (deepSeekPeak);
	// DeepSeek bills half of it at every other hour.
	pricing
}

// known returns what is published of model.
func known(model string) (knownModel, bool) {
	switch model {
	case "deepseek-flash", "deepseek-v4-flash":
		return knownModel{1_000_000, deepSeekPricing(price{Input: 0.30, CachedInput: 0.006, Output: 1.20})}, true
	case "deepseek-v4-pro":
		return knownModel{1_000_000, deepSeekPricing(price{Input: 1.32, CachedInput: 0.044, Output: 3.96})}, true
	}
	return knownModel{}, false
}

func deepSeekPricing(peak price) pricing {
	return pricing{peak: peak, offPeak: 0.5, windows: deepSeekPeak}
}

// defaultWindow is the window of a model whose window is not published: small
// enough for most models served today, so that compaction comes before
// the API's refusal rather than after.
const defaultWindow = 32768

// knownWindow returns the context window of model.
func knownWindow(model string) int {
	if k, ok := known(model); ok {
		return k.window
	}
	return defaultWindow
}

// isDeepSeekURL says whether base is DeepSeek's API.
func isDeepSeekURL(base string) bool {
	return chatapi.Host(base) == "api.deepseek.com"
}

// retiredModel says why model cannot be used on base: DeepSeek's API no
// longer serves its first two names.
func retiredModel(model, base string) error {
	if !isDeepSeekURL(base) || model != "deepseek-chat" && model != "deepseek-reasoner" {
		return nil
	}
	return fmt.Errorf("%s was retired by DeepSeek on 2026-07-24; use deepseek-flash (DeepSeek-V4.1-Flash, thinking by default) or deepseek-v4-pro", model)
}

// describe is /model's line about model: its window and price, when known.
func describe(model string) string {
	k, ok := known(model)
	if !ok {
		return model
	}
	window := fmt.Sprintf("%dK", k.window/1000)
	if k.window%1_000_000 == 0 {
		window = fmt.Sprintf("%dM", k.window/1_000_000)
	}
	return fmt.Sprintf("%s (%s-token context; per million tokens $%g input, $%g cached, $%g output at DeepSeek's peak hours, half that off-peak)",
		model, window, k.peak.Input, k.peak.CachedInput, k.peak.Output)
}
