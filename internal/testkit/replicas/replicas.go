// Package replicas runs `dsh-host serve --http` replicas behind HAProxy on
// 127.0.0.1 and drives MCP calls through it: the scenario scripts/replicas
// runs (through scripts/replicas.d/driver) and its test. Every process it
// starts is stopped by Cluster.Close, and on Linux also dies with the
// process that started it.
package replicas

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"text/template"
	"time"
)

// Options say what a Cluster runs.
type Options struct {
	DshHost  string // the dsh-host binary
	Fixture  string // the testdata/mcpfixture binary, each replica's MCP server (stdio)
	HAProxy  string // the haproxy binary
	Template string // the HAProxy config template (scripts/replicas.d/haproxy.cfg)
	Dir      string // where compositions, configs and logs go
	Replicas int
	// Stateful serves sessions (no --stateless) and makes HAProxy stick
	// each session to its replica.
	Stateful bool
	// DrainTimeout is each replica's --drain-timeout (0: the default).
	DrainTimeout time.Duration
	// Gateway, when set, is more of each replica's gateway entry config,
	// as YAML flow mapping entries (such as `maxSessionsPerCaller: 2`):
	// the replica then serves a gateway entry of its composition instead
	// of serve's flags.
	Gateway string
}

// startTimeout bounds every wait for a process to listen or be ready.
const startTimeout = 30 * time.Second

// stopTimeout bounds the wait for a process to exit after SIGTERM, before
// it is killed.
const stopTimeout = 30 * time.Second

// Replica is one `dsh-host serve --http` process.
type Replica struct {
	Name string // r1, r2...: its server name in HAProxy
	Addr string // host:port of its listener
	Log  string // its log file (JSON lines)
	proc *process
}

// Cluster is N replicas behind one HAProxy.
type Cluster struct {
	URL      string // the MCP endpoint through HAProxy
	Replicas []*Replica
	stats    string // HAProxy's admin socket
	haproxy  *process
	procs    []*process
}

// Start starts o.Replicas replicas, waits until each is ready, and starts
// HAProxy in front of them. On error, what was started is stopped.
func Start(ctx context.Context, o Options) (c *Cluster, err error) {
	if o.Replicas < 1 {
		return nil, fmt.Errorf("replicas: %d replicas: want at least 1", o.Replicas)
	}
	c = &Cluster{}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	type started struct {
		i   int
		r   *Replica
		err error
	}
	results := make(chan started, o.Replicas)
	for i := range o.Replicas {
		go func() {
			r, err := startReplica(ctx, o, fmt.Sprintf("r%d", i+1))
			results <- started{i, r, err}
		}()
	}
	c.Replicas = make([]*Replica, o.Replicas)
	var errs []error
	for range o.Replicas {
		s := <-results
		if s.err != nil {
			errs = append(errs, s.err)
			continue
		}
		c.procs = append(c.procs, s.r.proc)
		c.Replicas[s.i] = s.r
	}
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	if err := c.startHAProxy(ctx, o); err != nil {
		return c, err
	}
	return c, nil
}

