package registry_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsh-host/dsh-host/internal/registry"
	"github.com/dsh-host/dsh-host/internal/testkit/registrytest"
)

func client(t *testing.T, url string) *registry.Client {
	t.Helper()
	c, err := registry.New(url)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func names(ss []registry.Server) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name+"@"+s.Version)
	}
	return out
}

// TestSearchFollowsTheCursor: a search reads every page (the fixture
// serves two servers a page) and lists the latest version of each match.
func TestSearchFollowsTheCursor(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Testdata(t))
	c := client(t, reg.URL)
	r, err := c.Search(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"io.github.modelcontextprotocol/server-everything@2026.8.31",
		"io.github.modelcontextprotocol/server-filesystem@2026.8.31",
		"io.github.example/github@2025.4.8",
		"io.github.example/notes@3.0.0",
		"io.github.example/weather@1.2.0",
	}
	if d := cmp.Diff(want, names(r.Servers)); d != "" || len(r.Refused) > 0 || r.More {
		t.Errorf("search (-want +got):\n%s\nrefused %q, more %v", d, r.Refused, r.More)
	}
	if reg.Requests.Load() != 3 {
		t.Errorf("%d requests, want 3 pages", reg.Requests.Load())
	}
	r, err = c.Search(t.Context(), "WEATHER", 0)
	if err != nil || len(r.Servers) != 1 || r.Servers[0].Packages[0].Identifier != "mcp-weather" {
		t.Errorf("search weather = %+v, %v", r, err)
	}
	r, err = c.Search(t.Context(), "", 3)
	if err != nil || len(r.Servers) != 3 || !r.More {
		t.Errorf("search at most 3 = %v more %v, %v", names(r.Servers), r.More, err)
	}
}

func TestGetByNameAndVersion(t *testing.T) {
	c := client(t, registrytest.Start(t, registrytest.Testdata(t)).URL)
	for _, tc := range []struct{ version, want string }{{"", "1.2.0"}, {"latest", "1.2.0"}, {"1.1.0", "1.1.0"}} {
		s, err := c.Get(t.Context(), "io.github.example/weather", tc.version)
		if err != nil || s.Version != tc.want {
			t.Errorf("get @%q = %v, %v; want %s", tc.version, s, err, tc.want)
		}
	}
	s, err := c.Get(t.Context(), "io.github.example/github", "")
	if err != nil {
		t.Fatal(err)
	}
	env := s.Packages[0].EnvironmentVariables
	if len(env) != 2 || !env[0].IsSecret || !env[0].IsRequired || env[1].Default != "https://api.github.com" {
		t.Errorf("environmentVariables = %+v", env)
	}
	if _, err := c.Get(t.Context(), "io.github.example/nothing", ""); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("missing server: %v, want ErrNotFound", err)
	}
	if _, err := c.Get(t.Context(), "io.github.example/weather", "9.9.9"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("missing version: %v, want ErrNotFound", err)
	}
}

// TestNamesRefusedBeforeAsking: a name or version that is a path trick
// never becomes a request.
func TestNamesRefusedBeforeAsking(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Testdata(t))
	c := client(t, reg.URL)
	for _, tc := range [][2]string{{"../../etc/passwd", ""}, {"io.github.x/y/../../z", ""}, {"noslash", ""}, {"a/b\x1b[2J", ""}, {"io.github.example/weather", "../1"}, {"io.github.example/weather", "1?x=1"}, {"io.github.example/weather", "1\n"}} {
		if _, err := c.Get(t.Context(), tc[0], tc[1]); err == nil {
			t.Errorf("get %q@%q: no error", tc[0], tc[1])
		}
	}
	if n := reg.Requests.Load(); n != 0 {
		t.Errorf("%d requests made for refused names", n)
	}
}

func TestNewRefusesBadBases(t *testing.T) {
	for _, base := range []string{"", "registry.example.com", "ftp://x", "https://user:pw@x.example", "https://x.example/?q=1", "file:///etc"} {
		if _, err := registry.New(base); err == nil {
			t.Errorf("New(%q): no error", base)
		}
	}
}

// hostile serves body for every request.
func hostile(t *testing.T, status int, body string) *registry.Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return client(t, srv.URL)
}

func one(server string) string {
	return `{"server":` + server + `}`
}

