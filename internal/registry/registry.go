// Package registry reads an MCP Registry: the official one
// (registry.modelcontextprotocol.io) or any server of the same API, the
// `/v0.1/servers` list (search, cursor pagination, the latest versions)
// and one server's version, each a server.json document.
//
// Everything read is bounded (a response's size, a request's time, the
// pages a search follows) and checked (Server.Validate): a document of
// the wrong shape, or whose text could drive a terminal or a command
// line, is refused with an error naming its field.
package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Default is the official MCP Registry.
const Default = "https://registry.modelcontextprotocol.io"

// Bounds on what a registry may make dsh-host read or wait for.
const (
	// MaxResponse is the largest response read: a page of 100 servers is
	// well under a MiB.
	MaxResponse = 4 << 20
	// Timeout bounds each request, its body included.
	Timeout = 30 * time.Second
	// MaxPages bounds the pages one search follows.
	MaxPages = 10
	// pageSize is the servers asked for per page.
	pageSize = 100
)

// Client reads one registry.
type Client struct {
	base *url.URL
	http *http.Client
}

// New returns a client of the registry at base (such as Default). A base
// that is not an absolute http(s) URL, or that carries credentials, a
// query or a fragment, is an error.
func New(base string) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil {
		return nil, fmt.Errorf("registry %q is not a URL: %w", base, err)
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http", u.Host == "":
		return nil, fmt.Errorf("registry %q is not an http(s) URL", base)
	case u.User != nil:
		return nil, fmt.Errorf("registry %q: credentials in the URL are not sent; a registry dsh-host reads is public", base)
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("registry %q: a base URL has no query or fragment", base)
	}
	hc := &http.Client{
		Timeout: Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("more than 5 redirects")
			}
			if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
				return errors.New("redirected from https to " + req.URL.Scheme)
			}
			return nil
		},
	}
	return &Client{base: u, http: hc}, nil
}

// URL is the registry's base URL.
func (c *Client) URL() string { return c.base.String() }

// Entry is one server of a list, with the registry's word on it.
type Entry struct {
	Server Server `json:"server"`
	Meta   struct {
		Official struct {
			Status   string `json:"status,omitempty"`
			IsLatest bool   `json:"isLatest,omitempty"`
		} `json:"io.modelcontextprotocol.registry/official"`
	} `json:"_meta"`
}

// list is a page of /v0.1/servers.
type list struct {
	Servers  []json.RawMessage `json:"servers"`
	Metadata struct {
		NextCursor string `json:"nextCursor,omitempty"`
		Count      int    `json:"count,omitempty"`
	} `json:"metadata"`
}

// Result is what a search found.
type Result struct {
	Servers []Server
	// Refused says, one line each, the servers left out because their
	// documents were refused (Server.Validate).
	Refused []string
	// More is true when the registry had more pages than MaxPages, or
	// than max servers.
	More bool
}

// Search lists the latest version of the servers whose names hold query
// (every server for ""), following the cursor for at most MaxPages pages
// and max servers (0: no bound but the pages').
func (c *Client) Search(ctx context.Context, query string, max int) (*Result, error) {
	r := &Result{}
	cursor := ""
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page == MaxPages {
			r.More = true
			return r, nil
		}
		q := url.Values{"version": {"latest"}, "limit": {fmt.Sprint(pageSize)}}
		if query != "" {
			q.Set("search", query)
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var l list
		if err := c.get(ctx, "/v0.1/servers", q, &l); err != nil {
			return nil, err
		}
		for i, raw := range l.Servers {
			var e Entry
			if err := json.Unmarshal(raw, &e); err != nil {
				r.Refused = append(r.Refused, fmt.Sprintf("servers[%d] of a page: %v", i, err))
				continue
			}
			if err := e.Server.Validate(); err != nil {
				r.Refused = append(r.Refused, err.Error())
				continue
			}
			if seen[e.Server.Name] {
				continue
			}
			seen[e.Server.Name] = true
			r.Servers = append(r.Servers, e.Server)
			if max > 0 && len(r.Servers) == max {
				r.More = i+1 < len(l.Servers) || l.Metadata.NextCursor != ""
				return r, nil
			}
		}
		next := l.Metadata.NextCursor
		if next == "" || next == cursor || len(l.Servers) == 0 {
			return r, nil
		}
		cursor = next
	}
}

// Get returns the server called name at version ("" or "latest" for the
// latest), checked (Server.Validate).
func (c *Client) Get(ctx context.Context, name, version string) (*Server, error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("%q is not a registry server name (namespace/name, such as io.github.owner/server)", clip(name))
	}
	if version == "" {
		version = "latest"
	}
	if checkText(version) != nil || strings.ContainsAny(version, "/?#") {
		return nil, fmt.Errorf("%q is not a version", clip(version))
	}
	var e Entry
	path := "/v0.1/servers/" + url.PathEscape(name) + "/versions/" + url.PathEscape(version)
	if err := c.get(ctx, path, nil, &e); err != nil {
		return nil, err
	}
	s := &e.Server
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Name != name {
		return nil, fmt.Errorf("the registry answered %q with server %q: refused", name, clip(s.Name))
	}
	if version != "latest" && s.Version != version {
		return nil, fmt.Errorf("the registry answered %s@%s with version %q: refused", name, version, clip(s.Version))
	}
	return s, nil
}

// ErrNotFound is returned (wrapped) for a server or version the registry
// does not have.
var ErrNotFound = errors.New("not in the registry")

// get reads path under the base URL into v: one JSON document, at most
// MaxResponse bytes.
func (c *Client) get(ctx context.Context, path string, q url.Values, v any) error {
	// path is escaped already: a server name's slash travels as %2F.
	target := c.base.String() + path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("registry %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse+1))
	if err != nil {
		return fmt.Errorf("registry %s: reading %s: %w", c.base, path, err)
	}
	if len(body) > MaxResponse {
		return fmt.Errorf("registry %s: the answer to %s is larger than %d bytes: refused", c.base, path, MaxResponse)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("registry %s: %s: %w", c.base, path, ErrNotFound)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("registry %s: %s answered %s", c.base, path, resp.Status)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("registry %s: the answer to %s is not a registry document: %w", c.base, path, err)
	}
	return nil
}
