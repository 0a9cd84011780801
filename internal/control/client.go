package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/dshhome"
	"github.com/dsh-host/dsh-host/internal/usersock"
	"github.com/dsh-host/dsh-host/services/commands"
	"github.com/dsh-host/dsh-host/services/elicit"
	"github.com/dsh-host/dsh-host/services/tools"
)

// helloTimeout bounds Dial's first exchange: a host that takes longer to
// say who it is would not answer a command either.
const helloTimeout = 5 * time.Second

// Client asks a running host over its control socket.
type Client struct {
	Hello // who answers
	tr    *http.Transport
	http  *http.Client
}

var _ app.App = (*Client)(nil)

// Dial connects to the running host of the composition in file. It
// returns ErrNoHost when there is none: no socket, or a stale one nobody
// answers on.
//
// A file named through a symlink is asked at the socket of that name
// first, which a host started on the link serves however the link has
// been re-pointed since, then at the socket of the file it leads to.
// Without a host under this DSH_HOME, the index of running hosts
// (index.go) may name one of the composition under another.
func Dial(ctx context.Context, file string) (*Client, error) {
	if alias, ok, _ := namePath(file); ok {
		if c, err := dialAt(ctx, alias); !errors.Is(err, ErrNoHost) {
			return c, err
		}
	}
	path, err := SocketPath(file)
	if err != nil && !errors.Is(err, usersock.ErrTooLong) {
		return nil, err
	}
	if err == nil {
		if c, err := dialAt(ctx, path); !errors.Is(err, ErrNoHost) {
			return c, err
		}
	}
	if other := indexed(file); other != "" && other != path {
		return dialAt(ctx, other)
	}
	return nil, ErrNoHost
}

// OtherHome is the DSH_HOME of the host c reached when it is not this
// process's (found through the index of running hosts), else "".
func (c *Client) OtherHome() string {
	if mine, err := dshhome.Dir(); c.Home == "" || err == nil && mine == c.Home {
		return ""
	}
	return c.Home
}

// dialAt connects to the host answering at the socket path.
func dialAt(ctx context.Context, path string) (*Client, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoHost
	}
	tr := &http.Transport{DialContext: dialer(path), DisableCompression: true}
	c := &Client{tr: tr, http: &http.Client{Transport: tr}}
	hctx, cancel := context.WithTimeout(ctx, helloTimeout)
	defer cancel()
	if err := c.get(hctx, pathHello, &c.Hello); err != nil {
		c.Close()
		// Nobody listens: the socket's host died (or it went away
		// meanwhile). Refused, on every platform, is a failed dial.
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" && !errors.Is(err, fs.ErrPermission) {
			return nil, ErrNoHost
		}
		if errors.Is(err, fs.ErrPermission) {
			return nil, fmt.Errorf("%w: %s is not this user's to connect to (%v): it belongs to the user who started the host", ErrRefused, path, err)
		}
		return nil, err
	}
	return c, nil
}

// ErrRefused is returned (wrapped, with the reason) by Dial and the
// Client's requests when a host runs on the socket and refused the
// connection: its connection limit is reached, or the caller is another
// user. Unlike ErrNoHost, there is a host: starting another copy of the
// composition is not what the user asked for.
var ErrRefused = errors.New("the running host refused the connection")

// Close releases the client's idle connection.
func (c *Client) Close() { c.tr.CloseIdleConnections() }

// Status asks for the host's instances.
func (c *Client) Status(ctx context.Context) (st app.Status, err error) {
	return st, c.get(ctx, pathStatus, &st)
}

// Tools asks for the tool list req's caller sees.
func (c *Client) Tools(ctx context.Context, req app.ToolsRequest) (tl app.ToolList, err error) {
	return tl, c.post(ctx, pathTools, req, &tl)
}

// Prompt asks for the tools array of req's caller.
func (c *Client) Prompt(ctx context.Context, req app.ToolsRequest) (p app.Prompt, err error) {
	return p, c.post(ctx, pathPrompt, req, &p)
}

// Commands asks for the registered slash commands.
func (c *Client) Commands(ctx context.Context) (list []app.CommandInfo, err error) {
	return list, c.get(ctx, pathCommands, &list)
}

