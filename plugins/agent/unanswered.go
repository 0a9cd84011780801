package agent

import (
	"context"
	"errors"

	"github.com/openai/openai-go/v3"
)

// A turn that fails or is cancelled leaves the conversation as it was, so
// that it stays valid for the next one; the person's message is not lost
// with it: the conversation keeps its line (Pending, for a front end to
// offer again), and the session saves it as unanswered, with why.

// keepUnanswered keeps said, the person's line of a turn that failed with
// err, and saves the turn's opening msgs in the session, unless a Reset
// came since gen.
func (c *Conversation) keepUnanswered(said string, msgs []openai.ChatCompletionMessageParamUnion, gen uint64, err error, out Output) {
	c.mu.Lock()
	if c.gen != gen {
		c.mu.Unlock()
		return
	}
	c.pending = said
	s := c.session
	c.mu.Unlock()
	if s == nil {
		return
	}
	why := err.Error()
	if errors.Is(err, context.Canceled) {
		why = "cancelled"
	}
	if err := s.AppendUnanswered(c.a.Model(), said, savedMessages(msgs), why); err != nil {
		out.status("the unanswered message could not be saved in session %s: %v", s.ID, err)
	}
}

// Pending returns the person's line of the last turn that failed or was
// cancelled, when no turn has been answered since ("" when none): what a
// front end offers to send again.
func (c *Conversation) Pending() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending
}

// generation returns the conversation's count of Resets.
func (c *Conversation) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}
