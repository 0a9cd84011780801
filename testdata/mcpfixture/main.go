// Command mcpfixture is a small MCP server for tests and demos, built with
// go-sdk. It speaks stdio by default, or Streamable HTTP with -http ADDR.
//
// In stdio mode stdout carries the protocol and nothing else; every log line
// goes to stderr. In HTTP mode the first stdout line is
//
//	listening on http://127.0.0.1:PORT/mcp
//
// so a test can start it on port 0 and read the address back.
//
// Flags pick the serverInfo name (-name), require a header on every HTTP
// request (-require-header "Authorization: Bearer x", else 401), serve
// without sessions (-stateless), never answer (-hang), crash on start
// (-crash-on-start, or -crash-if-exists FILE for a crash loop a test
// switches on), record every start (-starts-file FILE), page tools/list
// (-page-size N), add filler tools (-extra-tools N) and set initialize's
// instructions (-instructions). -resources N and -prompts add resources,
// a template, subscriptions and prompts (resources.go). -rewrite adds
// rewrite-tool, which changes a tool's description, title or schemas at runtime (rewrite.go).
// -start-delay D answers nothing for D after the start (a slow server).
// -counter adds the count tool, which answers how many times it was called
// (counter.go); -op the op tool, which checks nothing and answers how many
// calls reached it (counter.go). -echo-meta adds the meta tool, which answers with its
// request's _meta (meta.go). -hostile URL adds a tool whose texts carry
// markup aimed at a web console, and -hostile-crash URL writes such
// markup to stderr and exits (hostile.go).
//
// Tools:
//
//	add {a, b}          text "a+b" and structuredContent {sum} (with an outputSchema)
//	greet {name?}       "Hello, <name>!" ("Hello, World!" by default)
//	shout {text}        text in upper case
//	ping                "pong"
//	fail                an isError result with a text block
//	image               text, a real 4x4 PNG, text
//	bad-image           an image block declared image/png whose bytes are not a PNG
//	admin.reset         a dotted name, which hosts must normalize
//	slow {ms}           sleeps ms milliseconds; honours cancellation
//	crash               replies, then exits (status 3) about 25ms later
//	add-tool {name?}    adds a tool at runtime, so the server sends
//	                    notifications/tools/list_changed
//	env                 the server's environment, one KEY=value per line, sorted
//
// The slow tool appends "slow started", then "slow cancelled" or "slow done",
// one per line, to the file named by -cancel-file or FIXTURE_CANCEL_FILE, so a
// test can wait for a call to be in flight and prove that
// notifications/cancelled reached the server.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("mcpfixture: ")
	if err := run(os.Args[1:]); err != nil {
		log.Fatal(err)
	}
}

type options struct {
	name          string
	strayStdout   bool // content.go
	contentTools  bool
	unusableTools bool
	sse           bool
	httpAddr      string
	stateless     bool
	requireHeader string
	crashOnStart  bool
	crashIfExists string
	hang          bool
	progress      bool
	elicit        bool
	askInline     bool // flow.go
	actsFile      string
	protocol      string
	startsFile    string
	cancelFile    string
	instructions  string
	pageSize      int
	extraTools    int
	oversize      bool
	resources     int
	prompts       bool
	counter       bool // counter.go
	op            bool // counter.go
	echoMeta      bool // meta.go
	annotated     bool // annotated.go
	rewrite       bool // rewrite.go
	removeTool    bool // rewrite.go
	complete      bool // bridge.go
	sample        bool // bridge.go
	roots         bool // bridge.go
	waitFile      string
	holdFile      string // hold.go
	startDelay    time.Duration
	exitDelay     time.Duration
	proxyOf       string // proxy.go
	hostile       string // hostile.go
	hostileCrash  string // hostile.go
}