// Command runs a slash command on the host; its questions go to
// req.Answer when set.
func (c *Client) Command(ctx context.Context, req app.CommandRequest) (r commands.Reply, err error) {
	if req.Answer == nil {
		return r, c.post(ctx, pathCommand, commandWire{CommandRequest: req}, &r)
	}
	var reply *commands.Reply
	err = c.stream(ctx, pathCommand, commandWire{CommandRequest: req, Ask: true}, req.Answer, func(l readLine) bool {
		reply = l.Reply
		return reply != nil
	})
	if err != nil {
		return r, err
	}
	return *reply, nil
}

// Resources asks for the resources and templates that pass req's filter.
func (c *Client) Resources(ctx context.Context, req app.ResourcesRequest) (l app.ResourceList, err error) {
	return l, c.post(ctx, pathResources, req, &l)
}

// Read has the host read one resource.
func (c *Client) Read(ctx context.Context, req app.ReadRequest) (r app.ReadAnswer, err error) {
	return r, c.post(ctx, pathRead, req, &r)
}

// Reload has the host re-read its composition, and waits for the outcome.
func (c *Client) Reload(ctx context.Context) (r app.ReloadResult, err error) {
	return r, c.post(ctx, pathReload, struct{}{}, &r)
}

// Login logs in here, not in the host: the browser is the caller's, and
// the token store ($DSH_HOME/oauth) is shared, where the running host
// waiting for the login finds it.
func (c *Client) Login(ctx context.Context, req app.LoginRequest) (string, error) {
	return (&app.Local{File: c.File}).Login(ctx, req)
}

// Logout deletes the login here, as Login makes it.
func (c *Client) Logout(ctx context.Context, req app.LoginRequest) (string, error) {
	return (&app.Local{File: c.File}).Logout(ctx, req)
}

// Review asks the policy what trusting req's tools would approve.
func (c *Client) Review(ctx context.Context, req app.TrustRequest) (r app.Review, err error) {
	return r, c.post(ctx, pathReview, req, &r)
}

// Trust approves the definitions req.Digest names.
func (c *Client) Trust(ctx context.Context, req app.TrustRequest) (r commands.Reply, err error) {
	return r, c.post(ctx, pathTrust, req, &r)
}

// Explain asks the policy how it decides req's call.
func (c *Client) Explain(ctx context.Context, req app.ExplainRequest) (r commands.Reply, err error) {
	return r, c.post(ctx, pathExplain, req, &r)
}

// ChatCompact summarizes req's conversation on the host.
func (c *Client) ChatCompact(ctx context.Context, req app.ChatCompactRequest) (r app.ChatCompactResult, err error) {
	return r, c.post(ctx, pathChatCompact, req, &r)
}

// ChatSession starts or resumes a conversation on the host.
func (c *Client) ChatSession(ctx context.Context, req app.ChatSessionRequest) (r app.ChatInfo, err error) {
	return r, c.post(ctx, pathChatSession, req, &r)
}

// ChatSessions lists the recorded sessions, marking req's
// conversation's.
func (c *Client) ChatSessions(ctx context.Context, req app.ChatSessionsRequest) (r app.SessionList, err error) {
	path := pathChatSessions
	if req.Conversation != "" {
		path += "?" + url.Values{"conversation": {req.Conversation}}.Encode()
	}
	return r, c.get(ctx, path, &r)
}

// readResult is wireResult as the client reads it.
type readResult struct {
	Content []tools.Content `json:"content"`
	Value   json.RawMessage `json:"value"`
	Error   string          `json:"error"`
	Kind    string          `json:"kind"`
	Failed  bool            `json:"failed"`
}

// readLine is streamLine as the client reads it.
type readLine struct {
	Call     string           `json:"call"`
	Progress *tools.Progress  `json:"progress"`
	Question *questionLine    `json:"question"`
	Event    *app.ChatEvent   `json:"event"`
	Status   *app.StatusEvent `json:"status"`
	Result   *readResult      `json:"result"`
	Chat     *app.ChatResult  `json:"chat"`
	Audit    *app.AuditRecord `json:"audit"`
	Reply    *commands.Reply  `json:"reply"`
	Error    string           `json:"error"`
	Kind     string           `json:"kind"`
}

