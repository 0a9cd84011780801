// Package health checks a running `dsh-host serve --http` from outside:
// one GET of its /healthz or /readyz, for a container's HEALTHCHECK or a
// supervisor's probe, where no shell or curl is at hand (a scratch image).
package health

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/internal/termsafe"
)

// EnvURL names the URL `dsh-host health` checks when given none: the
// image's HEALTHCHECK is fixed in the image, and this is how a container
// whose gateway speaks TLS (or listens on another port) points it at
// https://127.0.0.1:PORT/ without rebuilding.
const EnvURL = "DSH_HEALTH_URL"

// DefaultTimeout bounds a whole check (connect, TLS, answer) when the
// caller gives none: a probe that hangs must fail, not pile up.
const DefaultTimeout = 5 * time.Second

// maxBody bounds what is read of the answer: the gateway's is one line,
// and a hostile or wrong server must not make a probe read forever.
const maxBody = 4 << 10

// Options of a check.
type Options struct {
	// Ready checks /readyz (serving the whole surface, not draining)
	// instead of /healthz (the process answers).
	Ready bool
	// Timeout bounds the check; DefaultTimeout when zero or less.
	Timeout time.Duration
	// Insecure skips the verification of an https URL's certificate when
	// its host is a loopback address (127.0.0.0/8, ::1, localhost): a
	// probe on 127.0.0.1 of a gateway whose certificate names its public
	// host, or is self-signed. Nothing but the host itself can answer on
	// its loopback, and the check sends no credential. To any other host
	// the certificate is verified all the same: across a network is where
	// verification matters, and the image's check always passes Insecure.
	Insecure bool
}

// Result of a check that got an answer.
type Result struct {
	URL    string // the URL checked
	Status int    // its HTTP status
	Body   string // the answer's first line, printable, bounded
}

// OK says whether the answer was a success (2xx).
func (r Result) OK() bool { return r.Status >= 200 && r.Status < 300 }

// Target is the URL a check of base GETs: base's /healthz (or /readyz
// with ready), whatever path base has, so that the gateway's URL
// (http://HOST:PORT/ or .../mcp) works as given. A base whose path is
// /healthz or /readyz already is checked as it is. Only http and https
// with a host are accepted, and no user info (a probe carries no
// credential).
func Target(base string, ready bool) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("URL %q: %v", base, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("URL %q: the scheme must be http or https", base)
	}
	if u.Host == "" {
		return "", fmt.Errorf("URL %q: no host (want http://HOST:PORT/)", base)
	}
	if u.User != nil {
		return "", fmt.Errorf("URL %q: a health check takes no user or password", redact(u))
	}
	switch u.Path {
	case "/healthz", "/readyz":
	default:
		u.Path = "/healthz"
		if ready {
			u.Path = "/readyz"
		}
	}
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return u.String(), nil
}

func redact(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

// Check GETs base's health path (Target) once. An error is a check that
// got no answer (a refused connection, a timeout, a bad URL, a redirect);
// an answer of any status is a Result, OK or not.
func Check(ctx context.Context, base string, o Options) (Result, error) {
	target, err := Target(base, o.Ready)
	if err != nil {
		return Result{}, err
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tu, _ := url.Parse(target) // Target made it
	skipVerify := o.Insecure && Loopback(tu.Hostname())
	tr := &http.Transport{
		// The probe goes straight to the address given: an HTTP_PROXY of
		// the environment must not answer for the gateway.
		Proxy:             nil,
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: skipVerify}, //nolint:gosec // opt-in, loopback only, see Options.Insecure
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{
		Transport: tr,
		// A redirect is not health: the gateway's health paths never
		// redirect, so one means something else answers.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return Result{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return Result{}, fmt.Errorf("GET %s: no answer within %s", target, timeout)
		}
		err = unwrapURLError(err)
		var unverified *tls.CertificateVerificationError
		if o.Insecure && !skipVerify && errors.As(err, &unverified) {
			return Result{}, fmt.Errorf("GET %s: %v (--insecure skips the verification on a loopback address only)", target, err)
		}
		return Result{}, fmt.Errorf("GET %s: %v", target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return Result{URL: target, Status: resp.StatusCode, Body: firstLine(b)}, nil
}

// Loopback says whether host (a URL's, without port) is this machine's
// loopback: localhost, or an address in 127.0.0.0/8 or ::1.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// firstLine is b's first line, bounded and escaped (termsafe), so that a
// hostile answer cannot drive the terminal or forge log lines.
func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	s = strings.TrimRight(s, "\r")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return termsafe.Escape(s)
}
