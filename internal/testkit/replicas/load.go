package replicas

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Load is a closed-loop load on an MCP endpoint, after go-sdk's load tester
// (examples/client/loadtest): Workers clients, each with its own session,
// call the fixture's add tool (or slow, with SlowMS) one call after
// another, and check each answer.
// A worker whose call fails closes its session and opens a new one, as a
// client would.
type Load struct {
	URL     string
	Workers int
	// CallTimeout bounds each call and each connect (default 30s). A
	// call is lost only if it fails: the bound is a hang guard, wide
	// enough for a slow call cut by a drain and retried elsewhere on a
	// loaded machine (3 s twice, plus the drain, in a test).
	CallTimeout time.Duration
	// SlowMS, if positive, has every call be the fixture's slow tool for
	// that many milliseconds, so that calls are in flight at any moment.
	SlowMS int
	// Connected, when set, is called after each session opened (its
	// handshake done).
	Connected func()
}

// LoadResult counts what a Load did.
type LoadResult struct {
	Calls   int64 // calls answered right
	Failed  int64 // calls that failed, or answered wrong or with isError
	Connect int64 // sessions opened (initialize)
	// ConnectFailed counts the connects that failed; each is retried.
	ConnectFailed int64
	Elapsed       time.Duration
	// Errors are the first few failures' texts.
	Errors []string
}

// Lost is every call or connect that failed.
func (r LoadResult) Lost() int64 { return r.Failed + r.ConnectFailed }

// PerSecond is the rate of good calls.
func (r LoadResult) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Calls) / r.Elapsed.Seconds()
}

// maxErrors is how many failures' texts a LoadResult keeps.
const maxErrors = 5

// The fixture's tools as the gateway serves them.
const (
	addTool  = "mcp__fx__add"
	slowTool = "mcp__fx__slow"
)

// Run drives the load until stop is closed (or ctx is done); then each
// worker finishes its call in flight, which counts. Calls are not
// cancelled by stop, only by ctx.
func (l Load) Run(ctx context.Context, stop <-chan struct{}) LoadResult {
	timeout := l.CallTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	var (
		calls, failed, connects, connectFailed atomic.Int64
		mu                                     sync.Mutex
		errs                                   []string
	)
	report := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if len(errs) < maxErrors {
			errs = append(errs, err.Error())
		}
	}
	stopped := func() bool {
		select {
		case <-stop:
			return true
		case <-ctx.Done():
			return true
		default:
			return false
		}
	}
	// One HTTP client for all: HAProxy sees a pool of keep-alive
	// connections, as from a busy client host.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = l.Workers
	defer transport.CloseIdleConnections()
	httpClient := &http.Client{Transport: transport}
	start := time.Now()
	var wg sync.WaitGroup
	for w := range l.Workers {
		wg.Go(func() {
			client := mcp.NewClient(&mcp.Implementation{Name: "dsh-replicas-load", Version: "v1"}, nil)
			var cs *mcp.ClientSession
			defer func() {
				if cs != nil {
					cs.Close()
				}
			}()
			for i := 0; !stopped(); i++ {
				if cs == nil {
					cctx, cancel := context.WithTimeout(ctx, timeout)
					var err error
					cs, err = client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: l.URL, HTTPClient: httpClient}, nil)
					cancel()
					if err != nil {
						if ctx.Err() == nil {
							connectFailed.Add(1)
							report(fmt.Errorf("connect: %w", err))
						}
						cs = nil
						// Not in a tight loop while nothing answers.
						select {
						case <-time.After(50 * time.Millisecond):
						case <-ctx.Done():
						}
						continue
					}
					connects.Add(1)
					if l.Connected != nil {
						l.Connected()
					}
				}
				cctx, cancel := context.WithTimeout(ctx, timeout)
				var err error
				if l.SlowMS > 0 {
					err = callSlow(cctx, cs, l.SlowMS)
				} else {
					err = callAdd(cctx, cs, w, i)
				}
				cancel()
				if err == nil {
					calls.Add(1)
					continue
				}
				if ctx.Err() != nil {
					return
				}
				failed.Add(1)
				report(err)
				cs.Close()
				cs = nil
			}
		})
	}
	wg.Wait()
	return LoadResult{Calls: calls.Load(), Failed: failed.Load(), Connect: connects.Load(),
		ConnectFailed: connectFailed.Load(), Elapsed: time.Since(start), Errors: errs}
}

// callAdd calls add {a, b} and checks the sum.
func callAdd(ctx context.Context, cs *mcp.ClientSession, a, b int) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: addTool, Arguments: map[string]any{"a": a, "b": b}})
	if err != nil {
		return fmt.Errorf("call: %w", err)
	}
	if res.IsError {
		return fmt.Errorf("call: isError: %v", res.Content)
	}
	var out struct{ Sum *float64 }
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, &out); err != nil || out.Sum == nil || *out.Sum != float64(a+b) {
		return errors.New("call: wrong answer: " + string(data))
	}
	return nil
}

// callSlow calls slow {ms} and checks its answer.
func callSlow(ctx context.Context, cs *mcp.ClientSession, ms int) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: slowTool, Arguments: map[string]any{"ms": ms}})
	if err != nil {
		return fmt.Errorf("call: %w", err)
	}
	want := fmt.Sprintf("slept %d ms", ms)
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok && t.Text == want && !res.IsError {
			return nil
		}
	}
	return fmt.Errorf("call: wrong answer (isError %v): %v", res.IsError, res.Content)
}
