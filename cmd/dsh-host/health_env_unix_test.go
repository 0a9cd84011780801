//go:build unix

package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/testkit/tlstest"
)

// TestHealthFromEnvironment: the image's HEALTHCHECK, `dsh-host health
// --timeout 5s --insecure` with no URL, checks $DSH_HEALTH_URL; pointed at
// a gateway serving TLS with a self-signed certificate it passes, and
// without --insecure the certificate is verified and the check fails.
func TestHealthFromEnvironment(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	tlstest.New(t, 1).Write(t, certFile, keyFile)
	p := startGateway(t, ctx, nil, "--tls-cert", certFile, "--tls-key", keyFile)
	if !strings.HasPrefix(p.base, "https://127.0.0.1:") {
		t.Fatalf("gateway at %s, want https", p.base)
	}
	t.Setenv("DSH_HEALTH_URL", p.base+"/")
	code, out, errOut := dshHost(t, "health", "--timeout", "5s", "--insecure")
	if code != exitOK || out != p.base+"/healthz: 200 ok\n" {
		t.Errorf("health --insecure with DSH_HEALTH_URL = %d, %q, %q; want 0 and /healthz's answer", code, out, errOut)
	}
	code, _, errOut = dshHost(t, "health", "--timeout", "5s")
	if code != exitFail || !strings.Contains(errOut, "certificate") {
		t.Errorf("health without --insecure = %d, %q; want 1 and the certificate's error", code, errOut)
	}
	// A URL given wins over the variable.
	t.Setenv("DSH_HEALTH_URL", "http://127.0.0.1:1/")
	if code, out, errOut := dshHost(t, "health", "--insecure", p.base); code != exitOK {
		t.Errorf("health URL with another DSH_HEALTH_URL = %d, %q, %q", code, out, errOut)
	}
	t.Setenv("DSH_HEALTH_URL", "")
	if code, _, errOut := dshHost(t, "health"); code != exitUsage || !strings.Contains(errOut, "DSH_HEALTH_URL") {
		t.Errorf("health with neither = %d, %q; want %d naming DSH_HEALTH_URL", code, errOut, exitUsage)
	}
}
