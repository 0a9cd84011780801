package gateway

// Fairness per caller: one caller must not hold every connection or
// session of the listener. A caller is the identity of its token when the
// gateway authenticates (inbound OAuth), and its client address otherwise;
// behind a proxy listed in trustedProxies the address comes from
// X-Forwarded-For. Connections are counted per peer address (nothing else
// is known when one is accepted), a trusted proxy's not at all: it carries
// many callers, and its own maxconn is the place to bound them.

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// perCallerShare is the default share of a gateway-wide cap one caller
// may hold: a quarter (maxConnectionsPerCaller, maxSessionsPerCaller).
const perCallerShare = 4

// perCaller is the per-caller cap for the configured value (0: a
// perCallerShare of total, at least 1).
func perCaller(configured, total int) int {
	if configured > 0 {
		return configured
	}
	return max(1, total/perCallerShare)
}

// proxies are the trustedProxies: the peers whose X-Forwarded-For is
// believed.
type proxies []netip.Prefix

// parseProxies parses trustedProxies: IPs or CIDRs, naming the one that
// is neither.
func parseProxies(list []string) (proxies, error) {
	var out proxies
	for i, s := range list {
		s = strings.TrimSpace(s)
		if p, err := netip.ParsePrefix(s); err == nil {
			if p.Bits() == 0 {
				// Every client would be a proxy: any caller could name
				// itself in X-Forwarded-For and take another's share.
				return nil, fmt.Errorf("trustedProxies[%d] %q: trusts every address, so any client could choose the address it is counted as; list the proxies in front of the gateway", i, s)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("trustedProxies[%d] %q: not an IP address or CIDR, such as 127.0.0.1 or 10.0.0.0/8 (the proxies in front of the gateway whose X-Forwarded-For is believed)", i, s)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

func (p proxies) trusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, pr := range p {
		if pr.Contains(a) {
			return true
		}
	}
	return false
}

// peerAddr is the IP of a remote address (host:port), unmapped; the zero
// Addr when it does not parse.
func peerAddr(remote string) netip.Addr {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().Unmap()
	}
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, _ := netip.ParseAddr(strings.Trim(host, "[]"))
	return a.Unmap()
}

// clientAddr is the address of r's client: its peer's, or, when the peer
// is a trusted proxy, the rightmost address of X-Forwarded-For that is not
// one (each proxy appends the address it got the request from, so those
// to the left of it are the client's own claims). An entry that does not
// parse stops the walk at the last trusted hop: such callers share that
// proxy's share.
func (p proxies) clientAddr(r *http.Request) netip.Addr {
	a := peerAddr(r.RemoteAddr)
	if len(p) == 0 || !a.IsValid() || !p.trusted(a) {
		return a
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop := peerAddr(strings.TrimSpace(hops[i]))
		if !hop.IsValid() {
			return a
		}
		if !p.trusted(hop) {
			return hop
		}
		a = hop
	}
	return a
}

// clientKey is what a client address counts as: itself for IPv4, its /64
// for IPv6, where one host is commonly given a whole /64 and could
// otherwise take a share per address.
func clientKey(a netip.Addr) netip.Prefix {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p
	}
	return netip.PrefixFrom(a, a.BitLen())
}

// showKey names a client key to its client.
func showKey(k netip.Prefix) string {
	if k.IsSingleIP() {
		return k.Addr().String()
	}
	return k.String()
}

// callerOf is who r's caller is for the per-caller caps, and how to name
// it to them: the token's identity when the gateway authenticates, the
// client address otherwise.
func (p proxies) callerOf(r *http.Request) (key, shown string) {
	if info := auth.TokenInfoFromContext(r.Context()); info != nil && info.UserID != "" {
		return "id:" + info.UserID, "this identity"
	}
	k := showKey(clientKey(p.clientAddr(r)))
	return "ip:" + k, "this client (" + k + ")"
}
