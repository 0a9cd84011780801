package mcpclient_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/mcptest"
	"github.com/dsh-host/dsh-host/plugins/mcpclient/result"
	_ "github.com/dsh-host/dsh-host/plugins/mcpfold"
	"github.com/dsh-host/dsh-host/services/outputs"
	"github.com/dsh-host/dsh-host/services/tools"
)

// A banner on a stdio server's stdout is logged and skipped; the
// connection lives.
func TestE2EStrayStdoutLines(t *testing.T) {
	hs := newHarness(t)
	hs.apply(stdioFixture(t, "stray", "stray", nil, "-stray-stdout"))
	hs.requireActive("stray")
	if got := text(hs.call(imageCaller, "mcp__stray__ping", nil)); got != "pong" {
		t.Fatalf("ping = %q", got)
	}
	logs := hs.logs.String()
	for _, line := range []string{"Memory server starting...", `\x1b[32minfo\x1b[0m ready on stdio`, "[INFO] server starting", `{\"level\":30,\"msg\":\"ready\"}`} {
		if !strings.Contains(logs, "skipped a line that is not a JSON-RPC message") || !strings.Contains(logs, line) {
			t.Errorf("the log does not show the skipped line %q", line)
		}
	}
}

// nodeMissingScript is what node 20 writes to stderr for a script that
// does not exist.
const nodeMissingScript = `node:internal/modules/cjs/loader:1210
  throw err;
  ^

Error: Cannot find module '/srv/mcp/build/index.js'
    at Module._resolveFilename (node:internal/modules/cjs/loader:1207:15)
    at Module._load (node:internal/modules/cjs/loader:1038:27)
    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)
    at node:internal/main/run_main_module:28:49 {
  code: 'MODULE_NOT_FOUND',
  requireStack: []
}

Node.js v20.20.2
`

// A server that never connected says why: its exit status and last stderr
// lines, in the instance's status, not "reconnecting".
func TestE2EFailedStartSaysWhy(t *testing.T) {
	hs := newHarness(t)
	hs.apply(
		stdioFixture(t, "crash", "crash", nil, "-crash-on-start"),
		host.Entry{ID: "missing", Name: "mcp-client", Config: map[string]any{
			"transport": "stdio", "serverName": "missing",
			// What `npx some-server` does when it is not there: a shell
			// that cannot find the command says so, and exits 127.
			"command": "/bin/sh", "args": []any{"-c", "exec mcp-server-that-is-not-installed"},
			"reconnect": map[string]any{"initialDelayMs": 20, "maxDelayMs": 200, "maxAttempts": 2},
		}},
		host.Entry{ID: "nodescript", Name: "mcp-client", Config: map[string]any{
			"transport": "stdio", "serverName": "nodescript",
			// What node writes for a script path that does not exist
			// (node 20): the line that says so, then its stack.
			"command": "/bin/sh", "args": []any{"-c", "cat >&2 <<'EOF'\n" + nodeMissingScript + "EOF\nexit 1"},
			"reconnect": map[string]any{"initialDelayMs": 20, "maxDelayMs": 200, "maxAttempts": 2},
		}},
	)
	for id, want := range map[string][]string{
		"crash":      {"failed to start", "exit status 1", "crashing on start, as asked by -crash-on-start"},
		"missing":    {"failed to start", "exit status 127", "mcp-server-that-is-not-installed", "not found"},
		"nodescript": {"failed to start", "exit status 1", "Error: Cannot find module '/srv/mcp/build/index.js'", "Node.js v20"},
	} {
		var detail string
		eventually(t, id+" to fail", func() bool {
			detail = hs.status(id).Detail
			return strings.Contains(detail, "exit status")
		})
		for _, w := range want {
			if !strings.Contains(detail, w) {
				t.Errorf("%s: status %q lacks %q", id, detail, w)
			}
		}
		if strings.Contains(detail, "reconnecting") {
			t.Errorf("%s: status %q says reconnecting", id, detail)
		}
	}
}

// With failOnStartupError the instance's error is as explicit.
func TestE2EFailedStartError(t *testing.T) {
	hs := newHarness(t)
	hs.apply(stdioFixture(t, "crash", "crash", map[string]any{"failOnStartupError": true}, "-crash-on-start"))
	st := hs.status("crash")
	if st.State != host.StateFailed || !strings.Contains(st.Err, "exited (exit status 1) before completing the MCP handshake") ||
		!strings.Contains(st.Err, "crashing on start") {
		t.Fatalf("instance = %q (%q)", st.State, st.Err)
	}
}

