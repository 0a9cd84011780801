package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/internal/askbroker"
	"github.com/dsh-host/dsh-host/services/logins"
	"github.com/dsh-host/dsh-host/services/policy/audit"
	"github.com/dsh-host/dsh-host/services/tools"
)

// callerKind is the caller the console's calls are made as, which the
// policy's rules match (callers: [ui]); an ask goes to the composition's
// approval broker, which this console answers.
const callerKind = tools.CallerUI

// Bounds of the actions: a body is a form's worth of JSON; a call or a
// login waits at most so long for its answer.
const (
	maxBody   = 1 << 20
	callWait  = 5 * time.Minute
	loginWait = 5 * time.Minute
)

// readBody decodes the request's JSON body into v, answering the error
// itself when it cannot.
func readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		// A form of another site cannot send JSON without a preflight.
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "send application/json"})
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "the request is not what this action reads: " + err.Error()})
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.Encode(v)
}

// callResult is a tool's result as a model gets it: the content blocks,
// the structured value, and the error when it failed.
type callResult struct {
	Content []tools.Content `json:"content"`
	Value   any             `json:"value,omitempty"`
	Failed  bool            `json:"failed,omitempty"`
	Error   string          `json:"error,omitempty"`
}

func (c *Console) callAction(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tool string          `json:"tool"`
		Args json.RawMessage `json:"args"`
	}
	if !readBody(w, r, &req) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), callWait)
	defer cancel()
	res, err := c.a.Call(ctx, app.CallRequest{Tool: req.Tool, Args: req.Args, Caller: callerKind, Elicit: "decline"})
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	out := callResult{Content: res.Content, Failed: res.Failed}
	if res.Value != nil {
		if b, err := json.Marshal(res.Value); err == nil {
			out.Value = json.RawMessage(b)
		} else {
			out.Value = fmt.Sprint(res.Value)
		}
	}
	if res.Err != nil {
		out.Error = res.Err.Error()
	}
	writeJSON(w, http.StatusOK, out)
}

// trustAction approves exactly the definitions the page showed: their
// review's digest, which the policy checks again (compare and set).
func (c *Console) trustAction(w http.ResponseWriter, r *http.Request) {
	var req app.TrustRequest
	if !readBody(w, r, &req) {
		return
	}
	if req.Digest == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "no digest: approve what a review showed"})
		return
	}
	reply, err := c.a.Trust(r.Context(), req)
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, reply)
}

func (c *Console) reloadAction(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	res, err := c.a.Reload(ctx)
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// entryAction disables or enables one entry, as an edit of the file.
func (c *Console) entryAction(w http.ResponseWriter, r *http.Request) {
	var req app.EntryRequest
	if !readBody(w, r, &req) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	res, err := c.a.SetDisabled(ctx, req)
	if err != nil {
		writeJSON(w, http.StatusOK, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// restartAction runs one entry's config anew (app.App.Restart).
func (c *Console) restartAction(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID string `json:"id"`
	}
	if !readBody(w, r, &req) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	res, err := c.a.Restart(ctx, req.ID)
	if err != nil {
		writeJSON(w, http.StatusOK, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// syncBuffer collects a login's lines (the authorization URL).
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// loginAction logs in to a remote server in this machine's browser, as
// `dsh-host login` does; the answer comes once the login is done.
func (c *Console) loginAction(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Server string `json:"server"`
	}
	if !readBody(w, r, &req) {
		return
	}
	var out syncBuffer
	msg, err := c.a.Login(r.Context(), app.LoginRequest{Server: req.Server, Browser: &logins.BrowserStep{Out: &out, Timeout: loginWait}})
	if err != nil {
		writeJSON(w, http.StatusOK, map[string]string{"error": err.Error(), "text": out.String()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"text": strings.TrimSpace(out.String() + "\n" + msg)})
}

func (c *Console) answerAction(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     string `json:"id"`
		Answer string `json:"answer"`
	}
	if !readBody(w, r, &req) {
		return
	}
	if c.opt.Asks == nil {
		writeJSON(w, http.StatusConflict, map[string]string{"error": "no approvals reach this console"})
		return
	}
	if err := c.opt.Asks.Answer(req.ID, askbroker.Answer(req.Answer)); err != nil {
		writeJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{})
}

// verifyAction checks the trail's hash chain, as `audit --verify`.
func (c *Console) verifyAction(w http.ResponseWriter, r *http.Request) {
	if c.opt.AuditDir == "" {
		writeJSON(w, http.StatusOK, map[string]string{"error": "this console does not know the trail's directory"})
		return
	}
	check, err := audit.Verify(c.opt.AuditDir)
	if err != nil {
		writeJSON(w, http.StatusOK, map[string]string{"error": fmt.Sprintf("the trail in %s does not verify: %v", c.opt.AuditDir, err)})
		return
	}
	text := fmt.Sprintf("the trail verifies: %d lines in %d files, each following the one before it", check.Lines, check.Files)
	if check.Files == 0 {
		text = "no trail in " + c.opt.AuditDir + " yet"
	}
	writeJSON(w, http.StatusOK, map[string]string{"text": text})
}
