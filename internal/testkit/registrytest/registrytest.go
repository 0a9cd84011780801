// Package registrytest is an MCP Registry on loopback for tests: it serves
// `/v0.1/servers` (search, cursor pagination, version=latest) and
// `/v0.1/servers/{name}/versions/{version}` from server.json files, as the
// official registry does, each document's bytes as they are (so a hostile
// one reaches the client unchanged).
//
//	reg := registrytest.Start(t, registrytest.Testdata(t))
//	c, _ := registry.New(reg.URL)
package registrytest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// PageSize is the servers a page holds at most, small so that a search
// follows the cursor.
const PageSize = 2

// Doc is one server.json document.
type Doc struct {
	Name, Version string
	Raw           json.RawMessage
}

// Registry is a running fixture registry.
type Registry struct {
	URL  string
	docs []Doc
	// Requests counts the requests served.
	Requests atomic.Int64
}

// Testdata returns the documents of this package's testdata directory:
// npm, PyPI, remote, a secret variable, a required argument.
func Testdata(t testing.TB) []Doc {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return Dir(t, filepath.Join(filepath.Dir(file), "testdata"))
}

// Dir returns the documents of the *.json files in dir, in name order.
func Dir(t testing.TB, dir string) []Doc {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("registrytest: no *.json in %s: %v", dir, err)
	}
	var docs []Doc
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, Raw(b))
	}
	return docs
}

// Raw is the document b (any bytes; its name and version as far as they
// decode).
func Raw(b []byte) Doc {
	var head struct {
		Name    any `json:"name"`
		Version any `json:"version"`
	}
	_ = json.Unmarshal(b, &head)
	return Doc{Name: fmt.Sprint(head.Name), Version: fmt.Sprint(head.Version), Raw: b}
}

// Start serves docs on 127.0.0.1 until the test ends. Every version of a
// name is served by its version; the last one listed is its latest.
func Start(t testing.TB, docs []Doc) *Registry {
	t.Helper()
	r := &Registry{docs: docs}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *Registry) latest(name string) (Doc, bool) {
	for i := len(r.docs) - 1; i >= 0; i-- {
		if r.docs[i].Name == name {
			return r.docs[i], true
		}
	}
	return Doc{}, false
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	r.Requests.Add(1)
	path := req.URL.EscapedPath()
	switch {
	case path == "/v0.1/servers":
		r.list(w, req.URL.Query())
	case strings.HasPrefix(path, "/v0.1/servers/"):
		rest := strings.TrimPrefix(path, "/v0.1/servers/")
		esc, ver, ok := strings.Cut(rest, "/versions/")
		name, err1 := url.PathUnescape(esc)
		ver, err2 := url.PathUnescape(ver)
		if !ok || err1 != nil || err2 != nil {
			http.NotFound(w, req)
			return
		}
		d, found := r.latest(name)
		if ver != "latest" {
			i := slices.IndexFunc(r.docs, func(d Doc) bool { return d.Name == name && d.Version == ver })
			found = i >= 0
			if found {
				d = r.docs[i]
			}
		}
		if !found {
			http.Error(w, `{"title":"Not Found","status":404,"detail":"Server not found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"server":%s,"_meta":{"io.modelcontextprotocol.registry/official":{"status":"active","isLatest":true}}}`, d.Raw)
	default:
		http.NotFound(w, req)
	}
}

// list serves one page of the latest versions whose names hold search.
func (r *Registry) list(w http.ResponseWriter, q url.Values) {
	var match []Doc
	for _, d := range r.docs {
		if l, _ := r.latest(d.Name); q.Get("version") == "latest" && l.Version != d.Version {
			continue
		}
		if strings.Contains(strings.ToLower(d.Name), strings.ToLower(q.Get("search"))) {
			match = append(match, d)
		}
	}
	start := 0
	if c := q.Get("cursor"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 0 || n > len(match) {
			http.Error(w, `{"title":"Bad Request","status":400,"detail":"invalid cursor"}`, http.StatusBadRequest)
			return
		}
		start = n
	}
	end := min(start+PageSize, len(match))
	var b strings.Builder
	b.WriteString(`{"servers":[`)
	for i, d := range match[start:end] {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"server":%s,"_meta":{"io.modelcontextprotocol.registry/official":{"status":"active","isLatest":true}}}`, d.Raw)
	}
	next := ""
	if end < len(match) {
		next = strconv.Itoa(end)
	}
	fmt.Fprintf(&b, `],"metadata":{"nextCursor":%q,"count":%d}}`, next, end-start)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(b.String()))
}