// A server that never answers is stopped by the host when startupTimeoutMs
// runs out; the error says so, not that the server exited (go-sdk closes
// the connection of a failed initialize, which ends the process).
func TestE2EUnansweredStartSaysHostStoppedIt(t *testing.T) {
	hs := newHarness(t)
	hs.apply(stdioFixture(t, "hung", "hung", map[string]any{"startupTimeoutMs": 2000, "failOnStartupError": true}, "-hang"))
	st := hs.status("hung")
	if st.State != host.StateFailed {
		t.Fatalf("hung = %q (%q), want failed", st.State, st.Err)
	}
	for _, w := range []string{"no MCP handshake in time, so the host stopped the server", "hanging, as asked by -hang"} {
		if !strings.Contains(st.Err, w) {
			t.Errorf("error %q lacks %q", st.Err, w)
		}
	}
	if strings.Contains(st.Err, "exited") {
		t.Errorf("error %q says the server exited", st.Err)
	}
}

// Every block of a result reaches the model: a screenshot downscaled, not
// refused; embedded resources inline or stored; a link with how to read it;
// audio stored with its length.
func TestE2EResultContent(t *testing.T) {
	hs := newHarness(t)
	// -resources: a server that lists something to read, so mcp_read is
	// offered and a resource link names it.
	hs.apply(stdioFixture(t, "fx", "fx", nil, "-content-tools", "-resources", "1"))
	hs.requireActive("fx")

	res := hs.call(imageCaller, "mcp__fx__huge-image", nil)
	refs := images(res)
	if res.Err != nil || len(refs) != 1 {
		t.Fatalf("huge-image: %v %+v", res.Err, res.Content)
	}
	if refs[0].Width != 2000 || refs[0].Height != 1125 {
		t.Errorf("stored %d×%d, want 2000×1125", refs[0].Width, refs[0].Height)
	}
	if got, want := text(res), "a screenshot follows\n[image downscaled from 2560×1440 to 2000×1125 to fit the attachment limits (scale 1:1.28)]"; got != want {
		t.Errorf("huge-image text = %q, want %q", got, want)
	}
	if st, err := hs.store().Stat(refs[0].ID); err != nil || st.Width != 2000 {
		t.Errorf("the store holds %+v, %v", st, err)
	}

	got := text(hs.call(imageCaller, "mcp__fx__embedded", nil))
	id := regexp.MustCompile(`sha256:[0-9a-f]{64}`).FindString(got)
	want := "Resource fixture://notes.txt (text/plain):\nfixture notes\n" +
		"[embedded resource fixture://report.pdf: application/pdf, 36 bytes; stored as attachment " + id + "]\n" +
		"Resource fixture://data.json (application/json):\n{\"n\":1}\n" +
		`Resource link: later (fixture://later.md, text/markdown); read it with mcp_read {"uri":"fixture://later.md","server":"fx"}`
	if got != want {
		t.Errorf("embedded =\n%s\nwant\n%s", got, want)
	}
	if st, err := hs.store().Stat(id); err != nil || st.MediaType != "application/pdf" || st.Bytes != 36 {
		t.Errorf("the stored PDF: %+v, %v", st, err)
	}

	got = text(hs.call(imageCaller, "mcp__fx__audio", nil))
	if !regexp.MustCompile(`^\[audio: audio/wav, 0\.50 s, 4044 bytes; stored as attachment sha256:[0-9a-f]{64}\]$`).MatchString(got) {
		t.Errorf("audio = %q", got)
	}
}

