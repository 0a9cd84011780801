package mcpclient

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/schemafast"
	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/resources"
	"github.com/dsh-host/dsh-host/services/tools"
)

// CallResult is the canonical value of a successful MCP tool call, what
// programmatic callers get: every content block and structuredContent as
// the server sent them, as go-sdk decoded them (MCPCallToolResult) and as
// JSON (MCPContent, MCPStructuredContent, MarshalJSON: go-sdk re-encodes
// them, so image and audio data are canonical base64).
//
// The JSON is made on first ask and kept: a gateway serves the decoded
// answer and the model reads the blocks' typed views, so most calls never
// encode a block again (for an image, a whole base64 encode). A value is
// immutable; a hook that replaces a result makes one with NewCallResult.
type CallResult struct {
	// answer is the result as go-sdk decoded it; nil for a value made of
	// JSON.
	answer *mcp.CallToolResult
	json   *resultJSON
}

var _ tools.MCPResult = CallResult{}

// resultJSON is a result's JSON, shared by the copies of one value.
type resultJSON struct {
	once       sync.Once
	content    []json.RawMessage
	structured json.RawMessage
}

// NewCallResult returns a result made of content blocks and
// structuredContent (nil for none), each JSON. The value keeps content
// as it is: it must not be modified after.
func NewCallResult(content []json.RawMessage, structured json.RawMessage) CallResult {
	return CallResult{json: &resultJSON{content: content, structured: structured}}
}

// fromAnswer is the value of a server's answer.
func fromAnswer(res *mcp.CallToolResult) CallResult {
	return CallResult{answer: res, json: &resultJSON{}}
}

// encoded returns the result's JSON, encoding the answer, if the value
// has one, the first time.
func (r CallResult) encoded() *resultJSON {
	if r.json == nil { // the zero value
		return &resultJSON{}
	}
	if r.answer == nil { // made of JSON
		return r.json
	}
	r.json.once.Do(func() {
		r.json.content = make([]json.RawMessage, 0, len(r.answer.Content))
		for i, b := range r.answer.Content {
			raw, err := b.MarshalJSON()
			if err != nil {
				// Not seen from go-sdk's own decoding; said in the block
				// rather than dropped.
				raw, _ = json.Marshal(&mcp.TextContent{Text: fmt.Sprintf("[block %d of the result cannot be encoded: %v]", i, err)})
			}
			r.json.content = append(r.json.content, raw)
		}
		if r.answer.StructuredContent != nil {
			// Decoded from JSON (maps, slices, numbers, strings), it
			// encodes.
			r.json.structured, _ = json.Marshal(r.answer.StructuredContent)
		}
	})
	return r.json
}

// MCPContent returns the result's content blocks, each as JSON
// (tools.MCPResult: a gateway passes them to its clients). The slice is
// the value's, shared by its copies: read it, do not modify it.
func (r CallResult) MCPContent() []json.RawMessage { return r.encoded().content }

// MCPStructuredContent returns the result's structuredContent as JSON,
// nil when the server sent none.
func (r CallResult) MCPStructuredContent() json.RawMessage { return r.encoded().structured }

// MCPCallToolResult returns a new result with the blocks and
// structuredContent as go-sdk decoded them from the server's answer
// (tools.MCPResult: a gateway serves them as they are, without decoding
// the JSON again), or nil for a value made of JSON.
func (r CallResult) MCPCallToolResult() *mcp.CallToolResult {
	if r.answer == nil {
		return nil
	}
	return &mcp.CallToolResult{Content: r.answer.Content, StructuredContent: r.answer.StructuredContent}
}

// MarshalJSON encodes the result as {"content":[...],"structuredContent":...}.
func (r CallResult) MarshalJSON() ([]byte, error) {
	j := r.encoded()
	content := j.content
	if content == nil {
		content = []json.RawMessage{}
	}
	return json.Marshal(struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	}{content, j.structured})
}