// TestHostileDocumentsRefused: each document is refused with an error
// naming what is wrong, and a search leaves it out, saying why.
func TestHostileDocumentsRefused(t *testing.T) {
	good := `"name":"io.github.x/y","version":"1.0.0"`
	pkg := func(p string) string { return one(`{` + good + `,"packages":[` + p + `]}`) }
	cases := []struct{ name, body, want string }{
		{"wrong type", one(`{"name":"io.github.x/y","version":1}`), "cannot unmarshal"},
		{"not json", `<html>`, "not a registry document"},
		{"escape in description", one(`{` + good + `,"description":"hi\u001b]52;c;x\u0007"}`), "description: holds the control character"},
		{"bidi override in title", one(`{` + good + `,"title":"a\u202eb"}`), "title: holds the control character"},
		{"option as package", pkg(`{"registryType":"npm","identifier":"--package=evil","transport":{"type":"stdio"}}`), "identifier"},
		{"path as package", pkg(`{"registryType":"npm","identifier":"../../evil","transport":{"type":"stdio"}}`), "identifier"},
		{"option as version", pkg(`{"registryType":"pypi","identifier":"x","version":"--index-url=http://evil","transport":{"type":"stdio"}}`), "version"},
		{"space in version", pkg(`{"registryType":"npm","identifier":"x","version":"1 --yes","transport":{"type":"stdio"}}`), "version"},
		{"bad env name", pkg(`{"registryType":"npm","identifier":"x","transport":{"type":"stdio"},"environmentVariables":[{"name":"LD_PRELOAD=x"}]}`), "environment variable"},
		{"named argument not an option", pkg(`{"registryType":"npm","identifier":"x","transport":{"type":"stdio"},"packageArguments":[{"type":"named","name":"rm"}]}`), "not an option"},
		{"line break in a value", pkg(`{"registryType":"npm","identifier":"x","transport":{"type":"stdio"},"packageArguments":[{"type":"positional","value":"a\nb"}]}`), "control character"},
		{"unknown transport", pkg(`{"registryType":"npm","identifier":"x","transport":{"type":"websocket"}}`), "transport.type"},
		{"remote not http", one(`{` + good + `,"remotes":[{"type":"streamable-http","url":"file:///etc/passwd"}]}`), "not an http(s) URL"},
		{"bad header", one(`{` + good + `,"remotes":[{"type":"sse","url":"https://x.example/sse","headers":[{"name":"X: y\r\nEvil"}]}]}`), "header name"},
		{"answer for another name", one(`{"name":"io.github.x/other","version":"1.0.0"}`), "answered"},
		{"too many packages", pkg(strings.Repeat(`{"registryType":"npm","identifier":"x","transport":{"type":"stdio"}},`, 70) + `{}`), "more than 64"},
		{"long description", one(`{` + good + `,"description":"` + strings.Repeat("a", 5000) + `"}`), "longer than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := hostile(t, 200, tc.body).Get(t.Context(), "io.github.x/y", "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one with %q", err, tc.want)
			}
		})
	}
	// A search leaves a refused server out and says why.
	list := `{"servers":[{"server":{` + good + `}},{"server":{"name":"io.github.x/z","version":"1","description":"\u001b[2J"}}],"metadata":{}}`
	r, err := hostile(t, 200, list).Search(t.Context(), "", 0)
	if err != nil || len(r.Servers) != 1 || len(r.Refused) != 1 || !strings.Contains(r.Refused[0], "io.github.x/z") {
		t.Errorf("search = %+v, %v", r, err)
	}
}

// TestHugeAnswerRefused: an answer past MaxResponse is not read on.
func TestHugeAnswerRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"servers":[`)
		chunk := strings.Repeat(" ", 1<<16)
		for range registry.MaxResponse/len(chunk) + 2 {
			if _, err := fmt.Fprint(w, chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	_, err := client(t, srv.URL).Search(t.Context(), "", 0)
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("err = %v, want larger than", err)
	}
}

// TestEndlessCursorBounded: a registry whose cursor never ends is read
// for MaxPages pages, then the search says there is more.
func TestEndlessCursorBounded(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		fmt.Fprintf(w, `{"servers":[{"server":{"name":"io.github.x/s%d","version":"1"}}],"metadata":{"nextCursor":"c%d"}}`, n, n)
	}))
	defer srv.Close()
	r, err := client(t, srv.URL).Search(t.Context(), "", 0)
	if err != nil || len(r.Servers) != registry.MaxPages || !r.More {
		t.Errorf("search = %d servers, more %v, %v", len(r.Servers), r.More, err)
	}
}

// TestNoDowngradeRedirect: an https registry that redirects to http is
// not followed.
func TestNoDowngradeRedirect(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"servers":[],"metadata":{}}`)
	}))
	defer plain.Close()
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+r.URL.Path, http.StatusFound)
	}))
	defer tls.Close()
	c := client(t, tls.URL)
	registry.SetHTTPClientForTest(c, tls.Client())
	_, err := c.Search(t.Context(), "", 0)
	if err == nil || !strings.Contains(err.Error(), "redirected from https") {
		t.Errorf("err = %v, want the redirect refused", err)
	}
}

func TestCancelled(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := client(t, srv.URL).Search(ctx, "", 0); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want canceled", err)
	}
}
