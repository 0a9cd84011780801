package gateway

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/tokenfile"
)

// TestTokenFile: tokenFile's token is the file's one line, without the
// line break; what is wrong with the file is an error naming it that never
// quotes its content.
func TestTokenFile(t *testing.T) {
	dir := t.TempDir()
	const secret = "s3cret-0123456789abcdef"
	write := func(name, content string) string {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	for _, tt := range []struct {
		name, file, http, want, wantErr string
	}{
		{"line break trimmed", write("nl", secret+"\n"), "127.0.0.1:0", secret, ""},
		{"CRLF trimmed", write("crlf", secret+"\r\n"), "127.0.0.1:0", secret, ""},
		{"no line break", write("bare", secret), "127.0.0.1:0", secret, ""},
		{"empty", write("empty", ""), "127.0.0.1:0", "", "is empty"},
		{"only a line break", write("blank", "\n"), "127.0.0.1:0", "", "is empty"},
		{"two lines", write("two", secret+"\n"+secret+"\n"), "127.0.0.1:0", "", "more than one line"},
		{"spaces around", write("spaces", " "+secret+" \n"), "127.0.0.1:0", "", "starts or ends with spaces"},
		{"too long", write("long", strings.Repeat("x", tokenfile.MaxBytes+1)), "127.0.0.1:0", "", "longer than"},
		{"missing", filepath.Join(dir, "nope"), "127.0.0.1:0", "", "cannot read it: no such file"},
		{"a directory", dir, "127.0.0.1:0", "", "is a directory"},
		{"short for the network", write("short", "s3cret\n"), ":0", "", "too short for the non-loopback address"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{HTTP: tt.http, TokenFile: tt.file}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got, err := cfg.Token()
			switch {
			case tt.wantErr == "" && (err != nil || got != tt.want):
				t.Fatalf("Token() = %q, %v; want %q", got, err, tt.want)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "tokenFile "+tt.file)):
				t.Fatalf("Token() error = %v, want one naming tokenFile %s and saying %q", err, tt.file, tt.wantErr)
			case err != nil && strings.Contains(err.Error(), "s3cret"):
				t.Fatalf("the error shows the token: %v", err)
			}
		})
	}
	for _, tt := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"both sources", Config{HTTP: "127.0.0.1:0", TokenEnv: "T", TokenFile: "f"}, "tokenEnv and tokenFile"},
		{"without http", Config{TokenFile: "f"}, "tokenFile: applies to http only"},
	} {
		if err := tt.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate = %v, want %q", tt.name, err, tt.want)
		}
	}
	// A token file stands for tokenEnv on a non-loopback address.
	if err := (&Config{HTTP: ":0", TokenFile: "f"}).Validate(); err != nil {
		t.Errorf("all interfaces with tokenFile: %v", err)
	}
}

// TestPluginTokenFile: with tokenFile, the listener requires the file's
// token; an unreadable file fails the entry naming it.
func TestPluginTokenFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("tok-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := testHost(t)
	update(t, h, "plugins:\n  - {id: echo, name: test-echo}\n  - {id: gateway, name: gateway, config: {http: 127.0.0.1:0, tokenFile: "+file+"}}\n")
	url := waitGateway(t, h, host.StateActive, nil).Detail
	if status, _ := post(t, url, nil); status != http.StatusUnauthorized {
		t.Errorf("without the token: status %d, want 401", status)
	}
	if status, _ := post(t, url, map[string]string{"Authorization": "Bearer tok-from-file"}); status != http.StatusOK {
		t.Errorf("with the file's token: status %d, want 200", status)
	}
	h = testHost(t)
	update(t, h, "plugins:\n  - {id: echo, name: test-echo}\n  - {id: gateway, name: gateway, config: {http: 127.0.0.1:0, tokenFile: "+file+".gone}}\n")
	st := waitGateway(t, h, host.StateFailed, nil)
	if !strings.Contains(st.Err, "tokenFile "+file+".gone: cannot read it") {
		t.Errorf("error %q, want it to name the file", st.Err)
	}
}