// executor returns the Execute of one tool: the raw name goes on the wire,
// the caller's ctx (and the per-call timeout) cancels the call on the
// server too, since go-sdk sends notifications/cancelled.
func (c *client) executor(t *toolInfo) func(context.Context, tools.Call) (tools.Output, error) {
	return func(ctx context.Context, call tools.Call) (tools.Output, error) {
		cn, done, err := c.acquire(ctx, t.raw)
		if err != nil {
			return tools.Output{}, err
		}
		defer done()
		params := &mcp.CallToolParams{Name: t.raw, Arguments: objectArgs(call.Args)}
		inflight, cctx := c.startCall(ctx, cn, params)
		res, err := cn.session.CallTool(cctx, params)
		c.settleLogs(ctx, cn, err)
		inflight.finish()
		c.release(func() { inflight.cancel(nil) }, err)
		if err != nil {
			return tools.Output{}, c.callError(ctx, cctx, cn, t, err)
		}
		if res.IsError {
			// The registry owns the failure path; images are not stored.
			return tools.Output{}, errors.New(joinText(project(t.raw, c.linkServer(), typedViews(res.Content), nil)))
		}
		value := fromAnswer(res)
		if t.output != nil {
			if err := validateStructured(t.output, res.StructuredContent); err != nil {
				return tools.Output{}, fmt.Errorf("%w of %q: %s: structuredContent does not match the tool's outputSchema: %v",
					tools.ErrInvalidOutput, t.public, c.label, err)
			}
		}
		if call.Caller.PassThrough {
			// Empty, not nil: nil would have the registry render the value.
			return tools.Output{Value: value, Content: []tools.Content{}}, nil
		}
		return tools.Output{Value: value, Content: c.modelContent(ctx, call.Caller, t.raw, res.Content)}, nil
	}
}

// httpReleaseDelay is how long a successful Streamable HTTP call's context
// outlives the call.
const httpReleaseDelay = time.Second

// release cancels a call's context once the call is over.
//
// Over Streamable HTTP, go-sdk hands back the result as soon as the
// response event arrives on the POST's SSE stream, and drains the rest of
// that stream in the background on the same context (its request context
// is the call's). Cancelling at once aborts the drain, and net/http then
// closes the connection instead of keeping it alive: every call would pay
// a new TCP connection. There is no hook that says the drain is done, and
// a context detached from the caller would not abort a stream the server
// never ends, so a successful HTTP call's context is released after
// releaseDelay (the end of the stream is normally already in flight; up
// to a tenth of it later, so that releases come in batches), or at
// dispose, whichever comes first. A failed call has nothing to drain.
func (c *client) release(cancel context.CancelFunc, err error) {
	if err != nil || c.cfg.Transport != TransportStreamableHTTP {
		cancel()
		return
	}
	c.mu.Lock()
	if c.stopped.Err() != nil { // disposed: releaseAll ran or is running
		c.mu.Unlock()
		cancel()
		return
	}
	// Timed under the lock, so that the queue stays in time order.
	at := time.Now().Add(c.opt.releaseDelay)
	c.releases = append(c.releases, pendingRelease{at: at, cancel: cancel})
	c.mu.Unlock()
	c.deadlines.ask(at.Add(c.releaseSlack()))
}

// callError explains a failed tools/call. Cancellation and timeouts stay
// recognizable with errors.Is; a failure below the protocol level makes the
// supervisor check the connection.
func (c *client) callError(ctx, cctx context.Context, cn *conn, t *toolInfo, err error) error {
	var timeout *callTimeout
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s: tool %q: %w", c.label, t.raw, ctx.Err())
	case errors.As(context.Cause(cctx), &timeout):
		return fmt.Errorf("%s: tool %q %s; the call was cancelled: %w", c.label, t.raw, timeout.explain(), context.DeadlineExceeded)
	}
	if answered(err) {
		return fmt.Errorf("%s: tool %q: the server answered with an error: %w", c.label, t.raw, err)
	}
	if oversized(err) {
		// No probe: the supervisor already reconnects at once, and a
		// failed ping would report a plain loss (with its backoff).
		return fmt.Errorf("%s: tool %q failed: the server sent a message over the %d MiB frame limit (this call's answer or another's); "+
			"go-sdk cannot skip such a message, so the connection was dropped, every call in flight on it failed, and it is being re-established now: %w",
			c.label, t.raw, frameLimitMiB, err)
	}
	c.requestProbe(cn)
	return fmt.Errorf("%s: tool %q failed: %w", c.label, t.raw, err)
}

