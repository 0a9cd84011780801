package webui

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/app"
	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/askbroker"
	"github.com/dsh-host/dsh-host/services/policy/pins"
)

// pageNames are the templates under assets/pages, each rendered inside
// assets/layout.html.
var pageNames = []string{"servers", "tools", "tool", "trust", "approvals", "audit", "composition"}

func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"ago":      ago,
		"pretty":   pretty,
		"hidden":   pins.HiddenText,
		"list":     func(s ...string) []string { return s },
		"contains": strings.Contains,
		// brief drops the sandbox from an instance's detail, which the
		// page shows in a column of its own.
		"brief": func(in host.InstanceStatus) string {
			return strings.TrimSuffix(strings.TrimSuffix(in.Detail, in.Sandbox), ", ")
		},
		"title": func(s string) string { return strings.ToUpper(s[:1]) + s[1:] },
		"emptyAsk": func() askView {
			return askView{askbroker.Ask{Choices: []askbroker.Answer{askbroker.Once, askbroker.Session, askbroker.Always}}}
		},
	}
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/pages/"+name+".html", "assets/form.html")
		if err != nil {
			return nil, fmt.Errorf("web console: page %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// view is what every page's layout reads.
type view struct {
	Page  string // the nav entry to mark
	File  string // the composition
	Error string // what the page could not get
	Asks  bool   // approvals reach this console: the page follows them
	Data  any
}

// render writes page name with data, or the page with err said.
func (c *Console) render(w http.ResponseWriter, name string, data any, err error) {
	v := view{Page: name, Data: data, Asks: c.opt.Asks != nil}
	if name == "tool" {
		v.Page = "tools"
	}
	if err != nil {
		v.Error = err.Error()
	}
	var b bytes.Buffer
	if err := c.pages[name].Execute(&b, v); err != nil {
		c.opt.Logger.Error("web console: a page failed to render", "page", name, "err", err)
		http.Error(w, "the page failed to render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

func ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return time.Since(t).Round(time.Second).String() + " ago"
}

// pretty indents a JSON document for reading; what is not JSON is shown
// as it is.
func pretty(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// serverRow is one instance on the Servers page.
type serverRow struct {
	host.InstanceStatus
	Server string // its serverName claim, "" for an instance of no MCP server
	Tools  int
}

func (c *Console) serversPage(r *http.Request) (string, any, error) {
	st, err := c.a.Status(r.Context())
	if err != nil {
		return "servers", nil, err
	}
	var servers, others []serverRow
	for _, in := range st.Instances {
		row := serverRow{InstanceStatus: in, Tools: st.ToolCounts[in.ID]}
		for _, cl := range in.Claims {
			if cl.Kind == "serverName" {
				row.Server = cl.Value
			}
		}
		if row.Server != "" {
			servers = append(servers, row)
		} else {
			others = append(others, row)
		}
	}
	return "servers", struct {
		PID             int
		File            string
		Servers, Others []serverRow
	}{st.PID, st.File, servers, others}, nil
}

func (c *Console) toolsPage(r *http.Request) (string, any, error) {
	tl, err := c.a.Tools(r.Context(), app.ToolsRequest{Caller: callerKind})
	if err != nil {
		return "tools", nil, err
	}
	q := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("q")))
	var rows []app.Tool
	for _, t := range tl.Tools {
		if q == "" || strings.Contains(strings.ToLower(t.Name+" "+t.Server+" "+t.Description), q) {
			rows = append(rows, t)
		}
	}
	slices.SortStableFunc(rows, func(a, b app.Tool) int { return cmp.Compare(a.Server, b.Server) })
	return "tools", struct {
		Query string
		Tools []app.Tool
		Total int
	}{r.URL.Query().Get("q"), rows, len(tl.Tools)}, nil
}

// listing is what a tool page shows of a server's listing of the tool.
type listing struct {
	Title       string          `json:"title"`
	Annotations json.RawMessage `json:"annotations"`
	Meta        json.RawMessage `json:"_meta"`
}

func (c *Console) toolPage(r *http.Request) (string, any, error) {
	name := r.URL.Query().Get("name")
	d, err := c.a.ToolDetail(r.Context(), app.ToolRequest{Name: name, Caller: callerKind})
	if err != nil {
		return "tool", nil, err
	}
	var l listing
	if len(d.Listing) > 0 {
		_ = json.Unmarshal(d.Listing, &l) // a listing that does not decode shows no extras
	}
	return "tool", struct {
		app.ToolDetail
		Listing listing
		Form    *field
	}{d, l, formOf(d.InputSchema)}, nil
}

// heldTool is one held tool on the Trust page: the review of it alone,
// whose digest its approval binds.
type heldTool struct {
	app.Tool
	Review app.Review
	Parts  []changePart
}

func (c *Console) trustPage(r *http.Request) (string, any, error) {
	tl, err := c.a.Tools(r.Context(), app.ToolsRequest{Caller: callerKind})
	if err != nil {
		return "trust", nil, err
	}
	var held []heldTool
	var errs []string
	for _, t := range tl.Tools {
		if !t.Withheld || t.Server == "" {
			continue
		}
		rv, err := c.a.Review(r.Context(), app.TrustRequest{Server: t.Server, Tool: t.RawName})
		switch {
		case err != nil:
			errs = append(errs, fmt.Sprintf("%s: %v", t.Name, err))
			continue
		case rv.Error:
			errs = append(errs, fmt.Sprintf("%s: %s", t.Name, rv.Text))
			continue
		case !rv.Pending:
			continue // withheld by a rule, not held for review
		}
		held = append(held, heldTool{Tool: t, Review: rv, Parts: sideBySide(rv.Text)})
	}
	if len(errs) > 0 {
		err = errors.New(strings.Join(errs, "\n"))
	}
	return "trust", struct{ Held []heldTool }{held}, err
}

func (c *Console) approvalsPage(r *http.Request) (string, any, error) {
	var pending []askView
	if c.opt.Asks != nil {
		for _, a := range c.opt.Asks.Pending() {
			pending = append(pending, askView{a})
		}
	}
	note := c.opt.AsksNote
	if note == "" {
		note = "no approval broker runs in this console"
	}
	return "approvals", struct {
		Attached bool
		Note     string
		Pending  []askView
	}{c.opt.Asks != nil, note, pending}, nil
}

func (c *Console) auditPage(r *http.Request) (string, any, error) {
	q := r.URL.Query()
	return "audit", struct {
		Server, Tool, Decision, Caller string
		Verify                         bool
	}{q.Get("server"), q.Get("tool"), q.Get("decision"), q.Get("caller"), c.opt.AuditDir != ""}, nil
}

func (c *Console) compositionPage(r *http.Request) (string, any, error) {
	ci, err := c.a.Composition(r.Context())
	return "composition", ci, err
}