// Call runs a tool call on the host. Its progress goes to req.Progress,
// its questions to req.Answer. Ending ctx closes the request,
// which cancels the call on the host.
func (c *Client) Call(ctx context.Context, req app.CallRequest) (tools.Result, error) {
	progress := req.Progress
	wire := callWire{CallRequest: req, WantProgress: progress != nil, Ask: req.Answer != nil}
	var res *readResult
	err := c.stream(ctx, pathCall, wire, req.Answer, func(l readLine) bool {
		if l.Progress != nil {
			if progress != nil {
				progress(*l.Progress)
			}
		}
		res = l.Result
		return res != nil
	})
	if err != nil {
		return c.canceled(ctx, err)
	}
	out := tools.Result{Content: res.Content, Failed: res.Failed}
	if len(res.Value) > 0 && string(res.Value) != "null" {
		out.Value = res.Value
	}
	if res.Error != "" {
		out.Err = &remoteError{msg: res.Error, kind: errKinds[res.Kind]}
	}
	return out, nil
}

// Chat runs one turn of req's conversation on the host.
func (c *Client) Chat(ctx context.Context, req app.ChatRequest) (app.ChatResult, error) {
	wire := chatWire{ChatRequest: req, WantEvents: req.Events != nil, Ask: req.Answer != nil}
	var res *app.ChatResult
	err := c.stream(ctx, pathChat, wire, req.Answer, func(l readLine) bool {
		if l.Event != nil && req.Events != nil {
			req.Events(*l.Event)
		}
		res = l.Chat
		return res != nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return app.ChatResult{Error: ctx.Err().Error(), Canceled: errors.Is(ctx.Err(), context.Canceled)}, nil
		}
		return app.ChatResult{}, err
	}
	return *res, nil
}

// Watch follows the host's status changes until ctx ends or the host
// goes: the channel is then closed.
func (c *Client) Watch(ctx context.Context) (<-chan app.StatusEvent, error) {
	resp, err := c.do(ctx, http.MethodGet, pathWatch, nil)
	if err != nil {
		return nil, err
	}
	out := make(chan app.StatusEvent, 64)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		dec := json.NewDecoder(resp.Body)
		dropped := 0
		for {
			var l readLine
			if dec.Decode(&l) != nil {
				return
			}
			if l.Status == nil {
				continue
			}
			ev := *l.Status
			ev.Dropped += dropped
			// The same bound as the host's: a follower that does not
			// read loses changes here, counted, and the host's stream
			// is still read.
			select {
			case out <- ev:
				dropped = 0
			case <-ctx.Done():
				return
			default:
				dropped += 1 + l.Status.Dropped
			}
		}
	}()
	return out, nil
}

// Audit yields the host's trail of calls that q selects; its last line
// (a result) says the trail was read whole.
func (c *Client) Audit(ctx context.Context, q app.AuditQuery) (iter.Seq2[app.AuditRecord, error], error) {
	resp, err := c.do(ctx, http.MethodPost, pathAudit, q)
	if err != nil {
		return nil, err
	}
	return func(yield func(app.AuditRecord, error) bool) {
		defer resp.Body.Close()
		dec := json.NewDecoder(resp.Body)
		for {
			var l readLine
			if err := dec.Decode(&l); err != nil {
				if ctx.Err() == nil || !q.Follow {
					yield(app.AuditRecord{}, fmt.Errorf("the running host (pid %d) ended the trail: %w", c.PID, err))
				}
				return
			}
			switch {
			case l.Error != "":
				yield(app.AuditRecord{}, errors.New(l.Error))
				return
			case l.Result != nil:
				return
			case l.Audit != nil:
				rec := *l.Audit
				if err := json.Unmarshal(rec.Line, &rec.Record); err != nil {
					yield(app.AuditRecord{}, fmt.Errorf("the running host sent a trail line that is not a record: %w", err))
					return
				}
				if !yield(rec, nil) {
					return
				}
			}
		}
	}, nil
}

// tooMany declines a question past maxOpenQuestions.
type tooMany struct{}

