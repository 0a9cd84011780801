package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/internal/testkit/tlstest"
)

// servedSerial dials addr over TLS trusting pool and returns the serial of
// the certificate the gateway presents.
func servedSerial(t *testing.T, addr string, pool *x509.CertPool) int64 {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool})
	if err != nil {
		t.Fatalf("TLS dial %s: %v", addr, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// TestPluginTLS: with tls, the gateway serves MCP over https with the
// certificate of the files, TLS 1.2 at least; a renewal of the files is
// served from the next connection on, without a restart; a renewal caught
// half-written keeps the previous certificate; a plain-http client gets
// no MCP.
func TestPluginTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first, second := tlstest.New(t, 1), tlstest.New(t, 2)
	first.Write(t, certFile, keyFile)
	pool := x509.NewCertPool()
	pool.AddCert(first.X509)
	pool.AddCert(second.X509)

	h := testHost(t)
	update(t, h, "plugins:\n  - {id: echo, name: test-echo}\n  - {id: gateway, name: gateway, config: {http: 127.0.0.1:0, tls: {cert: "+certFile+", key: "+keyFile+"}}}\n")
	url := waitGateway(t, h, host.StateActive, nil).Detail
	if !strings.HasPrefix(url, "https://127.0.0.1:") {
		t.Fatalf("detail %q, want an https URL", url)
	}
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "https://"), "/mcp")

	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: tr}}, nil)
	if err != nil {
		t.Fatalf("MCP over https: %v", err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Errorf("tools/list over https: %v", err)
	}
	cs.Close()

	if got := servedSerial(t, addr, pool); got != 1 {
		t.Errorf("served certificate %d, want 1", got)
	}
	// TLS 1.1 is refused.
	if conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS11}); err == nil {
		conn.Close()
		t.Error("a TLS 1.1 handshake succeeded")
	}
	// Plain http to the TLS port: no MCP answer.
	if resp, err := http.Post("http://"+addr+"/mcp", "application/json", strings.NewReader(initialize)); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain http got 200 from the TLS listener")
		}
	}

	// Half a renewal: the new certificate without its key yet. The files
	// do not match: the previous pair stays served.
	tmp := certFile + ".new"
	if err := os.WriteFile(tmp, second.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, certFile); err != nil {
		t.Fatal(err)
	}
	if got := servedSerial(t, addr, pool); got != 1 {
		t.Errorf("mid-renewal: served certificate %d, want 1 (the previous pair)", got)
	}
	// The whole renewal: served from the next connection.
	second.Write(t, certFile, keyFile)
	if got := servedSerial(t, addr, pool); got != 2 {
		t.Errorf("after the renewal: served certificate %d, want 2", got)
	}
	// Files gone: the certificate served stays.
	os.Remove(certFile)
	if got := servedSerial(t, addr, pool); got != 2 {
		t.Errorf("with the files gone: served certificate %d, want 2", got)
	}
}

// TestTLSConfigErrors: what is wrong with tls names the key and the files.
func TestTLSConfigErrors(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	tlstest.New(t, 1).Write(t, certFile, keyFile)
	other := filepath.Join(dir, "other.key")
	if err := os.WriteFile(other, tlstest.New(t, 2).KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no files", Config{HTTP: "127.0.0.1:0", TLS: &TLSConfig{}}, "tls: name the certificate and key files"},
		{"no key", Config{HTTP: "127.0.0.1:0", TLS: &TLSConfig{Cert: certFile}}, "tls.key: required"},
		{"no cert", Config{HTTP: "127.0.0.1:0", TLS: &TLSConfig{Key: keyFile}}, "tls.cert: required"},
		{"missing file", Config{HTTP: "127.0.0.1:0", TLS: &TLSConfig{Cert: certFile + "x", Key: keyFile}}, "cert " + certFile + "x"},
		{"key of another certificate", Config{HTTP: "127.0.0.1:0", TLS: &TLSConfig{Cert: certFile, Key: other}}, "private key does not match public key"},
		{"without http", Config{TLS: &TLSConfig{Cert: certFile, Key: keyFile}}, "tls: applies to http only"},
	} {
		err := tt.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate = %v, want %q", tt.name, err, tt.want)
		}
	}
	ok := Config{HTTP: "127.0.0.1:0", TLS: &TLSConfig{Cert: certFile, Key: keyFile}}
	if err := ok.Validate(); err != nil {
		t.Errorf("a good pair: %v", err)
	}
}