// A caller that passes MCP results through (a gateway) gets them as the
// server sent them, and nothing is done for a model it has not: no image
// is downscaled or stored, no long text is cut or stored.
func TestE2EPassThroughCaller(t *testing.T) {
	hs := newHarness(t)
	hs.apply(stdioFixture(t, "fx", "fx", map[string]any{"maxResultBytes": 1000}, "-content-tools", "-oversize"))
	hs.requireActive("fx")
	relay := tools.Caller{Kind: "test", ID: "relay", ImageInput: true, PassThrough: true}

	res := hs.call(relay, "mcp__fx__huge-image", nil)
	if res.Err != nil || len(res.Content) != 0 {
		t.Fatalf("huge-image: err %v, model content %+v, want none", res.Err, res.Content)
	}
	v, ok := res.Value.(result.CallResult)
	if !ok || len(v.MCPContent()) != 2 {
		t.Fatalf("value = %#v, want the server's two blocks", res.Value)
	}
	var img struct{ Type, MimeType, Data string }
	if err := json.Unmarshal(v.MCPContent()[1], &img); err != nil || img.Type != "image" || img.MimeType != "image/png" {
		t.Fatalf("second block = %s (%v), want the server's PNG", v.MCPContent()[1], err)
	}
	data, err := base64.StdEncoding.DecodeString(img.Data)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(data)); err != nil || cfg.Width != 2560 || cfg.Height != 1440 {
		t.Errorf("image %dx%d (%v), want the server's 2560x1440, not downscaled", cfg.Width, cfg.Height, err)
	}

	res = hs.call(relay, "mcp__fx__oversize", map[string]any{"bytes": 2500})
	v, _ = res.Value.(result.CallResult)
	if blocks := v.MCPContent(); res.Err != nil || len(res.Content) != 0 || len(blocks) != 1 || len(blocks[0]) < 2500 {
		t.Fatalf("oversize: err %v, model content %d blocks, value %d blocks", res.Err, len(res.Content), len(blocks))
	}

	objects, _ := filepath.Glob(filepath.Join(hs.store().Dir(), "*", "*", "*"))
	if len(objects) != 0 {
		t.Errorf("the store holds %q after pass-through calls, want nothing", objects)
	}
	// The same calls for a model store the image (the check above could
	// fail).
	if refs := images(hs.call(imageCaller, "mcp__fx__huge-image", nil)); len(refs) != 1 {
		t.Fatalf("a model's call stored %d images, want 1", len(refs))
	}
	if objects, _ := filepath.Glob(filepath.Join(hs.store().Dir(), "*", "*", "*")); len(objects) == 0 {
		t.Errorf("nothing under %s after a model's call: the check of the store sees nothing", hs.store().Dir())
	}
}

// A call's value carries the answer as go-sdk decoded it, for a gateway to
// serve without decoding the blocks' JSON again, and encodes its JSON once,
// on first ask, for every copy (concurrently, under -race); a value made of
// JSON (as a post-execute hook makes one) serves no answer.
func TestE2ECallResultDecoded(t *testing.T) {
	hs := newHarness(t)
	hs.apply(stdioFixture(t, "fx", "fx", nil, "-content-tools"))
	hs.requireActive("fx")
	for _, tool := range []string{"mcp__fx__embedded", "mcp__fx__add"} {
		args := map[string]any{}
		if tool == "mcp__fx__add" {
			args = map[string]any{"a": 2, "b": 3}
		}
		v, ok := hs.call(modelCaller, tool, args).Value.(result.CallResult)
		if !ok {
			t.Fatalf("%s: no CallResult", tool)
		}
		res := v.MCPCallToolResult()
		if res == nil || len(res.Content) == 0 {
			t.Fatalf("%s: decoded result %+v, want the server's blocks", tool, res)
		}

		copies := make([][]json.RawMessage, 4)
		var wg sync.WaitGroup
		for i := range copies {
			wg.Go(func() { copies[i] = v.MCPContent() })
		}
		wg.Wait()
		blocks := copies[0]
		if len(blocks) != len(res.Content) {
			t.Fatalf("%s: %d blocks as JSON, want %d", tool, len(blocks), len(res.Content))
		}
		for i, c := range res.Content {
			if b, err := c.MarshalJSON(); err != nil || !bytes.Equal(b, blocks[i]) {
				t.Errorf("%s: decoded block %d encodes as %s (%v), want %s", tool, i, b, err, blocks[i])
			}
		}
		for i, c := range copies[1:] {
			if &c[0][0] != &blocks[0][0] {
				t.Errorf("%s: copy %d encoded the blocks again", tool, i+1)
			}
		}
		structured := v.MCPStructuredContent()
		if (res.StructuredContent == nil) != (structured == nil) {
			t.Errorf("%s: structuredContent %s, decoded %v", tool, structured, res.StructuredContent)
		}
		if sc, err := json.Marshal(res.StructuredContent); structured != nil && (err != nil || !bytes.Equal(sc, structured)) {
			t.Errorf("%s: decoded structuredContent %s (%v), want %s", tool, sc, err, structured)
		}
		whole, err := json.Marshal(v)
		var back struct {
			Content           []json.RawMessage
			StructuredContent json.RawMessage
		}
		if err != nil || json.Unmarshal(whole, &back) != nil || len(back.Content) != len(blocks) || !bytes.Equal(back.StructuredContent, structured) {
			t.Errorf("%s: value encodes as %s (%v), want its blocks and structuredContent", tool, whole, err)
		}

		if result.NewCallResult(blocks, structured).MCPCallToolResult() != nil {
			t.Errorf("%s: a value made of JSON serves a decoded answer", tool)
		}
	}
}