func run(args []string) error {
	var o options
	fs := flag.NewFlagSet("mcpfixture", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.StringVar(&o.name, "name", "mcpfixture", "serverInfo name")
	fs.BoolVar(&o.strayStdout, "stray-stdout", false, "in stdio mode, print lines that are not JSON-RPC to stdout before serving, as some servers do (content.go)")
	fs.BoolVar(&o.contentTools, "content-tools", false, "register huge-image, embedded and audio, whose results are a 2560x1440 PNG, embedded resources and a link, and a WAV clip (content.go)")
	fs.BoolVar(&o.unusableTools, "unusable-tools", false, "register app-only, app-and-model and task-required, tools a host without apps or tasks must not offer models (content.go)")
	fs.BoolVar(&o.sse, "sse", false, "with -http: also serve the legacy HTTP+SSE transport at /sse (content.go)")
	fs.StringVar(&o.httpAddr, "http", "", "serve Streamable HTTP on this address (e.g. 127.0.0.1:0) instead of stdio")
	fs.BoolVar(&o.stateless, "stateless", false, "with -http: serve without sessions")
	fs.StringVar(&o.requireHeader, "require-header", "", `with -http: answer 401 to any request lacking this header, e.g. "Authorization: Bearer x"`)
	fs.BoolVar(&o.crashOnStart, "crash-on-start", false, "exit with status 1 before serving anything")
	fs.StringVar(&o.crashIfExists, "crash-if-exists", "", "exit with status 1 on start when this file exists (a crash loop a test can switch on)")
	fs.BoolVar(&o.hang, "hang", false, "never answer, ignore stdin EOF, and exit only on SIGTERM or SIGINT (an unresponsive server)")
	fs.BoolVar(&o.progress, "progress", false, "register the progress tool, which reports progress as it goes (flow.go)")
	fs.BoolVar(&o.elicit, "elicit", false, "register the ask and ask-url tools, which ask the client for input (flow.go)")
	fs.BoolVar(&o.askInline, "ask-inline", false, "register ask-inline and its annotated variants, which ask the client for a name in the middle of the call the 2025-11-25 way, with elicitation/create (flow.go)")
	fs.StringVar(&o.actsFile, "acts-file", "", "with -ask-inline: append the tool's name to this file each time an ask-inline tool runs, before it asks (flow.go)")
	fs.StringVar(&o.protocol, "protocol", "", "speak only this protocol revision, such as 2025-11-25 (flow.go)")
	fs.StringVar(&o.startsFile, "starts-file", "", "append one line per start to this file (tests count restarts)")
	fs.StringVar(&o.cancelFile, "cancel-file", os.Getenv("FIXTURE_CANCEL_FILE"), "file the slow tool appends its events to (default $FIXTURE_CANCEL_FILE)")
	fs.StringVar(&o.instructions, "instructions", "", "instructions returned by initialize")
	fs.IntVar(&o.pageSize, "page-size", 0, "tools/list page size (0: the SDK default)")
	fs.IntVar(&o.extraTools, "extra-tools", 0, "register this many extra tools named filler_NNN")
	fs.BoolVar(&o.oversize, "oversize", false, "register the oversize tool, which answers with a text of the given size (a message past a client's frame limit)")
	fs.IntVar(&o.resources, "resources", 0, "list this many text resources fixture://doc/NNN, plus an image, a binary, a template and the add-resource tool (resources.go)")
	fs.BoolVar(&o.prompts, "prompts", false, "offer the prompts echo and picture and the add-prompt tool (resources.go)")
	fs.DurationVar(&o.exitDelay, "exit-delay", 0, "in stdio mode, linger this long after stdin ends before exiting (a server slow to exit, as Python ones are)")
	fs.StringVar(&o.waitFile, "wait-file", "", "answer nothing until this file exists (a server slower than a host's startup timeout, released by the test)")
	fs.StringVar(&o.holdFile, "hold-file", "", "register the hold tool, whose calls stay in flight until this file exists (hold.go)")
	fs.DurationVar(&o.startDelay, "start-delay", 0, "answer nothing for this long after starting (a server slower to start than a host waits for its first lists)")
	fs.BoolVar(&o.complete, "complete", false, "answer completion/complete with the words alpha, alpine and beta that start with the typed value (bridge.go)")
	fs.BoolVar(&o.sample, "sample", false, "register the sample tool, which asks the client's model to complete a prompt (bridge.go)")
	fs.BoolVar(&o.roots, "roots", false, "register the roots tool, which lists the client's roots with roots/list, the 2025-11-25 way (bridge.go)")
	fs.BoolVar(&o.echoMeta, "echo-meta", false, "register the meta tool, which answers with its request's _meta as JSON (meta.go)")
	fs.BoolVar(&o.op, "op", false, "register the op tool, which checks nothing and answers the calls that reached it and the last arguments (counter.go)")
	fs.BoolVar(&o.counter, "counter", false, "register the count tool, which answers how many times it was called in this process (counter.go)")
	fs.BoolVar(&o.annotated, "annotated", false, "register the annotated tool (title, annotations, icons, _meta, outputSchema) and the log tool, which sends log messages (annotated.go)")
	fs.BoolVar(&o.rewrite, "rewrite", false, "register rewrite-tool, which replaces a tool's description, title or schemas (or adds a tool) at runtime (rewrite.go)")
	fs.BoolVar(&o.removeTool, "remove-tool", false, "register remove-tool, which removes a tool at runtime (rewrite.go)")
	fs.StringVar(&o.proxyOf, "proxy-of", "", "serve on stdio the tools of the stdio server this command starts, calls and results passed through unchanged (proxy.go)")
	fs.StringVar(&o.hostile, "hostile", "", "register a tool whose name, title, description, schema and result carry markup that would request this `URL` if a page ran it (hostile.go)")
	fs.StringVar(&o.hostileCrash, "hostile-crash", "", "write such markup (requesting this `URL`) to stderr and exit 1 before serving (hostile.go)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.hostileCrash != "" {
		log.Print(hostileMarkup(o.hostileCrash, "stderr"))
		os.Exit(1)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.startsFile != "" {
		(&eventLog{path: o.startsFile}).add(fmt.Sprintf("start %d", os.Getpid()))
	}
	if o.crashOnStart {
		log.Print("crashing on start, as asked by -crash-on-start")
		os.Exit(1)
	}
	if o.crashIfExists != "" {
		if _, err := os.Stat(o.crashIfExists); err == nil {
			log.Printf("crashing on start: %s exists (-crash-if-exists)", o.crashIfExists)
			os.Exit(1)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.hang {
		log.Print("hanging, as asked by -hang: no answer until a signal")
		<-ctx.Done()
		log.Print("signalled; exiting")
		return nil
	}

	if o.startDelay > 0 {
		log.Printf("waiting %v before serving (-start-delay)", o.startDelay)
		select {
		case <-ctx.Done():
			return nil // signalled while waiting
		case <-time.After(o.startDelay):
		}
	}
	if o.waitFile != "" {
		if err := waitForFile(ctx, o.waitFile); err != nil {
			return nil // signalled while waiting
		}
	}

	if o.proxyOf != "" {
		return serveProxy(ctx, o.proxyOf)
	}
	server := newServer(o)
	if o.httpAddr == "" && o.strayStdout {
		printStray()
	}
	if o.httpAddr == "" {
		log.Printf("serving %s on stdio (pid %d)", o.name, os.Getpid())
		// Stdout goes through crashWriter so that the crash tool exits only
		// once its reply has been written.
		err := server.Run(ctx, &mcp.IOTransport{Reader: os.Stdin, Writer: crashWriter{os.Stdout}})
		if o.exitDelay > 0 {
			select {
			case <-time.After(o.exitDelay):
			case <-ctx.Done():
			}
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	}
	return serveHTTP(ctx, server, o)
}

func serveHTTP(ctx context.Context, server *mcp.Server, o options) error {
	var handler http.Handler = mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: o.stateless, Logger: logger()},
	)
	if o.requireHeader != "" {
		name, value, ok := strings.Cut(o.requireHeader, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" {
			return fmt.Errorf(`-require-header %q: want "Name: value"`, o.requireHeader)
		}
		handler = requireHeader(handler, name, value)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", crashAfterReply(handler))
	if o.sse {
		mux.Handle("/sse", mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil))
	}

	ln, err := net.Listen("tcp", o.httpAddr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	// The line tests parse: keep its shape.
	fmt.Printf("listening on http://%s/mcp\n", ln.Addr())
	log.Printf("serving %s on http://%s/mcp (pid %d)", o.name, ln.Addr(), os.Getpid())

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
		return nil
	}
}

func requireHeader(next http.Handler, name, value string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(name) != value {
			log.Printf("refused %s %s: header %s missing or wrong", r.Method, r.URL.Path, name)
			http.Error(w, name+" header missing or wrong", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// textResult is a successful result with one text block.
func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

type addIn struct {
	A float64 `json:"a" jsonschema:"the first addend"`
	B float64 `json:"b" jsonschema:"the second addend"`
}

type addOut struct {
	Sum float64 `json:"sum" jsonschema:"a plus b"`
}

type greetIn struct {
	Name string `json:"name,omitempty" jsonschema:"who to greet (default World)"`
}

type shoutIn struct {
	Text string `json:"text" jsonschema:"the text to shout"`
}

type slowIn struct {
	MS int `json:"ms" jsonschema:"how long to sleep, in milliseconds"`
}

type addToolIn struct {
	Name string `json:"name,omitempty" jsonschema:"name of the tool to add (default added)"`
}

type empty struct{}

type oversizeIn struct {
	Bytes int `json:"bytes" jsonschema:"length of the text to return, in bytes"`
}

func newServer(o options) *mcp.Server {
	server := mcp.NewServer(
		&mcp.Implementation{Name: o.name, Version: "1.0.0"},
		withCompletion(withProtocol(withSubscriptions(&mcp.ServerOptions{Instructions: o.instructions, PageSize: o.pageSize, Logger: logger()}, o), o), o),
	)
	events := &eventLog{path: o.cancelFile}
	if o.contentTools {
		addContentTools(server)
	}
	if o.unusableTools {
		addUnusableTools(server)
	}
	if o.counter {
		addCounterTool(server)
	}
	if o.holdFile != "" {
		addHoldTool(server, o.holdFile, events)
	}
	if o.op {
		addOpTool(server)
	}
	if o.echoMeta {
		addMetaTool(server)
	}
	if o.annotated {
		addAnnotatedTools(server)
	}
	if o.removeTool {
		addRemoveTool(server)
	}
	if o.rewrite {
		addRewriteTool(server)
	}
	if o.hostile != "" {
		addHostileTool(server, o.hostile)
	}
	if o.roots {
		addRootsTool(server)
	}
	if o.sample {
		addSampleTool(server)
	}

	mcp.AddTool(server, &mcp.Tool{Name: "add", Description: "Add two numbers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			sum := in.A + in.B
			return textResult(strconv.FormatFloat(sum, 'f', -1, 64)), addOut{Sum: sum}, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "greet", Description: "Greet someone by name."},
		func(_ context.Context, _ *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, any, error) {
			name := in.Name
			if name == "" {
				name = "World"
			}
			return textResult("Hello, " + name + "!"), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "shout", Description: "Return the text in upper case."},
		func(_ context.Context, _ *mcp.CallToolRequest, in shoutIn) (*mcp.CallToolResult, any, error) {
			return textResult(strings.ToUpper(in.Text)), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "ping", Description: "Answer pong."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return textResult("pong"), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "fail", Description: "Always fail with a tool error."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{
				IsError: true,
				Content: []mcp.Content{&mcp.TextContent{Text: "the fixture failed on purpose"}},
			}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "image", Description: "Return text, a 4x4 PNG, and text."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "before the image"},
				&mcp.ImageContent{MIMEType: "image/png", Data: tinyPNG},
				&mcp.TextContent{Text: "after the image"},
			}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "bad-image", Description: "Return an image block whose bytes do not match its declared type."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a broken image follows"},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte("this is not a PNG")},
			}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "admin.reset", Description: "A tool whose name has a dot."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return textResult("reset done"), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "slow", Description: "Sleep for ms milliseconds; stop early when cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
			events.add("slow started")
			t := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
				events.add("slow done")
				return textResult(fmt.Sprintf("slept %d ms", in.MS)), nil, nil
			case <-ctx.Done():
				events.add("slow cancelled")
				return nil, nil, ctx.Err()
			}
		})
	mcp.AddTool(server, &mcp.Tool{Name: "crash", Description: "Reply, then exit about 25ms later."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			// The exit is armed here and fired by the writer that sends
			// this reply: the point is a server that dies between calls,
			// whatever the machine's load.
			crashArmed.Store(true)
			return textResult(crashReply), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "add-tool", Description: "Add a tool at runtime (the server then sends notifications/tools/list_changed)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addToolIn) (*mcp.CallToolResult, any, error) {
			name := in.Name
			if name == "" {
				name = "added"
			}
			mcp.AddTool(server, &mcp.Tool{Name: name, Description: "A tool added at runtime by add-tool."},
				func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
					return textResult("hello from " + name), nil, nil
				})
			return textResult("added tool " + name), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "env", Description: "Return the server's environment, one KEY=value per line."},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			env := os.Environ()
			slices.Sort(env)
			return textResult(strings.Join(env, "\n")), nil, nil
		})
	if o.progress {
		addProgressTool(server)
	}
	if o.elicit {
		addElicitTools(server)
	}
	if o.askInline {
		addAskInlineTool(server, &eventLog{path: o.actsFile})
	}
	if o.oversize {
		// Off by default, so the default tool list stays the same.
		mcp.AddTool(server, &mcp.Tool{Name: "oversize", Description: "Return a text of bytes bytes (one message that large)."},
			func(_ context.Context, _ *mcp.CallToolRequest, in oversizeIn) (*mcp.CallToolResult, any, error) {
				return textResult(strings.Repeat("x", max(in.Bytes, 0))), nil, nil
			})
	}
	for i := range o.extraTools {
		name := fmt.Sprintf("filler_%03d", i+1)
		mcp.AddTool(server, &mcp.Tool{
			Name:        name,
			Description: fmt.Sprintf("Filler tool number %d: echoes its text argument back, to give hosts many tools to list.", i+1),
		}, func(_ context.Context, _ *mcp.CallToolRequest, in shoutIn) (*mcp.CallToolResult, any, error) {
			return textResult(in.Text), nil, nil
		})
	}
	if o.resources > 0 {
		addResources(server, o.resources)
	}
	if o.prompts {
		addPrompts(server)
	}
	return server
}

