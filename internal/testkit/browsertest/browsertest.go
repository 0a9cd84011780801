// Package browsertest drives a real headless Chromium from a test
// (chromedp): pages load as a person's browser loads them, with their
// Content-Security-Policy, scripts and event streams.
//
// Start finds the browser ($DSH_TEST_CHROMIUM, else chromium on the
// PATH); without one the test is skipped, or fails under CI=true, where
// scripts/test installs Debian's chromium. It records what must never
// happen on a page: a console error, an uncaught exception, a CSP
// violation, a JavaScript dialog. The browser is gone when the test ends.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Browser is one headless Chromium with one tab.
type Browser struct {
	// Ctx runs actions in the tab (chromedp.Do, chromedp.Run).
	Ctx context.Context

	mu       sync.Mutex
	problems []string
	dialogs  []string
}

// watchCSP reports every CSP violation to the console, where Problems
// finds it; run in each page before its own scripts (a DevTools script
// is not bound by the page's policy).
const watchCSP = `document.addEventListener("securitypolicyviolation", (e) =>
  console.error("CSP violation: " + e.violatedDirective + " blocked " + (e.blockedURI || "inline") + " at " + e.sourceFile + ":" + e.lineNumber));`

// Start starts a browser for t, bounded by timeout, and stops it (its
// processes gone) when t ends.
func Start(t testing.TB, timeout time.Duration) *Browser {
	t.Helper()
	path := os.Getenv("DSH_TEST_CHROMIUM")
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		msg := "no chromium: install Debian's chromium (scripts/test does) or set DSH_TEST_CHROMIUM"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 860),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to run as root with its sandbox; the test
		// machine's container runs tests as root.
		opts = append(opts, chromedp.NoSandbox)
	}
	timeoutCtx, cancelTimeout := context.WithTimeout(context.Background(), timeout)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(timeoutCtx, opts...)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	b := &Browser{Ctx: ctx}
	t.Cleanup(func() {
		_ = chromedp.Cancel(ctx) // closes the browser and waits for it
		cancel()
		cancelAlloc()
		cancelTimeout()
	})
	if err := chromedp.Listen(ctx, b.listen); err != nil {
		t.Fatalf("start chromium (%s): %v", path, err)
	}
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: watchCSP}); err != nil {
		t.Fatal(err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException || m.Type == chromedp.ConsoleWarning && m.Source == "security" {
				b.mu.Lock()
				b.problems = append(b.problems, fmt.Sprintf("%s: %s (%s:%d)", m.Type, m.Text, m.URL, m.Line))
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// listen records and dismisses dialogs: a page's alert() must never
// happen, and an open one would stall the page.
func (b *Browser) listen(ev any) {
	d, ok := ev.(*page.EventJavascriptDialogOpening)
	if !ok {
		return
	}
	b.mu.Lock()
	b.dialogs = append(b.dialogs, string(d.Type)+": "+d.Message)
	b.mu.Unlock()
	go chromedp.Call(b.Ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
}

// Problems returns the console errors, exceptions and CSP violations so
// far.
func (b *Browser) Problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.problems...)
}

// Dialogs returns the JavaScript dialogs pages opened so far.
func (b *Browser) Dialogs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.dialogs...)
}

// Clean fails t if a page logged an error, threw, broke the CSP or opened
// a dialog since the last Clean.
func (b *Browser) Clean(t testing.TB, where string) {
	t.Helper()
	b.mu.Lock()
	p, d := b.problems, b.dialogs
	b.problems, b.dialogs = nil, nil
	b.mu.Unlock()
	if len(p) > 0 {
		t.Errorf("%s: the page had console errors or CSP violations:\n%s", where, strings.Join(p, "\n"))
	}
	if len(d) > 0 {
		t.Errorf("%s: a page opened dialogs: %q", where, d)
	}
}

// Do runs actions in the tab, failing t on an error.
func (b *Browser) Do(t testing.TB, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.Ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// Eval returns the value of a JavaScript expression in the page.
func Eval[T any](t testing.TB, b *Browser, expr string) T {
	t.Helper()
	v, err := chromedp.Run(b.Ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}
