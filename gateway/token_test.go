package gateway

import (
	"strings"
	"testing"
)

// TestTokenLength: a non-loopback listener refuses a token shorter than
// MinTokenLen bytes, naming the variable and the rule; a loopback one
// takes any token (only local processes reach it).
func TestTokenLength(t *testing.T) {
	long := strings.Repeat("Zq", MinTokenLen/2)
	tests := []struct {
		name, http, token, want string
	}{
		{"one character, all interfaces", ":0", "Z", "the token is 1 bytes, too short"},
		{"one short, wildcard", "0.0.0.0:8931", long[1:], "at least 16 random bytes"},
		{"one short, a LAN address", "192.168.1.2:8931", long[1:], "tokenEnv DSH_TEST_TOKEN_LEN"},
		{"exactly the minimum", ":0", long, ""},
		{"short on loopback", "127.0.0.1:0", "x", ""},
		{"short on localhost", "localhost:0", "x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("DSH_TEST_TOKEN_LEN", tt.token)
			cfg := Config{HTTP: tt.http, TokenEnv: "DSH_TEST_TOKEN_LEN"}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got, err := cfg.Token()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Token() = %v, want the token", err)
			case tt.want == "" && got != tt.token:
				t.Fatalf("Token() = %q, want %q", got, tt.token)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Token() error = %v, want one containing %q", err, tt.want)
			case tt.want != "" && strings.Contains(err.Error(), tt.token):
				t.Fatalf("the error shows the token: %v", err)
			}
		})
	}
}

// TestTokenEnvSpaces: a tokenEnv token that starts or ends with spaces is
// refused when the gateway starts, naming the variable, as a tokenFile's
// is: no client could send it (a header's value is trimmed), so every
// request would be answered 401 with nothing saying why.
func TestTokenEnvSpaces(t *testing.T) {
	long := strings.Repeat("Zq", MinTokenLen/2)
	for _, token := range []string{" " + long, long + " ", long + "\t"} {
		t.Setenv("DSH_TEST_TOKEN_SPACES", token)
		cfg := Config{HTTP: "127.0.0.1:0", TokenEnv: "DSH_TEST_TOKEN_SPACES"}
		got, err := cfg.Token()
		if err == nil || !strings.Contains(err.Error(), "spaces") || !strings.Contains(err.Error(), "DSH_TEST_TOKEN_SPACES") {
			t.Fatalf("Token() = %q, %v; want an error naming the variable and its spaces", got, err)
		}
		if strings.Contains(err.Error(), long) {
			t.Fatalf("the error shows the token: %v", err)
		}
	}
}
