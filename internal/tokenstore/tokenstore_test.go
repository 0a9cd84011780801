package tokenstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/dsh-host/dsh-host/internal/testkit/leaks"
)

func TestMain(m *testing.M) {
	// A child of TestTwoProcesses: add records, then exit.
	if dir := os.Getenv("TOKENSTORE_TEST_CHILD_DIR"); dir != "" {
		child(dir, os.Getenv("TOKENSTORE_TEST_CHILD_NAME"))
		return
	}
	leaks.VerifyTestMain(m)
}

const server = "https://mcp.example.test/mcp"

func rec(client, access string) Record {
	return Record{Issuer: "https://as.example.test", ClientID: client, TokenURL: "https://as.example.test/token",
		Token: &oauth2.Token{AccessToken: access, RefreshToken: "r-" + access, Expiry: time.Now().Add(time.Hour)}}
}

func TestSaveLoadModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "oauth")
	s := New(dir)
	if _, ok, err := s.Load(server, ""); ok || err != nil {
		t.Fatalf("empty store: ok %v err %v", ok, err)
	}
	if err := s.Save(server, rec("c1", "a1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(server, rec("c2", "a2")); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.Load(server, "c1")
	if err != nil || !ok || got.Token.AccessToken != "a1" {
		t.Fatalf("Load c1 = %+v %v %v", got, ok, err)
	}
	// No client id: the most recent.
	if got, _, _ := s.Load(server, ""); got.ClientID != "c2" {
		t.Errorf("Load without client id = %q, want the last saved c2", got.ClientID)
	}
	// Another server URL shares nothing.
	if _, ok, _ := s.Load(server+"2", ""); ok {
		t.Error("another server URL sees this one's record")
	}
	if runtime.GOOS != "windows" {
		for path, want := range map[string]os.FileMode{dir: 0o700, s.Path(server): 0o600} {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != want {
				t.Errorf("%s mode %v, want %v", path, fi.Mode().Perm(), want)
			}
		}
	}
	removed, err := s.Delete(server)
	if err != nil || len(removed) != 2 {
		t.Fatalf("Delete = %d records, %v", len(removed), err)
	}
	if _, ok, _ := s.Load(server, ""); ok {
		t.Error("record still there after Delete")
	}
}

func TestLooseDirectoryTightened(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix modes")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := New(dir).Save(server, rec("c", "a")); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(dir)
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v after a save, want 0700", fi.Mode().Perm())
	}
}

func TestCorruptFileNeverOverwritten(t *testing.T) {
	s := New(t.TempDir())
	if err := s.Save(server, rec("c", "a")); err != nil {
		t.Fatal(err)
	}
	garbage := []byte(`{"serverUrl": "` + server + `", "records": [`)
	if err := os.WriteFile(s.Path(server), garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Load(server, ""); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Load of a corrupt file: %v, want ErrCorrupt", err)
	}
	if err := s.Save(server, rec("c", "b")); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Save over a corrupt file: %v, want ErrCorrupt", err)
	}
	if _, err := s.Current(context.Background(), server, "", Refresh{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Current on a corrupt file: %v, want ErrCorrupt", err)
	}
	if data, _ := os.ReadFile(s.Path(server)); string(data) != string(garbage) {
		t.Fatalf("the corrupt file was changed: %q", data)
	}
	// Delete, which logout runs, removes it on purpose.
	if _, err := s.Delete(server); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(server, rec("c", "b")); err != nil {
		t.Fatalf("Save after Delete: %v", err)
	}
}