// Tools no model can use are not registered, and the log says why, once;
// over stdio and over Streamable HTTP (where the listing is read in the
// HTTP client: an SSE answer).
func TestE2EUnusableToolsNotOffered(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		testUnusableTools(t, func() host.Entry { return stdioFixture(t, "un", "un", nil, "-unusable-tools") })
	})
	t.Run("streamable-http", func(t *testing.T) {
		testUnusableTools(t, func() host.Entry {
			return host.Entry{ID: "un", Name: "mcp-client", Config: map[string]any{
				"transport": "streamable-http", "serverName": "un", "url": mcptest.StartHTTPFixture(t, "-unusable-tools"),
			}}
		})
	})
}

// testUnusableTools runs the server entry makes (after the harness, so
// that a fixture it starts is gone before the harness checks).
func testUnusableTools(t *testing.T, entry func() host.Entry) {
	hs := newHarness(t)
	hs.apply(entry())
	hs.requireActive("un")
	names := hs.serverTools("un")
	if !slicesContains(names, "mcp__un__app-and-model") || slicesContains(names, "mcp__un__app-only") || slicesContains(names, "mcp__un__task-required") {
		t.Errorf("registered %v", names)
	}
	// A re-sync (the list changed) does not log them again.
	hs.call(imageCaller, "mcp__un__add-tool", map[string]any{"name": "late"})
	eventually(t, "the re-sync", func() bool { return slicesContains(hs.serverTools("un"), "mcp__un__late") })
	if names := hs.serverTools("un"); slicesContains(names, "mcp__un__app-only") || slicesContains(names, "mcp__un__task-required") {
		t.Errorf("after the re-sync: %v", names)
	}
	logs := hs.logs.String()
	for _, w := range []string{`tool not offered to models: its _meta.ui.visibility is [\"app\"]`, `tool not offered to models: its execution.taskSupport is \"required\"`} {
		if strings.Count(logs, w) != 1 {
			t.Errorf("logged %d times: %s\n", strings.Count(logs, w), w)
		}
	}
}

// A result past maxResultBytes is stored whole, and the cut names the call
// that reads on; reading on gives back the rest exactly.
func TestE2ELongOutputReadOn(t *testing.T) {
	hs := newHarness(t)
	hs.apply(stdioFixture(t, "lo", "lo", map[string]any{"maxResultBytes": 1000}, "-oversize"))
	hs.requireActive("lo")
	res := hs.call(imageCaller, "mcp__lo__oversize", map[string]any{"bytes": 2500})
	got := text(res)
	m := regexp.MustCompile(`\n\[output truncated: 1500 of 2500 bytes dropped \(maxResultBytes 1000\); the whole text \(2500 bytes\) is stored: read the rest with mcp_read_output (\{.*\})\]$`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("cut = %q", got[max(0, len(got)-300):])
	}
	rest := hs.call(imageCaller, outputs.ToolName, rawJSON(m[1]))
	if rest.Err != nil {
		t.Fatal(rest.Err)
	}
	if want := strings.Repeat("x", 1500) + "\n[bytes 1000-2500 of 2500; the end of the stored text]"; text(rest) != want {
		t.Errorf("read on = %q", text(rest))
	}
}

// transport: sse reaches a legacy HTTP+SSE server (the fixture's go-sdk
// one), and a Streamable HTTP URL that answers 404 hints at it.
func TestE2ELegacySSE(t *testing.T) {
	hs := newHarness(t)
	base := strings.TrimSuffix(mcptest.StartHTTPFixture(t, "-sse"), "/mcp")
	hs.apply(
		host.Entry{ID: "old", Name: "mcp-client", Config: map[string]any{"transport": "sse", "serverName": "old", "url": base + "/sse"}},
		host.Entry{ID: "wrong", Name: "mcp-client", Config: map[string]any{"transport": "streamable-http", "serverName": "wrong", "url": base + "/sse-only",
			"reconnect": map[string]any{"initialDelayMs": 20, "maxDelayMs": 200, "maxAttempts": 1}}},
		// The SSE endpoint itself answers a POST without its session id
		// with 400; without reconnects the status must still say why.
		host.Entry{ID: "wrong400", Name: "mcp-client", Config: map[string]any{"transport": "streamable-http", "serverName": "wrong400", "url": base + "/sse",
			"reconnect": map[string]any{"enabled": false}}},
	)
	hs.requireActive("old")
	if got := text(hs.call(imageCaller, "mcp__old__shout", map[string]any{"text": "hi"})); got != "HI" {
		t.Errorf("shout over sse = %q", got)
	}
	detail := hs.status("wrong").Detail
	if !strings.Contains(detail, "failed to start") || !strings.Contains(detail, "404 Not Found to the first POST") || !strings.Contains(detail, "set transport: sse") {
		t.Errorf("status of the wrong transport: %q", detail)
	}
	eventually(t, "wrong400 to fail", func() bool { return strings.Contains(hs.status("wrong400").Detail, "reconnect disabled") })
	detail = hs.status("wrong400").Detail
	if !strings.Contains(detail, "failed to start") || !strings.Contains(detail, "400 Bad Request to the first POST") || !strings.Contains(detail, "set transport: sse") {
		t.Errorf("status of the wrong transport, reconnect disabled: %q", detail)
	}
}

