package replicas

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Scenario is one run: a cluster, a load through it for Duration, and
// optionally a SIGTERM to the first replica halfway.
type Scenario struct {
	Options
	Workers  int
	Duration time.Duration
	// Terminate sends SIGTERM to replica r1 halfway through; the load then
	// runs until Duration has passed and r1 has exited.
	Terminate bool
}

// Outcome is what a Scenario saw.
type Outcome struct {
	Replicas int
	Stateful bool
	Workers  int
	Load     LoadResult
	// With Terminate: the terminated replica's requests before its
	// SIGTERM (HAProxy's count), and how it ended.
	Terminated    string
	ServedBefore  int64
	TerminatedErr error
	// Retries and Redispatches are HAProxy's, over the whole run: requests
	// it sent again, and sent again to another replica.
	Retries, Redispatches int64
	// Sent5xx counts the 5xx answers HAProxy gave clients.
	Sent5xx int64
	// Served is each replica's request count (HAProxy's).
	Served map[string]int64
}

// Run runs s; the cluster is gone when it returns.
func (s Scenario) Run(ctx context.Context) (out Outcome, err error) {
	out = Outcome{Replicas: s.Replicas, Stateful: s.Stateful, Workers: s.Workers, Served: map[string]int64{}}
	c, err := Start(ctx, s.Options)
	if err != nil {
		return out, err
	}
	defer func() {
		if cerr := c.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("replicas: a replica did not stop cleanly: %w", cerr)
		}
	}()
	stop := make(chan struct{})
	results := make(chan LoadResult, 1)
	go func() {
		results <- Load{URL: c.URL, Workers: s.Workers}.Run(ctx, stop)
	}()
	timer := time.NewTimer(s.Duration)
	defer timer.Stop()
	if s.Terminate {
		half := time.NewTimer(s.Duration / 2)
		select {
		case <-half.C:
		case <-ctx.Done():
		}
		half.Stop()
		victim := c.Replicas[0]
		out.Terminated = victim.Name
		if st, err := c.Stats(); err == nil {
			out.ServedBefore = count(st[victim.Name], "stot")
		}
		if err := c.Terminate(victim); err != nil {
			close(stop)
			<-results
			return out, fmt.Errorf("replicas: SIGTERM %s: %w", victim.Name, err)
		}
		select {
		case <-victim.Exited():
			out.TerminatedErr = victim.ExitErr()
		case <-ctx.Done():
		}
	}
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
	close(stop)
	out.Load = <-results
	st, err := c.Stats()
	if err != nil {
		return out, err
	}
	for _, r := range c.Replicas {
		out.Served[r.Name] = count(st[r.Name], "stot")
	}
	out.Retries = count(st["BACKEND"], "wretr")
	out.Redispatches = count(st["BACKEND"], "wredis")
	out.Sent5xx = count(st["FRONTEND"], "hrsp_5xx")
	return out, ctx.Err()
}

// Reopened counts the sessions opened past each worker's first: after a
// failed call (a stateful replica's sessions die with it) or connect.
func (o Outcome) Reopened() int64 {
	return max(o.Load.Connect-int64(o.Workers), 0)
}

func count(row map[string]string, key string) int64 {
	n, _ := strconv.ParseInt(row[key], 10, 64)
	return n
}