// codeRejectedByTransport is the JSON-RPC code go-sdk gives a request that
// never reached the server (its jsonrpc2.ErrRejected).
const codeRejectedByTransport = -32005

// answered reports whether err is an error response from the server, as
// opposed to a failure to reach it.
func answered(err error) bool {
	var rpcErr *jsonrpc.Error
	return errors.As(err, &rpcErr) && rpcErr.Code != codeRejectedByTransport
}

// objectArgs passes a JSON object through unchanged and turns anything else
// (null, a string, an array, nothing) into {}.
func objectArgs(raw json.RawMessage) any {
	t := bytes.TrimSpace(raw)
	if len(t) > 0 && t[0] == '{' && json.Valid(t) {
		return json.RawMessage(t)
	}
	return map[string]any{}
}

// outputSchema is a tool's resolved outputSchema with its fast check,
// which accepts the common shapes of structuredContent in a few map
// look-ups where jsonschema-go's Validate costs a call several
// microseconds; Validate still decides every other case, and words every
// refusal.
type outputSchema struct {
	resolved *jsonschema.Resolved
	fast     *schemafast.Checker // nil when the schema is beyond it
}

func newOutputSchema(rs *jsonschema.Resolved) *outputSchema {
	if rs == nil {
		return nil
	}
	return &outputSchema{resolved: rs, fast: schemafast.Compile(rs)}
}

// validateStructured checks structuredContent against a tool's schema.
// A tool that declares an outputSchema must send structuredContent.
func validateStructured(s *outputSchema, sc any) error {
	if sc == nil {
		return errors.New("the result has no structuredContent")
	}
	if s.fast.Valid(sc) {
		return nil
	}
	return s.resolved.Validate(sc)
}

// renderer returns the pure render of canonical values: one text block, and
// a diagnostic in place of each image, audio clip and embedded binary
// (those reach model content only from Execute, after durable storage),
// cut at maxResultBytes without storing the whole.
func (c *client) renderer(raw string) func(any) []tools.Content {
	return func(v any) []tools.Content {
		switch r := v.(type) {
		case CallResult:
			return c.truncate(project(raw, c.linkServer(), r.views(), nil), nil)
		case *CallResult:
			if r != nil {
				return c.truncate(project(raw, c.linkServer(), r.views(), nil), nil)
			}
		}
		b, err := json.Marshal(v)
		if err != nil {
			return []tools.Content{tools.Text(fmt.Sprintf("[unrenderable value: %v]", err))}
		}
		return c.truncate([]tools.Content{tools.Text(string(b))}, nil)
	}
}

// blockView is what the projection reads of a content block.
type blockView struct {
	object   bool    // false: the block is not a JSON object
	typ      *string // nil: no type
	text     *string // nil: no text (an embedded resource's text for "resource")
	mimeType string
	name     string
	uri      string
	title    string
	// size is the byte count of an audio block's data or an embedded
	// resource's blob; blob is that blob when its type is textual.
	size    int
	hasBlob bool
	blob    []byte
}

