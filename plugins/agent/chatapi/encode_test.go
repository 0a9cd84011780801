package chatapi

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3"
)

// The request encoded with the messages kept from the last request is the
// request json.Marshal writes, byte for byte, also after messages were
// replaced (an answered image dropped).
func TestEncodeParamsAsMarshal(t *testing.T) {
	asst := openai.ChatCompletionAssistantMessageParam{}
	asst.Content.OfString = openai.String("calling <tools> & more")
	asst.ToolCalls = []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
		ID: "call_1", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "mcp_call", Arguments: `{"a":"<b>"}`},
	}}}
	history := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("system \u2028 text"),
		openai.UserMessage("hi <there> & ünïcode"),
		{OfAssistant: &asst},
		openai.ToolMessage("result \x01 with a control character", "call_1"),
		openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("An image:"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64,AAAA"}),
		}),
		openai.AssistantMessage("I see it."),
	}
	p := openai.ChatCompletionNewParams{Model: "m", Temperature: openai.Float(0.2), StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}}
	var enc Encoder
	check := func(msgs []openai.ChatCompletionMessageParamUnion) {
		t.Helper()
		want := p
		want.Messages = msgs
		wb, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // encoded, then from what enc kept
			got, err := EncodeParams(p, msgs, &enc, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, wb) {
				t.Fatalf("encoded\n%s\nwant\n%s", got, wb)
			}
		}
	}
	check(history)
	history = append(history, openai.UserMessage("next"))
	// The answered image replaced, as the agent does: a new message.
	history[4] = openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart("An image:"), openai.TextContentPart("[image left out]")})
	check(history)
	check(nil)
}
