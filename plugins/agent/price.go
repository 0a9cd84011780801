package agent

// What a turn costs: the entry's `price` key per model, else DeepSeek's
// published prices on DeepSeek's API, applied to each request's usage at
// the time it was sent (DeepSeek bills off-peak hours at half price).

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/host"
)

// priceConfig is one model's entry under `price`, in US dollars per
// million tokens.
type priceConfig struct {
	Input *float64 `yaml:"input"`
	// CachedInput is the price of prompt tokens read from the provider's
	// cache; left out, they cost Input.
	CachedInput *float64 `yaml:"cachedInput"`
	Output      *float64 `yaml:"output"`
	// PeakHours are the hours billed at the prices above, "HH:MM-HH:MM"
	// in UTC, Monday to Friday; every other hour is billed at OffPeak
	// times them. Both or neither.
	PeakHours []string `yaml:"peakHours"`
	OffPeak   *float64 `yaml:"offPeak"`
}

// price is what a model costs, in US dollars per million tokens.
type price struct {
	Input, CachedInput, Output float64
}

// pricing is a model's price and when it is cheaper.
type pricing struct {
	peak price
	// offPeak multiplies peak outside the windows; with no windows, peak
	// is the price at every hour.
	offPeak float64
	windows []window
}

// window is a span of a weekday in UTC, minutes from midnight, [from, to).
type window struct{ from, to int }

// deepSeekPeak is DeepSeek's peak hours: 09:00–12:00 and 14:00–18:00
// Beijing time, Monday to Friday. Chinese public holidays, off-peak for
// DeepSeek, are not modelled: a cost on one reads high, never low.
var deepSeekPeak = []window{{60, 240}, {360, 600}}

// at is the price at t.
func (p pricing) at(t time.Time) price {
	if len(p.windows) == 0 {
		return p.peak
	}
	t = t.UTC()
	if wd := t.Weekday(); wd != time.Saturday && wd != time.Sunday {
		m := t.Hour()*60 + t.Minute()
		for _, w := range p.windows {
			if m >= w.from && m < w.to {
				return p.peak
			}
		}
	}
	return price{p.peak.Input * p.offPeak, p.peak.CachedInput * p.offPeak, p.peak.Output * p.offPeak}
}

// cost is what u costs when sent at t, in US dollars.
func (p pricing) cost(u Usage, t time.Time) float64 {
	pr := p.at(t)
	fresh := max(u.Prompt-u.CachedPrompt, 0)
	return (float64(fresh)*pr.Input + float64(u.CachedPrompt)*pr.CachedInput + float64(u.Completion)*pr.Output) / 1e6
}

// pricingOf returns the pricing of model: the entry's, else what is
// published of it when the entry talks to DeepSeek's API (the same name
// served elsewhere is billed at another price, so none is guessed).
func (c config) pricingOf(model string) (pricing, bool) {
	if p, ok := c.prices[model]; ok {
		return p, true
	}
	if k, ok := known(model); ok && isDeepSeekURL(c.BaseURL) {
		return k.pricing, true
	}
	return pricing{}, false
}

// checkPrices validates the `price` key into c.prices, naming the model
// and key of every problem.
func checkPrices(c *config) error {
	c.prices = make(map[string]pricing, len(c.Price))
	var errs []error
	for _, model := range slices.Sorted(maps.Keys(c.Price)) {
		p, err := parsePrice(c.Price[model])
		if err != nil {
			errs = append(errs, host.KeyErrorf("price."+model, "%w", err))
			continue
		}
		c.prices[model] = p
	}
	return errors.Join(errs...)
}

func parsePrice(pc priceConfig) (pricing, error) {
	amount := func(key string, v *float64, required bool) (float64, error) {
		if v == nil {
			if required {
				return 0, fmt.Errorf("%s is missing: give the US dollars per million tokens (0 for a free model)", key)
			}
			return 0, nil
		}
		if math.IsNaN(*v) || math.IsInf(*v, 0) || *v < 0 {
			return 0, fmt.Errorf("%s: %v is not a price; give the US dollars per million tokens, 0 or more", key, *v)
		}
		return *v, nil
	}
	var p pricing
	var err error
	if p.peak.Input, err = amount("input", pc.Input, true); err != nil {
		return p, err
	}
	if p.peak.Output, err = amount("output", pc.Output, true); err != nil {
		return p, err
	}
	p.peak.CachedInput = p.peak.Input
	if pc.CachedInput != nil {
		if p.peak.CachedInput, err = amount("cachedInput", pc.CachedInput, false); err != nil {
			return p, err
		}
	}
	if (len(pc.PeakHours) == 0) != (pc.OffPeak == nil) {
		return p, fmt.Errorf("peakHours and offPeak go together: the hours at these prices, and what every other hour is billed at (0.5 for half price)")
	}
	if pc.OffPeak == nil {
		return p, nil
	}
	if f := *pc.OffPeak; math.IsNaN(f) || f < 0 || f > 1 {
		return p, fmt.Errorf("offPeak: %v is out of range; the share of the price billed off-peak, 0 to 1 (0.5 for half price)", f)
	}
	p.offPeak = *pc.OffPeak
	for _, s := range pc.PeakHours {
		w, err := parseWindow(s)
		if err != nil {
			return p, fmt.Errorf("peakHours: %w", err)
		}
		p.windows = append(p.windows, w)
	}
	return p, nil
}

// parseWindow reads "HH:MM-HH:MM" (UTC; 24:00 ends a day).
func parseWindow(s string) (window, error) {
	bad := fmt.Errorf("%q is not a span of UTC hours such as 01:00-04:00", s)
	from, to, ok := strings.Cut(strings.TrimSpace(s), "-")
	if !ok {
		return window{}, bad
	}
	minute := func(hm string) (int, bool) {
		var h, m int
		if n, err := fmt.Sscanf(strings.TrimSpace(hm), "%d:%d", &h, &m); err != nil || n != 2 || h < 0 || m < 0 || m > 59 || h*60+m > 24*60 {
			return 0, false
		}
		return h*60 + m, true
	}
	f, ok1 := minute(from)
	t, ok2 := minute(to)
	if !ok1 || !ok2 || f >= t {
		return window{}, bad
	}
	return window{f, t}, nil
}