// typedViews views the blocks go-sdk decoded, without re-parsing them.
func typedViews(content []mcp.Content) []blockView {
	views := make([]blockView, len(content))
	for i, c := range content {
		v := blockView{object: true}
		typ := func(s string) { v.typ = &s }
		switch b := c.(type) {
		case *mcp.TextContent:
			typ("text")
			v.text = &b.Text
		case *mcp.ImageContent:
			typ("image")
			v.mimeType = b.MIMEType
		case *mcp.AudioContent:
			typ("audio")
			v.mimeType = b.MIMEType
			v.size = len(b.Data)
		case *mcp.ResourceLink:
			typ("resource_link")
			v.name, v.uri, v.title, v.mimeType = b.Name, b.URI, b.Title, b.MIMEType
		case *mcp.EmbeddedResource:
			typ("resource")
			if r := b.Resource; r != nil {
				v.uri, v.mimeType = r.URI, r.MIMEType
				if r.Blob != nil {
					v.hasBlob, v.size = true, len(r.Blob)
					if resources.Textual(r.MIMEType) {
						v.blob = r.Blob
					}
				} else {
					v.text = &r.Text
				}
			}
		case *mcp.ToolUseContent:
			typ("tool_use")
		case *mcp.ToolResultContent:
			typ("tool_result")
		default:
			typ(fmt.Sprintf("%T", c))
		}
		views[i] = v
	}
	return views
}

// views is what the projection reads of the result's blocks: the decoded
// answer's, or for a value made of JSON, the JSON's.
func (r CallResult) views() []blockView {
	if r.answer != nil {
		return typedViews(r.answer.Content)
	}
	return rawViews(r.encoded().content)
}

// rawViews views canonical JSON blocks (a value to render may come from
// anywhere, for example a post-execute hook).
func rawViews(blocks []json.RawMessage) []blockView {
	views := make([]blockView, len(blocks))
	for i, raw := range blocks {
		var w struct {
			Type     *string `json:"type"`
			Text     *string `json:"text"`
			MIMEType string  `json:"mimeType"`
			Name     string  `json:"name"`
			Title    string  `json:"title"`
			URI      string  `json:"uri"`
			Data     string  `json:"data"`
			Resource *struct {
				URI      string  `json:"uri"`
				MIMEType string  `json:"mimeType"`
				Text     *string `json:"text"`
				Blob     *string `json:"blob"`
			} `json:"resource"`
		}
		if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &w) != nil {
			continue // not an object
		}
		v := blockView{object: true, typ: w.Type, text: w.Text, mimeType: w.MIMEType, name: w.Name, title: w.Title, uri: w.URI,
			size: base64.StdEncoding.DecodedLen(len(w.Data)) - strings.Count(w.Data, "=")}
		if w.Type != nil && *w.Type == "resource" {
			v.text, v.size = nil, 0
			if r := w.Resource; r != nil {
				v.uri, v.mimeType, v.text = r.URI, r.MIMEType, r.Text
				if r.Blob != nil {
					v.text = nil
					v.hasBlob = true
					v.size = base64.StdEncoding.DecodedLen(len(*r.Blob)) - strings.Count(*r.Blob, "=")
					if resources.Textual(r.MIMEType) {
						v.blob, _ = base64.StdEncoding.DecodeString(*r.Blob)
					}
				}
			}
		}
		views[i] = v
	}
	return views
}

