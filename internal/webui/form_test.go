package webui_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/testkit/browsertest"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
)

// shapeSchema has every kind a try-it form makes a field for.
const shapeSchema = `{"type":"object","required":["name"],"properties":{
  "name":{"type":"string","maxLength":20},
  "count":{"type":"integer"},
  "ratio":{"type":"number"},
  "on":{"type":"boolean"},
  "mode":{"enum":["a","b",3]},
  "tags":{"type":"array","items":{"type":"string","maxLength":10}},
  "either":{"oneOf":[{"type":"string"},{"type":"number"}]},
  "opts":{"type":"object","properties":{
    "depth":{"type":"integer"},
    "pairs":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string","maxLength":5}}}}}}}}`

// TestTryItForm: the form made from an input schema gives back the
// arguments it was filled with, typed as the schema says: strings,
// integers, booleans, an enum's value, arrays, nested objects and a JSON
// box for a oneOf; the fields left empty are left out.
func TestTryItForm(t *testing.T) {
	r := startRig(t)
	args, _ := json.Marshal(map[string]any{"name": "shape", "description": "A tool of every shape.", "inputSchema": json.RawMessage(shapeSchema)})
	if res, err := r.local.Call(t.Context(), app.CallRequest{Tool: "mcp__fx__rewrite-tool", Args: args}); err != nil || res.Err != nil {
		t.Fatal(err, res.Err)
	}
	mcptest.WaitFor(t, 20*time.Second, "the shape tool", func() bool {
		_, err := r.local.ToolDetail(t.Context(), app.ToolRequest{Name: "mcp__fx__shape"})
		return err == nil
	})
	b := browsertest.Start(t, 60*time.Second)
	base := origin(r.con.URL())
	f := func(path string) string { return `#try ` + path + ` [data-value]` }
	b.Do(t, chromedp.Navigate(r.con.URL()), chromedp.WaitVisible("h1"),
		chromedp.Navigate(base+"/tool?name=mcp__fx__shape"), chromedp.WaitVisible("#try"),
		chromedp.SetValue(f(`.f[data-name="name"]`), "x"),
		chromedp.SetValue(f(`.f[data-name="count"]`), "3"),
		chromedp.SetValue(f(`.f[data-name="on"]`), "true"),
		chromedp.SetValue(f(`.f[data-name="mode"]`), "3"),
		chromedp.SetValue(f(`.f[data-name="either"]`), "7"),
		chromedp.Click(`.f[data-name="tags"] > button[data-add]`),
		chromedp.Click(`.f[data-name="tags"] > button[data-add]`),
		chromedp.SetValue(`.f[data-name="tags"] > .items > .item:nth-child(1) [data-value]`, "p"),
		chromedp.SetValue(`.f[data-name="tags"] > .items > .item:nth-child(2) [data-value]`, "q"),
		chromedp.SetValue(f(`.f[data-name="depth"]`), "2"),
		chromedp.Click(`.f[data-name="pairs"] > button[data-add]`),
		chromedp.SetValue(`.f[data-name="pairs"] > .items > .item:nth-child(1) .f[data-name="k"] [data-value]`, "v"),
		chromedp.Click(`#try button[type="submit"]`),
		chromedp.WaitVisible(`#try-result pre`))
	sent, err := chromedp.Run(b.Ctx, chromedp.TextContent(`#try-args`))
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	if err := json.Unmarshal([]byte(sent), &got); err != nil {
		t.Fatalf("arguments sent %q: %v", sent, err)
	}
	json.Unmarshal([]byte(`{"name":"x","count":3,"on":true,"mode":3,"either":7,"tags":["p","q"],"opts":{"depth":2,"pairs":[{"k":"v"}]}}`), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the form sent\n%s\nwant %v", sent, want)
	}
	b.Clean(t, "the try-it form")
}
