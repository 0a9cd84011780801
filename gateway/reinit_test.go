package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/services/tools"
)

// TestSecondInitializeDoesNotCrash: an initialize sent again on a session
// fails (go-sdk refuses it) without taking the process down; it did, with
// a nil dereference in upToDate, for any client that could reach /mcp.
func TestSecondInitializeDoesNotCrash(t *testing.T) {
	url, _ := serveHTTP(t, tools.New(nil), "")
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	post := func(id string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if id != "" {
			req.Header.Set("Mcp-Session-Id", id)
		}
		resp, err := noKeepAlive.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
	}
	status, id := post("")
	if status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d, session %q", status, id)
	}
	post(id)
	if status, _ := post(""); status != http.StatusOK {
		t.Errorf("the gateway after a second initialize: %d", status)
	}
}
