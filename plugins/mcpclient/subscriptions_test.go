package mcpclient

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/services/resources"
)

// An unsubscribe is bounded by toolCallTimeoutMs of its own, whatever the
// caller's context allows: a server that never answers does not hold the
// last subscriber's dispose.
func TestUnsubscribeBounded(t *testing.T) {
	// 2025-11-25: resources/unsubscribe is a request the server answers
	// (later revisions end a stream of the client's own instead).
	srv := newFakeServer(t, &mcp.ServerOptions{
		SupportedProtocolVersions: []string{"2025-11-25"},
		SubscribeHandler:          func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(ctx context.Context, _ *mcp.UnsubscribeRequest) error {
			<-ctx.Done() // never answers
			return ctx.Err()
		},
	})
	srv.srv.AddResource(&mcp.Resource{URI: "x://1", Name: "1"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	cfg := testConfig("un")
	cfg.ToolCallTimeoutMs = 100
	e := mustStart(t, cfg, srv)
	caller, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := e.client.Load().bridge.Unsubscribe(caller, "x://1")
	if err == nil || caller.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unsubscribe = %v (caller's ctx: %v), want its own toolCallTimeoutMs deadline", err, caller.Err())
	}
}

// A new connection renews the subscriptions of the last together, under
// one deadline, rather than one after another while the supervisor waits:
// here the server answers each renewal only once both are in flight.
func TestSubscriptionsRenewedTogether(t *testing.T) {
	var renewing atomic.Bool
	var mu sync.Mutex
	in, both, renewed := 0, make(chan struct{}), 0
	srv := newFakeServer(t, &mcp.ServerOptions{
		SupportedProtocolVersions: []string{"2025-11-25"},
		SubscribeHandler: func(ctx context.Context, _ *mcp.SubscribeRequest) error {
			if !renewing.Load() {
				return nil
			}
			mu.Lock()
			if in++; in == 2 {
				close(both)
			}
			mu.Unlock()
			select {
			case <-both:
				mu.Lock()
				renewed++
				mu.Unlock()
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	for _, uri := range []string{"x://1", "x://2"} {
		srv.srv.AddResource(&mcp.Resource{URI: uri, Name: uri}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
	}
	e := mustStart(t, testConfig("rn"), srv, func(_ *testEnv, o *options) { o.extra.Resources = resources.New(nil) })
	c := e.client.Load()
	for _, uri := range []string{"x://1", "x://2"} {
		if err := c.bridge.Subscribe(context.Background(), uri); err != nil {
			t.Fatal(err)
		}
	}
	renewing.Store(true)
	srv.mu.Lock()
	ss := srv.sessions[len(srv.sessions)-1]
	srv.mu.Unlock()
	_ = ss.Close() // the server goes; the client reconnects and renews
	eventually(t, "both subscriptions renewed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return renewed == 2
	})
}