func TestConcurrentUpdatesLoseNothing(t *testing.T) {
	s := New(t.TempDir())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 5 {
				if err := s.Save(server, rec(fmt.Sprintf("g%d-%d", i, j), "a")); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	recs, err := s.read(server)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 40 {
		t.Errorf("%d records after 40 concurrent saves", len(recs))
	}
}

// child adds 20 records named after name, for TestTwoProcesses.
func child(dir, name string) {
	s := New(dir)
	for j := range 20 {
		if err := s.Save(server, rec(name+"-"+strconv.Itoa(j), "a")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func TestTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	var cmds []*exec.Cmd
	for _, name := range []string{"run", "serve"} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "TOKENSTORE_TEST_CHILD_DIR="+dir, "TOKENSTORE_TEST_CHILD_NAME="+name)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := New(dir).read(server)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 40 {
		t.Errorf("%d records after two processes saved 20 each", len(recs))
	}
}

// tokenServer is a token endpoint that answers a refresh with a new access
// token and a rotated refresh token, and refuses a spent refresh token.
func tokenServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	var mu sync.Mutex
	spent := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		rt := r.PostForm.Get("refresh_token")
		mu.Lock()
		defer mu.Unlock()
		if r.PostForm.Get("grant_type") != "refresh_token" || spent[rt] {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		spent[rt] = true
		i := n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"access_token": fmt.Sprintf("fresh%d", i), "token_type": "Bearer",
			"refresh_token": fmt.Sprintf("rot%d", i), "expires_in": 3600,
		})
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestCurrentRefreshes(t *testing.T) {
	srv, n := tokenServer(t)
	s := New(t.TempDir())
	r := rec("c", "old")
	r.TokenURL = srv.URL
	r.Token.Expiry = time.Now().Add(10 * time.Second) // inside the margin
	if err := s.Save(server, r); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := s.Current(ctx, server, "c", Refresh{Margin: time.Minute, Client: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if got.Token.AccessToken != "fresh1" || got.Token.RefreshToken != "rot1" {
		t.Fatalf("after refresh: %q/%q", got.Token.AccessToken, got.Token.RefreshToken)
	}
	// Saved: a second call takes it without a request.
	if got, _ := s.Current(ctx, server, "c", Refresh{Margin: time.Minute, Client: srv.Client()}); got.Token.AccessToken != "fresh1" || n.Load() != 1 {
		t.Fatalf("second call: %q after %d refreshes", got.Token.AccessToken, n.Load())
	}
	// A refused token is refreshed whatever its expiry.
	if got, _ := s.Current(ctx, server, "c", Refresh{Rejected: "fresh1", Margin: time.Minute, Client: srv.Client()}); got.Token.AccessToken != "fresh2" {
		t.Fatalf("after a 401: %q", got.Token.AccessToken)
	}
	// A refused refresh says so, and leaves the record as it was.
	bad := rec("c", "x")
	bad.TokenURL = srv.URL
	bad.Token.RefreshToken = "rot1" // spent
	bad.Token.Expiry = time.Now().Add(-time.Hour)
	s.Save(server, bad)
	var re *RefreshError
	if _, err := s.Current(ctx, server, "c", Refresh{Margin: time.Minute, Client: srv.Client()}); !errors.As(err, &re) {
		t.Fatalf("refused refresh: %v, want a RefreshError", err)
	}
	if got, _, _ := s.Load(server, "c"); got.Token.AccessToken != "x" {
		t.Errorf("record changed by a failed refresh: %q", got.Token.AccessToken)
	}
	if _, err := New(t.TempDir()).Current(ctx, server, "", Refresh{}); !errors.Is(err, ErrNoToken) {
		t.Errorf("empty store: %v, want ErrNoToken", err)
	}
}

// Two refreshers at once spend the rotated refresh token once: the second
// re-reads under the lock and takes the first one's token.
func TestConcurrentRefreshSpendsTheRefreshTokenOnce(t *testing.T) {
	srv, n := tokenServer(t)
	s := New(t.TempDir())
	r := rec("c", "old")
	r.TokenURL = srv.URL
	r.Token.Expiry = time.Now().Add(-time.Minute)
	s.Save(server, r)
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			got, err := s.Current(context.Background(), server, "c", Refresh{Margin: time.Minute, Client: srv.Client()})
			if err != nil || got.Token.AccessToken != "fresh1" {
				t.Errorf("Current = %v, %v", got.Token, err)
			}
		})
	}
	wg.Wait()
	if n.Load() != 1 {
		t.Errorf("%d refreshes, want 1", n.Load())
	}
}
