package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/dsh-host/dsh-host/services/commands"
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

var _ Answers = (*Client)(nil)

// Dial connects to the running host of the composition in file. It
// returns ErrNoHost when there is none: no socket, or a stale one nobody
// answers on.
//
// A file named through a symlink is asked at the socket of that name
// first, which a host started on the link serves however the link has
// been re-pointed since, then at the socket of the file it leads to.
func Dial(ctx context.Context, file string) (*Client, error) {
	if alias, ok, _ := namePath(file); ok {
		if c, err := dialAt(ctx, alias); !errors.Is(err, ErrNoHost) {
			return c, err
		}
	}
	path, err := SocketPath(file)
	if errors.Is(err, errTooLong) {
		return nil, ErrNoHost
	}
	if err != nil {
		return nil, err
	}
	return dialAt(ctx, path)
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
func (c *Client) Status(ctx context.Context) (st Status, err error) {
	return st, c.get(ctx, pathStatus, &st)
}

// Tools asks for the tool list.
func (c *Client) Tools(ctx context.Context) (tl ToolList, err error) {
	return tl, c.get(ctx, pathTools, &tl)
}

// Prompt asks for the tools array.
func (c *Client) Prompt(ctx context.Context) (p Prompt, err error) {
	return p, c.get(ctx, pathPrompt, &p)
}

// Command runs a slash command on the host.
func (c *Client) Command(ctx context.Context, req CommandRequest) (r commands.Reply, err error) {
	return r, c.post(ctx, pathCommand, req, &r)
}

// Resources asks for the resources and templates that pass req's filter.
func (c *Client) Resources(ctx context.Context, req ResourcesRequest) (l ResourceList, err error) {
	return l, c.post(ctx, pathResources, req, &l)
}

// Read has the host read one resource.
func (c *Client) Read(ctx context.Context, req ReadRequest) (r ReadAnswer, err error) {
	return r, c.post(ctx, pathRead, req, &r)
}

// Reload has the host re-read its composition, and waits for the outcome.
func (c *Client) Reload(ctx context.Context) (r ReloadResult, err error) {
	return r, c.post(ctx, pathReload, struct{}{}, &r)
}

// readResult is wireResult as the client reads it.
type readResult struct {
	Content []tools.Content `json:"content"`
	Value   json.RawMessage `json:"value"`
	Error   string          `json:"error"`
	Kind    string          `json:"kind"`
	Failed  bool            `json:"failed"`
}

// Call runs a tool call on the host. Its progress goes to req.Report;
// ending ctx closes the request, which cancels the call on the host.
func (c *Client) Call(ctx context.Context, req CallRequest) (tools.Result, error) {
	req.Progress = req.Report != nil
	resp, err := c.do(ctx, http.MethodPost, pathCall, req)
	if err != nil {
		return c.canceled(ctx, err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var line struct {
			Progress *tools.Progress `json:"progress"`
			Result   *readResult     `json:"result"`
		}
		if err := dec.Decode(&line); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return c.canceled(ctx, fmt.Errorf("the running host (pid %d) ended the call without a result: %w", c.PID, err))
		}
		if line.Progress != nil && req.Report != nil {
			req.Report(*line.Progress)
		}
		if r := line.Result; r != nil {
			res := tools.Result{Content: r.Content, Failed: r.Failed}
			if len(r.Value) > 0 && string(r.Value) != "null" {
				res.Value = r.Value
			}
			if r.Error != "" {
				res.Err = &remoteError{msg: r.Error, kind: errKinds[r.Kind]}
			}
			return res, nil
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
		return nil, err
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
		return nil, errors.New(e.Error)
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
