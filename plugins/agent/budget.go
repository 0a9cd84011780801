package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/services/attachments"
	"github.com/dsh-host/dsh-host/services/outputs"
)

// The budget of a step's tool results: what the model reads of them is cut
// so that the next request fits in the model's window, whatever a tool
// returns (a 204 KB file read on a 32K window). Compaction cannot help
// there: it summarises earlier turns, and the result is in the running one.
// The whole text of a cut result is kept in the attachments store, and the
// cut names it, as compaction's summary does.

// resultBytesPerToken counts tokens pessimistically: code and JSON run
// nearer 3 bytes a token than 4 (the 204 KB file was 61.6K tokens).
const resultBytesPerToken = 3

// minResultBudget is the least a step's results get, in bytes, however
// full the window: enough for the model to read what happened and ask for
// less. A request still over the window then compacts the earlier turns.
const minResultBudget = 2 << 10

// answerReserve is the part of a window of w tokens left for the answer:
// an eighth, between 1K and 32K tokens.
func answerReserve(w int) int { return min(max(w/8, 1024), 32768) }

// resultBudget returns how many bytes of text the tool results of a step
// may take: half of what the window has left after the request of reqBytes
// that asked for them, its answer, and the reserve for the next answer.
// Half, so that each later step of the turn still finds room.
func (c *Conversation) resultBudget(reqBytes int, st stepResult) int {
	w := c.a.window()
	asked, _ := json.Marshal(st.assistant)
	used := c.estimate(reqBytes) + (len(asked)+resultBytesPerToken-1)/resultBytesPerToken
	room := w - used - answerReserve(w)
	return max(room/2*resultBytesPerToken, minResultBudget)
}

// fitResults cuts the texts of results so that together they take at most
// budget bytes: a result under its fair share is kept whole, and what it
// leaves goes to the larger ones. A cut result's whole text is saved in
// the attachments store, and the cut says how to read the rest.
func (a *Agent) fitResults(ctx context.Context, calls []toolCall, results []toolOutcome, budget int) {
	total := 0
	for _, r := range results {
		total += len(r.text)
	}
	if total <= budget {
		return
	}
	order := make([]int, len(results))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return len(results[order[i]].text) < len(results[order[j]].text) })
	left := budget
	for k, i := range order {
		share := left / (len(order) - k)
		if n := len(results[i].text); n <= share {
			left -= n
			continue
		}
		results[i].text = a.cutResult(ctx, calls[i], results[i].text, share)
		left -= share
	}
}

// cutResult returns text cut to about n bytes (a whole character, and the
// note after it) with a note naming where its whole is kept.
func (a *Agent) cutResult(ctx context.Context, tc toolCall, text string, n int) string {
	// The note takes its part of the share.
	k := max(n-400, 0)
	for k > 0 && !utf8.RuneStart(text[k]) {
		k--
	}
	where := "the rest is not kept (no attachments service); call the tool again for a narrower part"
	if a.store != nil {
		ref, err := a.store.SaveBlob(ctx, attachments.Blob{MediaType: "text/plain; charset=utf-8", Data: []byte(text)})
		switch {
		case err != nil:
			where = fmt.Sprintf("the rest could not be kept (%v); call the tool again for a narrower part", err)
		case a.offers(outputs.ToolName):
			args, _ := json.Marshal(struct {
				ID     string `json:"id"`
				Offset int    `json:"offset"`
				Length int    `json:"length"`
			}{ref.ID, k, max(k, 1024)})
			where = fmt.Sprintf("the whole result is kept as attachment %s: read on with %s %s, or call the tool again for a narrower part", ref.ID, outputs.ToolName, args)
		default:
			where = fmt.Sprintf("the whole result is kept as attachment %s; call the tool again for a narrower part", ref.ID)
		}
	}
	return text[:k] + fmt.Sprintf("\n[result of %s cut to fit the model's context window (%d tokens): %d of %d bytes shown; %s]", tc.Name, a.window(), k, len(text), where)
}

// offers says whether the agent's caller is offered the tool name.
func (a *Agent) offers(name string) bool {
	_, ok := a.reg.Offered(a.caller, name)
	return ok
}