// startReplica starts one replica on a free port of 127.0.0.1, in its own
// directory (composition, DSH_HOME, log), and waits for its /readyz.
func startReplica(ctx context.Context, o Options, name string) (*Replica, error) {
	dir := filepath.Join(o.Dir, name)
	if err := os.MkdirAll(filepath.Join(dir, "home"), 0o755); err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "composition.yml")
	composition := fmt.Sprintf("plugins:\n  - {id: fx, name: mcp-client, config: {serverName: fx, transport: stdio, command: %q}}\n", o.Fixture)
	if o.Gateway != "" {
		// serve's flags are ignored then: the entry says it all.
		composition += fmt.Sprintf("  - {id: gateway, name: gateway, config: {http: \"127.0.0.1:0\", stateless: %v, drainTimeout: %q, %s}}\n",
			!o.Stateful, max(o.DrainTimeout, 0).String(), o.Gateway)
	}
	if err := os.WriteFile(file, []byte(composition), 0o644); err != nil {
		return nil, err
	}
	args := []string{"serve", "--http", "127.0.0.1:0", "--log-format", "json", "-c", file}
	if !o.Stateful {
		args = append(args, "--stateless")
	}
	if o.DrainTimeout > 0 {
		args = append(args, "--drain-timeout", o.DrainTimeout.String())
	}
	r := &Replica{Name: name, Log: filepath.Join(dir, "serve.log")}
	logFile, err := os.Create(r.Log)
	if err != nil {
		return nil, err
	}
	listening := make(chan string, 1)
	watch := &lineWriter{out: logFile, line: func(line []byte) {
		var m struct{ Msg, URL string }
		if json.Unmarshal(line, &m) == nil && m.Msg == "gateway listening" {
			select {
			case listening <- m.URL:
			default:
			}
		}
	}}
	cmd := exec.Command(o.DshHost, args...)
	cmd.Env = append(os.Environ(), "DSH_HOME="+filepath.Join(dir, "home"))
	cmd.Stdout, cmd.Stderr = logFile, watch
	r.proc, err = startProcess(name, cmd, logFile)
	if err != nil {
		logFile.Close()
		return nil, err
	}
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case url := <-listening:
		r.Addr = strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
	case <-r.proc.exited:
		return nil, fmt.Errorf("replicas: %s exited before listening: %v; see %s", name, r.proc.err, r.Log)
	case <-timer.C:
		r.proc.stop()
		return nil, fmt.Errorf("replicas: %s did not listen within %v; see %s", name, startTimeout, r.Log)
	case <-ctx.Done():
		r.proc.stop()
		return nil, ctx.Err()
	}
	if err := waitReady(ctx, "http://"+r.Addr+"/readyz", r.proc.exited); err != nil {
		r.proc.stop()
		return nil, fmt.Errorf("replicas: %s: %w; see %s", name, err, r.Log)
	}
	return r, nil
}

// waitReady polls url until it answers 200, the process exits, or
// startTimeout passes.
func waitReady(ctx context.Context, url string, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	last := "no answer"
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(body))
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before %s answered 200 (last: %s)", url, last)
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer 200 within %v (last: %s)", url, startTimeout, last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// configData fills the HAProxy config template.
type configData struct {
	Front, Stats string
	Stateful     bool
	Servers      []*Replica
}