// project maps content blocks to model-facing content: text runs joined
// with "\n", embedded text resources inline after a line naming them,
// resource links with how to read them, and, for each block kept holds
// (the n-th block: an image's reference or diagnostic, a stored audio clip
// or binary resource), what it holds; a diagnostic in place of each such
// block when it holds none. A non-text block splits the text run.
func project(raw, server string, blocks []blockView, kept map[int][]tools.Content) []tools.Content {
	var out []tools.Content
	var run []string
	flush := func() {
		if len(run) > 0 {
			out = append(out, tools.Text(strings.Join(run, "\n")))
			run = nil
		}
	}
	for i, b := range blocks {
		if held, ok := kept[i]; ok {
			for _, block := range held {
				if block.Type == "text" {
					run = append(run, block.Text)
				} else {
					flush()
					out = append(out, block)
				}
			}
			continue
		}
		if !b.object {
			run = append(run, "[unsupported MCP content block: expected an object]")
			continue
		}
		typ := ""
		if b.typ != nil {
			typ = *b.typ
		}
		mime := b.mimeType
		if mime == "" {
			mime = "unknown media type"
		}
		switch typ {
		case "text":
			if b.text != nil {
				run = append(run, *b.text)
			}
		case "image":
			run = append(run, imageDiagnostic(mime, "this result was not admitted to durable model context"))
		case "audio":
			run = append(run, "[audio: "+mime+fmt.Sprintf(", %d bytes", b.size)+"; not stored in this rendering; the raw audio remains available to programmatic callers]")
		case "resource":
			switch {
			case b.text != nil:
				run = append(run, "Resource "+b.uri+" ("+resources.OrUnknownType(b.mimeType)+"):", *b.text)
			case b.blob != nil && utf8.Valid(b.blob):
				run = append(run, "Resource "+b.uri+" ("+resources.OrUnknownType(b.mimeType)+"):", string(b.blob))
			case b.hasBlob:
				run = append(run, fmt.Sprintf("[embedded resource %s: %s, %d bytes; not stored in this rendering; the raw data remains available to programmatic callers]", b.uri, resources.OrUnknownType(b.mimeType), b.size))
			default:
				run = append(run, "[embedded resource unavailable: the MCP block has no resource contents]")
			}
		case "resource_link":
			if b.name == "" || b.uri == "" {
				run = append(run, "[resource link unavailable: the MCP block is missing its name or URI]")
			} else {
				run = append(run, resourceLinkLine(server, b))
			}
		default:
			if b.typ == nil {
				typ = "(missing)"
			}
			run = append(run, "[unsupported MCP content type: "+typ+"]")
		}
	}
	flush()
	visible := false
	for _, b := range out {
		if b.Type != "text" || b.Text != "" {
			visible = true
			break
		}
	}
	if !visible {
		return []tools.Content{tools.Text("(" + raw + " returned no model-visible content)")}
	}
	return out
}

func imageDiagnostic(mime, reason string) string {
	return "[image unavailable: " + mime + "; " + reason + "; raw image data remains available to programmatic callers]"
}

