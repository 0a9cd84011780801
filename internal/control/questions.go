package control

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/services/elicit"
)

// A call (or chat turn) whose caller answers its questions gets an id,
// sent as its stream's first line. Each question the host puts to the
// caller goes down the stream with an id of its own, and its answer comes
// back on POST /v1/answer naming both: a reply that names another call's
// id, a question already answered or one that has ended finds nothing.
// A question waits for its answer at most lim.question, then is declined;
// the call's end ends its questions.

// answerRequest is the body of POST /v1/answer.
type answerRequest struct {
	Call     string        `json:"call"`
	Question string        `json:"question"`
	Result   elicit.Result `json:"result"`
}

// questionLine is a question on a stream.
type questionLine struct {
	ID      string         `json:"id"`
	Request elicit.Request `json:"request"`
}

// maxOpenQuestions caps the questions of one call waiting at once: the
// host's servers ask one at a time, a flood is a broken server.
const maxOpenQuestions = 16

// askers are the calls in flight whose callers answer questions.
type askers struct {
	mu    sync.Mutex
	calls map[string]*asker
}

// asker relays one call's questions to its stream.
type asker struct {
	id   string
	wait time.Duration
	send func(questionLine) error // writes the line to the stream

	mu   sync.Mutex
	open map[string]chan elicit.Result
}

func newID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// add registers a call's asker; remove ends it.
func (a *askers) add(wait time.Duration, send func(questionLine) error) (*asker, func()) {
	k := &asker{id: newID(), wait: wait, send: send, open: map[string]chan elicit.Result{}}
	a.mu.Lock()
	if a.calls == nil {
		a.calls = map[string]*asker{}
	}
	a.calls[k.id] = k
	a.mu.Unlock()
	return k, func() {
		a.mu.Lock()
		delete(a.calls, k.id)
		a.mu.Unlock()
	}
}

// errNoQuestion: the reply's call and question name nothing waiting.
var errNoQuestion = errors.New("no such question waiting: its call ended, it was answered already, or the ids are not the call's")

// answer hands req's result to its question.
func (a *askers) answer(req answerRequest) error {
	a.mu.Lock()
	k := a.calls[req.Call]
	a.mu.Unlock()
	if k == nil {
		return errNoQuestion
	}
	k.mu.Lock()
	ch := k.open[req.Question]
	delete(k.open, req.Question) // a second reply finds nothing
	k.mu.Unlock()
	if ch == nil {
		return errNoQuestion
	}
	ch <- req.Result // buffered: the question may have given up meanwhile
	return nil
}

// Answer puts req to the caller and waits for the reply, at most k.wait.
func (k *asker) Answer(ctx context.Context, req elicit.Request) (elicit.Result, error) {
	id := newID()
	ch := make(chan elicit.Result, 1)
	k.mu.Lock()
	if len(k.open) >= maxOpenQuestions {
		k.mu.Unlock()
		return elicit.Result{Action: elicit.Decline, Reason: fmt.Sprintf("the call has %d questions waiting already", maxOpenQuestions)}, nil
	}
	k.open[id] = ch
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		delete(k.open, id)
		k.mu.Unlock()
	}()
	if err := k.send(questionLine{ID: id, Request: req}); err != nil {
		return elicit.Result{}, err
	}
	timer := time.NewTimer(k.wait)
	defer timer.Stop()
	select {
	case res := <-ch:
		return res, nil
	case <-ctx.Done():
		return elicit.Result{}, ctx.Err()
	case <-timer.C:
		return elicit.Result{Action: elicit.Decline, Reason: fmt.Sprintf("no answer within %s", k.wait)}, nil
	}
}

func (a *askers) serveAnswer(w http.ResponseWriter, r *http.Request) {
	var req answerRequest
	if !readJSON(w, r, &req) {
		return
	}
	if err := a.answer(req); err != nil {
		writeError(w, http.StatusNotFound, err)
		return
	}
	writeJSON(w, struct{}{})
}