func (tooMany) Answer(context.Context, elicit.Request) (elicit.Result, error) {
	return elicit.Result{Action: elicit.Decline, Reason: fmt.Sprintf("the call has %d questions open already", maxOpenQuestions)}, nil
}

// stream posts in to path and reads its NDJSON answer: each line goes to
// line until it says the last has come. A question goes to answer (in
// its own goroutine: the stream is still read meanwhile), its reply back
// to the host; the call's end cancels the questions still open and waits
// for them.
func (c *Client) stream(ctx context.Context, path string, in any, answer elicit.Answerer, line func(readLine) (last bool)) error {
	ctx, cancel := context.WithCancel(ctx)
	var asks sync.WaitGroup
	defer asks.Wait()
	defer cancel()
	resp, err := c.do(ctx, http.MethodPost, path, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	callID := ""
	open := make(chan struct{}, maxOpenQuestions)
	for {
		var l readLine
		if err := dec.Decode(&l); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("the running host (pid %d) ended the request without a result: %w", c.PID, err)
		}
		switch {
		case l.Error != "":
			return &remoteError{msg: l.Error, kind: errKinds[l.Kind]}
		case l.Call != "":
			callID = l.Call
		case l.Question != nil:
			if answer == nil || callID == "" {
				continue // asked of nobody: the host's bound declines it
			}
			q := *l.Question
			// As many at once as the host lets a call ask: more is a
			// broken host, declined without asking anyone.
			ask := answer
			select {
			case open <- struct{}{}:
			default:
				ask = tooMany{}
			}
			asks.Go(func() {
				if _, ok := ask.(tooMany); !ok {
					defer func() { <-open }()
				}
				res, err := ask.Answer(ctx, q.Request)
				if err != nil {
					res = elicit.Result{Action: elicit.Cancel, Reason: err.Error()}
				}
				if ctx.Err() != nil {
					return
				}
				var ok struct{}
				c.post(ctx, pathAnswer, answerRequest{Call: callID, Question: q.ID, Result: res}, &ok)
			})
		default:
			if line(l) {
				return nil
			}
		}
	}
}

// canceled turns a transport error caused by ctx's end into the call's
// cancellation, as a call in this process would end.
func (c *Client) canceled(ctx context.Context, err error) (tools.Result, error) {
	if ctx.Err() != nil {
		return tools.Result{Err: ctx.Err()}, nil
	}
	return tools.Result{}, err
}

// remoteError is an error of the host, which errors.Is tells apart as the
// host did (tools.ErrUnknownTool, tools.ErrRefused...).
type remoteError struct {
	msg  string
	kind error
}

func (e *remoteError) Error() string        { return e.msg }
func (e *remoteError) Is(target error) bool { return e.kind != nil && target == e.kind }

func (c *Client) get(ctx context.Context, path string, out any) error {
	resp, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	return decode(resp, out)
}

func (c *Client) post(ctx context.Context, path string, in, out any) error {
	resp, err := c.do(ctx, http.MethodPost, path, in)
	if err != nil {
		return err
	}
	return decode(resp, out)
}

// do sends one request; a status other than 200 is an error with the
// host's message.
func (c *Client) do(ctx context.Context, method, path string, in any) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://dsh-host"+path, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err // the caller's cancel, not the host's going
		}
		// Not the transport's made-up URL: the host is gone.
		cause := errors.Unwrap(err)
		if cause == nil {
			cause = err
		}
		return nil, fmt.Errorf("the running host (pid %d) does not answer (stopped? dsh-host status says): %w", c.PID, cause)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		var e errorBody
		err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&e)
		if err == nil && e.Refused && e.Error != "" {
			return nil, fmt.Errorf("%w: %s", ErrRefused, e.Error)
		}
		if err != nil || e.Error == "" {
			e.Error = resp.Status
			if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
				e.Error += " (the running host may be an older dsh-host: restart it, or pass --no-attach)"
			}
		}
		return nil, &remoteError{msg: e.Error, kind: errKinds[e.Kind]}
	}
	return resp, nil
}

func decode(resp *http.Response, out any) error {
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("read the running host's answer: %w", err)
	}
	return nil
}