// joinText returns the text of content, one line per block.
func joinText(content []tools.Content) string {
	var parts []string
	for _, b := range content {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// truncate cuts model-facing text beyond maxResultBytes, with a marker that
// says how much was dropped and where the rest is: store, when non-nil, is
// given the whole text (the text blocks joined with "\n") and the offset in
// it where the kept text ends, and returns that advice. Image references
// are kept.
func (c *client) truncate(content []tools.Content, store func(full string, offset int) string) []tools.Content {
	limit := c.cfg.MaxResultBytes
	total := 0
	for _, b := range content {
		if b.Type == "text" {
			total += len(b.Text)
		}
	}
	if limit <= 0 || total <= limit {
		return content
	}
	out := make([]tools.Content, 0, len(content))
	kept, cut := 0, false
	pos := 0    // where the current block starts in the joined text
	cutAt := -1 // index in out of the cut block
	offset := 0 // where the kept text ends in the joined text
	for _, b := range content {
		if b.Type != "text" {
			out = append(out, b)
			continue
		}
		if cut {
			continue
		}
		if kept+len(b.Text) <= limit {
			out = append(out, b)
			kept += len(b.Text)
			pos += len(b.Text) + 1
			continue
		}
		n := limit - kept
		for n > 0 && !utf8.RuneStart(b.Text[n]) {
			n--
		}
		kept += n
		cut = true
		offset = pos + n
		cutAt = len(out)
		out = append(out, tools.Text(b.Text[:n]))
	}
	advice := "the full result remains available to programmatic callers"
	if store != nil {
		texts := make([]string, 0, len(content))
		for _, b := range content {
			if b.Type == "text" {
				texts = append(texts, b.Text)
			}
		}
		advice = store(strings.Join(texts, "\n"), offset)
	}
	out[cutAt].Text += fmt.Sprintf("\n[output truncated: %d of %d bytes dropped (maxResultBytes %d); %s]", total-kept, total, limit, advice)
	return out
}

// Reasons an image stays out of model content.
const (
	reasonBadType     = "the declared media type is not PNG, JPEG, WebP, or GIF"
	reasonEmpty       = "the image data is empty"
	reasonMismatch    = "the image bytes do not match the declared media type"
	reasonSibling     = "another image in the same result was invalid"
	reasonNoStore     = "no attachment store is mounted"
	reasonNoInput     = "the caller does not accept image input"
	reasonCanceled    = "the tool call was canceled before image storage"
	reasonStorage     = "durable image storage rejected the result"
	reasonAdmissionAt = "image admission rejected the result: "
)

// admitImages checks the whole batch, downscales what is over the store's
// limits, then stores it all-or-nothing, and returns what each image
// becomes in model content: a durable reference (after a note when it was
// downscaled), or (for every image, on any refusal) a diagnostic that says
// why.
//
// Downscaling happens here rather than in SaveImages so that the store
// keeps admitting exactly the bytes it is given, validated as one batch:
// the fitted images go through the same checks and the same atomic write.
func (c *client) admitImages(ctx context.Context, caller tools.Caller, raw string, imgs []*mcp.ImageContent) [][]tools.Content {
	refuse := func(reasons []string) [][]tools.Content {
		out := make([][]tools.Content, len(imgs))
		for n, im := range imgs {
			mime := im.MIMEType
			if mime == "" {
				mime = "unknown media type"
			}
			out[n] = []tools.Content{tools.Text(imageDiagnostic(mime, reasons[n]))}
		}
		return out
	}
	all := func(reason string) []string {
		r := make([]string, len(imgs))
		for i := range r {
			r[i] = reason
		}
		return r
	}

	batch := make([]attachments.Image, len(imgs))
	reasons := make([]string, len(imgs))
	invalid := false
	for i, im := range imgs {
		mediaType, ok := imageType(im.MIMEType)
		switch {
		case !ok:
			reasons[i] = reasonBadType
		case len(im.Data) == 0:
			reasons[i] = reasonEmpty
		case !sniff(mediaType, im.Data):
			reasons[i] = reasonMismatch
		default:
			batch[i] = attachments.Image{MediaType: mediaType, Data: im.Data}
			continue
		}
		invalid = true
	}
	if invalid {
		for i := range reasons {
			if reasons[i] == "" {
				reasons[i] = reasonSibling
			}
		}
		return refuse(reasons)
	}
	switch {
	case c.opt.store == nil:
		return refuse(all(reasonNoStore))
	case !caller.ImageInput:
		return refuse(all(reasonNoInput))
	case ctx.Err() != nil:
		return refuse(all(reasonCanceled))
	}
	refs, err := c.opt.store.SaveFitted(ctx, batch)
	if err != nil {
		if attachments.IsAdmissionError(err) {
			return refuse(all(reasonAdmissionAt + err.Error()))
		}
		if ctx.Err() != nil {
			return refuse(all(reasonCanceled))
		}
		c.log.Warn(c.label+": durable image storage failed", "tool", raw, "err", err)
		return refuse(all(reasonStorage))
	}
	out := make([][]tools.Content, len(refs))
	for n := range refs {
		if rs := refs[n].Resized; rs != nil {
			out[n] = append(out[n], tools.Text(rs.Note()))
		}
		out[n] = append(out[n], tools.Content{Type: "image", Image: &refs[n].Ref})
	}
	return out
}

// imageType normalizes a declared media type and reports whether models
// take it.
func imageType(declared string) (string, bool) {
	t, _, _ := strings.Cut(declared, ";")
	t = strings.ToLower(strings.TrimSpace(t))
	switch t {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return t, true
	}
	return t, false
}

// sniff reports whether data starts like an image of mediaType.
func sniff(mediaType string, data []byte) bool {
	switch mediaType {
	case "image/png":
		return bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n"))
	case "image/jpeg":
		return bytes.HasPrefix(data, []byte{0xFF, 0xD8, 0xFF})
	case "image/gif":
		return bytes.HasPrefix(data, []byte("GIF87a")) || bytes.HasPrefix(data, []byte("GIF89a"))
	case "image/webp":
		return len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP"
	}
	return false
}
