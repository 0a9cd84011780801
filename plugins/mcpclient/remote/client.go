package remote

import (
	"net/http"
	"net/url"
)

// headerTransport adds the configured headers to every request, and puts
// back the secrets of the configured URL that go-sdk never sees.
//
// go-sdk is handed the redacted endpoint (Redact), because net/http
// quotes a request's URL, query included, in every error it returns, and
// those errors reach the log and the instance's status. Here, below the
// http.Client, a request for that endpoint gets the real query back, and a
// request to the endpoint's host gets the basic auth of the real userinfo
// (unless a configured Authorization header wins, as net/http would have
// it).
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	// shown and real are the endpoint as go-sdk has it and as configured;
	// nil when the URL has nothing to hide.
	shown, real *url.URL
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) == 0 && t.real == nil {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	if t.real != nil && req.URL.Host == t.shown.Host {
		if req.URL.Scheme == t.shown.Scheme && req.URL.Path == t.shown.Path && req.URL.RawQuery == t.shown.RawQuery {
			req.URL.RawQuery = t.real.RawQuery
		}
		if u := t.real.User; u != nil {
			// Replaces what net/http derived from the redacted userinfo.
			req.URL.User = nil
			password, _ := u.Password()
			req.SetBasicAuth(u.Username(), password)
		}
	}
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.base.RoundTrip(req)
}

// NewClient returns the instance's own HTTP client for endpoint (its
// idle connections are closed at dispose, so none outlive the instance),
// and the endpoint to hand go-sdk: endpoint redacted (Redact).
func NewClient(endpoint string, headers map[string]string) (*http.Client, *http.Transport, string) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	// go-sdk posts every call on a request of its own, so concurrent calls
	// hold as many connections. net/http keeps 2 idle per host by default:
	// past 2 calls at once, every answer closed its connection and the next
	// call dialled a new one (9% of a gateway's CPU under 32 clients).
	base.MaxIdleConnsPerHost = maxIdleConnsPerServer
	ht := &headerTransport{base: base, headers: headers}
	shown := Redact(endpoint)
	if shown != endpoint {
		real, err1 := url.Parse(endpoint)
		redacted, err2 := url.Parse(shown)
		if err1 == nil && err2 == nil {
			ht.shown, ht.real = redacted, real
		} else {
			shown = endpoint // Validate refuses such a URL; never reached
		}
	}
	return &http.Client{Transport: ht}, base, shown
}

// maxIdleConnsPerServer is how many idle connections to a Streamable HTTP
// server an instance keeps for the calls to come.
const maxIdleConnsPerServer = 64
