package replicas

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
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
	// SlowMS is the load's (Load.SlowMS).
	SlowMS int
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
	// InFlightAtDrain is how many calls the terminated replica had in
	// flight when its drain began (its log's count), -1 if unknown.
	InFlightAtDrain int
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
	// Every worker's session is open before the SIGTERM: one whose
	// handshake the victim began and its drain refused half-way would be
	// a failed connect, which the scenario's tests count as loss, decided
	// by whether a loaded machine had opened the sessions by halfway.
	var connects atomic.Int64
	allConnected := make(chan struct{})
	connected := func() {
		if connects.Add(1) == int64(s.Workers) {
			close(allConnected)
		}
	}
	go func() {
		results <- Load{URL: c.URL, Workers: s.Workers, SlowMS: s.SlowMS, Connected: connected}.Run(ctx, stop)
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
		select {
		case <-allConnected:
		case <-ctx.Done():
		}
		victim := c.Replicas[0]
		out.Terminated = victim.Name
		// The SIGTERM goes when HAProxy has a request on the victim (for
		// at most a second more), so that the drain has work in flight.
		busy, cancelBusy := context.WithTimeout(ctx, time.Second)
		for busy.Err() == nil {
			st, err := c.Stats()
			if err == nil {
				out.ServedBefore = count(st[victim.Name], "stot")
				if count(st[victim.Name], "scur") > 0 {
					break
				}
			}
			select {
			case <-busy.Done():
			case <-time.After(5 * time.Millisecond):
			}
		}
		cancelBusy()
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
		out.InFlightAtDrain = victim.inFlightAtDrain()
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

// drainingMsg is the line a gateway logs as its drain begins, with the
// calls in flight (gateway/calls.go).
const drainingMsg = "gateway: draining: no new session or request is taken; waiting for the requests in flight"

// inFlightAtDrain reads r's log for the calls it had in flight when its
// drain began; -1 if the log does not say.
func (r *Replica) inFlightAtDrain() int {
	f, err := os.Open(r.Log)
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m struct {
			Msg      string
			InFlight *int
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Msg == drainingMsg && m.InFlight != nil {
			return *m.InFlight
		}
	}
	return -1
}