// crashReply is the crash tool's text; the write that carries it triggers
// the exit.
const crashReply = "crashing in 25ms"

var crashArmed atomic.Bool

// wrote exits the process 25ms after p, if p carries the armed crash reply.
func wrote(p []byte) {
	if crashArmed.Load() && bytes.Contains(p, []byte(crashReply)) && crashArmed.CompareAndSwap(true, false) {
		time.AfterFunc(25*time.Millisecond, func() {
			log.Print("crashing, as asked by the crash tool")
			os.Exit(3)
		})
	}
}

// crashWriter is stdout, watched for the crash reply. Close leaves stdout
// open, as mcp.StdioTransport does.
type crashWriter struct{ w io.Writer }

func (c crashWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	wrote(p[:n])
	return n, err
}

func (crashWriter) Close() error { return nil }

// crashAfterReply watches HTTP responses for the crash reply.
func crashAfterReply(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&crashResponseWriter{ResponseWriter: w}, r)
	})
}

type crashResponseWriter struct{ http.ResponseWriter }

func (c *crashResponseWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	wrote(p[:n])
	return n, err
}

// Unwrap lets http.ResponseController reach the real writer.
func (c *crashResponseWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// eventLog appends lines to a file, if one is configured.
type eventLog struct {
	mu   sync.Mutex
	path string
}

func (l *eventLog) add(line string) {
	if l.path == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		log.Printf("event log: %v", err)
		return
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, line); err != nil {
		log.Printf("event log: %v", err)
	}
}

// tinyPNG is a real 4x4 PNG (a red square with a blue diagonal).
var tinyPNG = func() []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 4, 4))
	for y := range 4 {
		for x := range 4 {
			c := color.NRGBA{R: 0xd0, G: 0x20, B: 0x20, A: 0xff}
			if x == y {
				c = color.NRGBA{R: 0x20, G: 0x40, B: 0xd0, A: 0xff}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}()

// waitForFile returns once path exists, or ctx's error (-wait-file).
func waitForFile(ctx context.Context, path string) error {
	log.Printf("waiting for %s before serving (-wait-file)", path)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
