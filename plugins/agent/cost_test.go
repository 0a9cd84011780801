package agent

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/openaitest"
	"github.com/dsh-host/dsh-host/plugins/agent/sessions"
)

// A DeepSeek peak hour (Tuesday 02:30 UTC, 10:30 in Beijing), an
// off-peak hour of the same day, and a Saturday at the peak's hour.
var (
	tuesdayPeak    = time.Date(2026, 12, 1, 2, 30, 0, 0, time.UTC)
	tuesdayOffPeak = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	saturday       = time.Date(2026, 12, 5, 2, 30, 0, 0, time.UTC)
)

// tenK is a turn reporting 10,000 prompt tokens, cached of them read
// from the cache, and 10,000 completion tokens: well within any window,
// so that no compaction comes between the turns.
func tenK(text string, cached int) openaitest.Turn {
	return openaitest.Turn{Content: text, Usage: &openaitest.Usage{PromptTokens: 10_000, CompletionTokens: 10_000, CachedTokens: cached}}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// DeepSeek's own prices apply on DeepSeek's API, each request at the
// price of the hour it was sent: cached prompt tokens at the cache's
// price, half of everything off-peak and all weekend; the conversation
// sums the turns.
func TestCostDeepSeekPeakAndOffPeak(t *testing.T) {
	srv := openaitest.New(t, tenK("a", 4_000), tenK("b", 4_000), tenK("c", 0))
	e := start(t, srv, "")
	// The requests still go to srv: only the prices' choice reads it.
	e.agent.cfg.BaseURL = "https://api.deepseek.com"
	conv := e.agent.Main()
	// deepseek-flash at peak, per million: 6K fresh at $0.30, 4K cached
	// at $0.006, 10K out at $1.20.
	const peak = (6_000*0.30 + 4_000*0.006 + 10_000*1.20) / 1e6
	var total float64
	for _, tt := range []struct {
		at   time.Time
		want float64
	}{
		{tuesdayPeak, peak},
		{tuesdayOffPeak, peak / 2},
		{saturday, (10_000*0.30 + 10_000*1.20) / 1e6 / 2},
	} {
		e.agent.now = func() time.Time { return tt.at }
		res, err := conv.Turn(context.Background(), "hi", Output{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Usage.Priced || !near(res.Usage.Cost, tt.want) {
			t.Errorf("at %v: cost %v (priced %v), want %v", tt.at, res.Usage.Cost, res.Usage.Priced, tt.want)
		}
		total += tt.want
	}
	if s := conv.Spent(); !s.Priced || !near(s.Cost, total) || s.Prompt != 30_000 || s.CachedPrompt != 8_000 {
		t.Errorf("spent %+v, want cost %v over 30K prompt tokens, 8K cached", s, total)
	}
	if r := e.agent.costReport(); !strings.Contains(r, Dollars(total)) || !strings.Contains(r, "(off-peak)") {
		t.Errorf("/cost on a Saturday:\n%s", r)
	}
	conv.Reset()
	if s := conv.Spent(); s != (Usage{}) {
		t.Errorf("after /new: %+v", s)
	}
}

// The same model name served elsewhere has no price but the entry's: its
// cost is not shown rather than guessed from DeepSeek's list.
func TestCostUnknownElsewhere(t *testing.T) {
	srv := openaitest.New(t, tenK("a", 0))
	e := start(t, srv, "")
	res, err := e.agent.Main().Turn(context.Background(), "hi", Output{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage.Priced || res.Usage.Cost != 0 || strings.Contains(res.Usage.String(), "$") {
		t.Errorf("a model without a price was priced: %+v %q", res.Usage, res.Usage)
	}
	if r := e.agent.costReport(); !strings.Contains(r, "price.deepseek-flash") {
		t.Errorf("/cost does not say how to set a price:\n%s", r)
	}
}

// The entry's price with its own peak hours and off-peak share; a model
// switched to without a price leaves the conversation's cost unknown
// rather than short.
func TestCostConfiguredPrice(t *testing.T) {
	srv := openaitest.New(t, tenK("a", 5_000), tenK("b", 5_000), tenK("c", 0))
	e := start(t, srv, `      price:
        deepseek-flash: {input: 2, cachedInput: 1, output: 10, peakHours: ["12:00-13:00"], offPeak: 0.25}
`)
	conv := e.agent.Main()
	e.agent.now = func() time.Time { return tuesdayOffPeak.Add(30 * time.Minute) } // 12:30, its peak
	res, err := conv.Turn(context.Background(), "hi", Output{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (5_000*2 + 5_000*1 + 10_000*10.0) / 1e6; !near(res.Usage.Cost, want) {
		t.Errorf("at its peak: %v, want %v", res.Usage.Cost, want)
	}
	e.agent.now = func() time.Time { return tuesdayPeak } // 02:30, its off-peak
	if res, err = conv.Turn(context.Background(), "hi", Output{}); err != nil {
		t.Fatal(err)
	}
	if want := (5_000*2 + 5_000*1 + 10_000*10.0) / 1e6 / 4; !near(res.Usage.Cost, want) {
		t.Errorf("off its peak: %v, want %v", res.Usage.Cost, want)
	}
	e.agent.SetModel("other")
	if res, err = conv.Turn(context.Background(), "hi", Output{}); err != nil {
		t.Fatal(err)
	}
	if res.Usage.Priced || conv.Spent().Priced {
		t.Errorf("a turn of a model without a price: %+v, spent %+v", res.Usage, conv.Spent())
	}
}

// Each mistake in a price names the model and the key.
func TestPriceConfigErrors(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tt := range []struct {
		p    priceConfig
		want string
	}{
		{priceConfig{Output: f(1)}, "input is missing"},
		{priceConfig{Input: f(1), Output: f(-1)}, "output: -1"},
		{priceConfig{Input: f(1), Output: f(math.NaN())}, "output: NaN"},
		{priceConfig{Input: f(1), Output: f(1), OffPeak: f(0.5)}, "peakHours and offPeak go together"},
		{priceConfig{Input: f(1), Output: f(1), PeakHours: []string{"01:00-04:00"}, OffPeak: f(2)}, "offPeak: 2 is out of range"},
		{priceConfig{Input: f(1), Output: f(1), PeakHours: []string{"04:00-01:00"}, OffPeak: f(0.5)}, `"04:00-01:00" is not a span`},
		{priceConfig{Input: f(1), Output: f(1), PeakHours: []string{"1am"}, OffPeak: f(0.5)}, `"1am" is not a span`},
	} {
		cfg := defaults()
		cfg.Price = map[string]priceConfig{"m1": tt.p}
		err := validate(&cfg)
		if err == nil || !strings.Contains(err.Error(), "price.m1") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want price.m1 and %q", tt.p, err, tt.want)
		}
	}
	cfg := defaults()
	cfg.Price = map[string]priceConfig{"m1": {Input: f(0), Output: f(0), PeakHours: []string{"00:00-24:00"}, OffPeak: f(0.5)}}
	if err := validate(&cfg); err != nil {
		t.Errorf("a free model, peak all day: %v", err)
	}
}

// A cost too small for four decimals still reads as a cost.
func TestDollars(t *testing.T) {
	for usd, want := range map[float64]string{0: "$0.0000", 0.00001: "<$0.0001", 0.0198: "$0.0198", 3.456: "$3.46"} {
		if got := Dollars(usd); got != want {
			t.Errorf("Dollars(%v) = %q, want %q", usd, got, want)
		}
	}
}

// A resumed session's cost is that of its saved turns; a session of a
// model without a price stays without one.
func TestCostResumed(t *testing.T) {
	srv := openaitest.New(t, tenK("a", 0), tenK("b", 4_000))
	e := start(t, srv, `      price:
        deepseek-flash: {input: 2, cachedInput: 1, output: 10}
`)
	dir := t.TempDir()
	sess, err := sessions.New(dir, "/c.yml", e.agent.Model())
	if err != nil {
		t.Fatal(err)
	}
	conv := e.agent.Main()
	conv.Record(sess)
	for range 2 {
		if _, err := conv.Turn(context.Background(), "hi", Output{}); err != nil {
			t.Fatal(err)
		}
	}
	spent := conv.Spent()
	conv.Reset()
	ls, err := sessions.Open(dir, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := conv.Resume(ls); err != nil {
		t.Fatal(err)
	}
	got := conv.Spent()
	if !got.Priced || !near(got.Cost, spent.Cost) || got.Prompt != 20_000 || got.CachedPrompt != 4_000 {
		t.Errorf("resumed: %+v, before: %+v", got, spent)
	}
}