// startHAProxy writes HAProxy's config from the template, checks it
// (haproxy -c), starts HAProxy on a free port and waits until it answers
// with every replica up.
func (c *Cluster) startHAProxy(ctx context.Context, o Options) error {
	text, err := os.ReadFile(o.Template)
	if err != nil {
		return fmt.Errorf("replicas: the HAProxy config template: %w", err)
	}
	tmpl, err := template.New(filepath.Base(o.Template)).Option("missingkey=error").Parse(string(text))
	if err != nil {
		return fmt.Errorf("replicas: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	front := fmt.Sprintf("127.0.0.1:%d", port)
	c.URL = "http://" + front + "/mcp"
	c.stats = filepath.Join(o.Dir, "haproxy.sock")
	var cfg bytes.Buffer
	if err := tmpl.Execute(&cfg, configData{Front: front, Stats: c.stats, Stateful: o.Stateful, Servers: c.Replicas}); err != nil {
		return fmt.Errorf("replicas: %s: %w", o.Template, err)
	}
	file := filepath.Join(o.Dir, "haproxy.cfg")
	if err := os.WriteFile(file, cfg.Bytes(), 0o644); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, o.HAProxy, "-c", "-q", "-f", file).CombinedOutput(); err != nil {
		return fmt.Errorf("replicas: haproxy -c -f %s (from %s): %v\n%s", file, o.Template, err, out)
	}
	logName := filepath.Join(o.Dir, "haproxy.log")
	logFile, err := os.Create(logName)
	if err != nil {
		return err
	}
	cmd := exec.Command(o.HAProxy, "-db", "-f", file)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	c.haproxy, err = startProcess("haproxy", cmd, logFile)
	if err != nil {
		logFile.Close()
		return err
	}
	c.procs = append(c.procs, c.haproxy)
	// Up once its admin socket says so for every replica: HAProxy counts a
	// server up before its first check, so this is when it listens.
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for {
		stats, err := c.Stats()
		if err == nil && stats.up() == len(c.Replicas) {
			return nil
		}
		select {
		case <-c.haproxy.exited:
			return fmt.Errorf("replicas: haproxy exited: %v; see %s", c.haproxy.err, logName)
		case <-ctx.Done():
			return fmt.Errorf("replicas: haproxy did not have its %d replicas up within %v (%v); see %s", len(c.Replicas), startTimeout, err, logName)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Terminate sends SIGTERM to replica r, which drains.
func (c *Cluster) Terminate(r *Replica) error {
	return r.proc.cmd.Process.Signal(syscall.SIGTERM)
}

// Exited is closed when replica r's process has exited.
func (r *Replica) Exited() <-chan struct{} { return r.proc.exited }

// ExitErr is how replica r's process ended (nil: exit 0), once Exited is
// closed.
func (r *Replica) ExitErr() error {
	<-r.proc.exited
	return r.proc.err
}

// Close stops HAProxy and every replica (SIGTERM, then SIGKILL after
// stopTimeout) and waits for them. It returns the replicas' exit errors
// (HAProxy's SIGTERM exit is not one).
func (c *Cluster) Close() error {
	var wg sync.WaitGroup
	for _, p := range c.procs {
		wg.Go(p.stop)
	}
	wg.Wait()
	var errs []error
	for _, p := range c.procs {
		if p != c.haproxy && p.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.name, p.err))
		}
	}
	return errors.Join(errs...)
}

// process is a started child process whose exit is awaited once.
type process struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // set before exited closes
}

func startProcess(name string, cmd *exec.Cmd, closeAfter io.Closer) (*process, error) {
	dieWithParent(cmd)
	// A grandchild holding the output open must not hold Wait.
	cmd.WaitDelay = stopTimeout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("replicas: start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		closeAfter.Close()
		close(p.exited)
	}()
	return p, nil
}

// stop sends SIGTERM, and SIGKILL if the process has not exited after
// stopTimeout, and waits for it.
func (p *process) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-p.exited:
	case <-timer.C:
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// lineWriter writes to out and hands line each complete line.
type lineWriter struct {
	out  io.Writer
	line func([]byte)
	buf  []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.line(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	return w.out.Write(p)
}

// freePort returns a port of 127.0.0.1 free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("replicas: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Stats are HAProxy's counters (its admin socket's "show stat"), by
// server name; BACKEND and FRONTEND are the totals.
type Stats map[string]map[string]string

// Stats reads HAProxy's counters now.
func (c *Cluster) Stats() (Stats, error) {
	conn, err := net.DialTimeout("unix", c.stats, time.Second)
	if err != nil {
		return nil, fmt.Errorf("replicas: HAProxy's admin socket: %w", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "show stat\n"); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(conn)
	var header []string
	stats := Stats{}
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# ") {
			header = strings.Split(strings.TrimPrefix(line, "# "), ",")
			continue
		}
		fields := strings.Split(line, ",")
		if header == nil || len(fields) < 2 || fields[0] != "gateways" && fields[1] != "FRONTEND" {
			continue
		}
		row := map[string]string{}
		for i, f := range fields {
			if i < len(header) {
				row[header[i]] = f
			}
		}
		stats[fields[1]] = row
	}
	if header == nil {
		return nil, fmt.Errorf("replicas: HAProxy's admin socket answered no stats (%v)", sc.Err())
	}
	return stats, sc.Err()
}

// up counts the servers HAProxy has up.
func (s Stats) up() int {
	n := 0
	for name, row := range s {
		if name != "BACKEND" && name != "FRONTEND" && strings.HasPrefix(row["status"], "UP") {
			n++
		}
	}
	return n
}
