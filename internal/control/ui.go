package control

import (
	"context"
	"net/http"

	"github.com/dsh-host/dsh-host/app"
)

// The web console's questions (app/ui.go).
const (
	pathToolDetail  = "/v1/tool"        // POST app.ToolRequest: app.ToolDetail
	pathComposition = "/v1/composition" // GET: app.CompositionInfo
	pathEntry       = "/v1/entry"       // POST app.EntryRequest: app.ReloadResult
	pathRestart     = "/v1/restart"     // POST restartRequest: app.ReloadResult
)

// restartRequest names the entry Restart runs anew.
type restartRequest struct {
	ID string `json:"id"`
}

// serveUI adds the web console's endpoints.
func serveUI(handle func(string, func(http.ResponseWriter, *http.Request)), a app.App) {
	post(handle, pathToolDetail, func(ctx context.Context, req app.ToolRequest) (any, error) { return a.ToolDetail(ctx, req) })
	post(handle, pathEntry, func(ctx context.Context, req app.EntryRequest) (any, error) { return a.SetDisabled(ctx, req) })
	post(handle, pathRestart, func(ctx context.Context, req restartRequest) (any, error) { return a.Restart(ctx, req.ID) })
	handle("GET "+pathComposition, func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) { return a.Composition(r.Context()) })
	})
}

// ToolDetail asks for one tool with its schemas.
func (c *Client) ToolDetail(ctx context.Context, req app.ToolRequest) (d app.ToolDetail, err error) {
	return d, c.post(ctx, pathToolDetail, req, &d)
}

// Composition asks for the composition file and the host's loads of it.
func (c *Client) Composition(ctx context.Context) (ci app.CompositionInfo, err error) {
	return ci, c.get(ctx, pathComposition, &ci)
}

// SetDisabled has the host disable or enable one entry of its file.
func (c *Client) SetDisabled(ctx context.Context, req app.EntryRequest) (r app.ReloadResult, err error) {
	return r, c.post(ctx, pathEntry, req, &r)
}

// Restart has the host run one entry's config anew.
func (c *Client) Restart(ctx context.Context, id string) (r app.ReloadResult, err error) {
	return r, c.post(ctx, pathRestart, restartRequest{ID: id}, &r)
}
