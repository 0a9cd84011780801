package registry

import "net/http"

// SetHTTPClientForTest has c trust what hc trusts (a TLS test server's
// certificate), keeping c's own redirect rule.
func SetHTTPClientForTest(c *Client, hc *http.Client) { c.http.Transport = hc.Transport }