// The real server-everything in its SSE mode, through transport: sse:
// its tools work, and its embedded resource reaches the model inline.
func TestE2EEverythingSSE(t *testing.T) {
	url := mcptest.StartEverythingSSE(t)
	hs := newHarness(t)
	hs.apply(host.Entry{ID: "ev", Name: "mcp-client", Config: map[string]any{"transport": "sse", "serverName": "ev", "url": url}})
	hs.requireActive("ev")
	if got := text(hs.call(imageCaller, "mcp__ev__echo", map[string]any{"message": "over sse"})); got != "Echo: over sse" {
		t.Errorf("echo = %q", got)
	}
	got := text(hs.call(imageCaller, "mcp__ev__get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 1}))
	if !strings.Contains(got, "\nResource demo://resource/dynamic/text/1 (text/plain):\nResource 1: This is a plaintext resource") {
		t.Errorf("get-resource-reference = %q", got)
	}
}

// With mcp-fold the server's tools leave the prompt but mcp_read_output
// stays, and a cut result called through mcp_call reads on with it.
func TestE2ELongOutputFolded(t *testing.T) {
	hs := newHarness(t)
	hs.apply(
		host.Entry{ID: "fold", Name: "mcp-fold", Config: map[string]any{}},
		stdioFixture(t, "lo", "lo", map[string]any{"maxResultBytes": 1000}, "-oversize"),
	)
	hs.requireActive("lo")
	a, err := hs.registry().Assemble(t.Context(), imageCaller)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range a.Tools {
		names = append(names, s.Name)
	}
	if !slicesContains(names, outputs.ToolName) || !slicesContains(names, "mcp_call") || slicesContains(names, "mcp__lo__oversize") {
		t.Fatalf("the folded prompt offers %v", names)
	}
	got := text(hs.call(imageCaller, "mcp_call", map[string]any{"tool": "mcp__lo__oversize", "arguments": map[string]any{"bytes": 1500}}))
	m := regexp.MustCompile(`read the rest with mcp_read_output (\{.*\})\]$`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("mcp_call result = %q", got[max(0, len(got)-300):])
	}
	if rest := text(hs.call(imageCaller, outputs.ToolName, rawJSON(m[1]))); !strings.HasPrefix(rest, strings.Repeat("x", 500)+"\n[bytes 1000-1500 of 1500;") {
		t.Errorf("read on = %q", rest)
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

// serverToolDefs returns every registered tool of some MCP server (the
// built-in tools such as mcp_read_output left out).
func (hs *harness) serverToolDefs() []tools.Definition {
	var out []tools.Definition
	for _, d := range hs.registry().List(tools.Caller{Kind: "test"}) {
		if d.Origin.Server != "" {
			out = append(out, d)
		}
	}
	return out
}

// The real server-everything over stdio: its embedded resource comes
// inline with its URI, and its resource links name the mcp_read call that
// reads them, which works.
func TestE2EEverythingResultContent(t *testing.T) {
	hs := newHarness(t)
	hs.applyNode("ev", mcptest.ServerEverything, "stdio")
	got := text(hs.call(imageCaller, "mcp__ev__get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 2}))
	if !strings.Contains(got, "\nResource demo://resource/dynamic/text/2 (text/plain):\nResource 2: This is a plaintext resource") {
		t.Errorf("get-resource-reference = %q", got)
	}
	links := text(hs.call(imageCaller, "mcp__ev__get-resource-links", map[string]any{"count": 2}))
	m := regexp.MustCompile(`(?m)^Resource link: .*; read it with mcp_read (\{.*\})$`).FindStringSubmatch(links)
	if m == nil {
		t.Fatalf("no readable link in %q", links)
	}
	read := hs.call(imageCaller, "mcp_read", rawJSON(m[1]))
	if read.Err != nil || !strings.Contains(text(read), "Resource ") {
		t.Errorf("reading the link: %v %q", read.Err, text(read))
	}
}
