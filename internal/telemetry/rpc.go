package telemetry

import (
	"errors"
	"net"
	"net/url"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
)

// The attributes OTel's MCP semantic conventions give a request's span
// beside the mcp.* ones: its transport, and the error code of a failed
// answer.
const (
	AttrErrorType       = "error.type"
	AttrRPCStatusCode   = "rpc.response.status_code"
	AttrNetTransport    = "network.transport"
	AttrNetProtocolName = "network.protocol.name"
	AttrServerAddress   = "server.address"
	AttrServerPort      = "server.port"
)

// ErrorOther is error.type for a failure that carries no JSON-RPC code
// (OTel's fallback value).
const ErrorOther = "_OTHER"

// RPCErrorAttrs are the attributes of a request answered with err, a
// JSON-RPC error: error.type and rpc.response.status_code are its code
// ("-32602"), as the conventions ask; an error without one (code 0, which
// go-sdk sends for a plain Go error) is error.type _OTHER.
func RPCErrorAttrs(err error) []attribute.KeyValue {
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code == 0 {
		return []attribute.KeyValue{attribute.String(AttrErrorType, ErrorOther)}
	}
	code := strconv.FormatInt(rpcErr.Code, 10)
	return []attribute.KeyValue{attribute.String(AttrErrorType, code), attribute.String(AttrRPCStatusCode, code)}
}

// StdioAttrs are the network attributes of MCP over stdio.
func StdioAttrs() []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String(AttrNetTransport, "pipe")}
}

// HTTPAttrs are the network attributes of MCP over HTTP with the server
// at hostport (HOST:PORT, or a URL): server.address is left out when the
// host is an unspecified address (a listener on every interface), which
// names no server.
func HTTPAttrs(hostport string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{attribute.String(AttrNetTransport, "tcp"), attribute.String(AttrNetProtocolName, "http")}
	if u, err := url.Parse(hostport); err == nil && u.Host != "" {
		port := u.Port()
		if port == "" {
			port = "80"
			if u.Scheme == "https" {
				port = "443"
			}
		}
		hostport = net.JoinHostPort(u.Hostname(), port)
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return attrs
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		attrs = append(attrs, attribute.String(AttrServerAddress, host))
	}
	if p, err := strconv.Atoi(port); err == nil {
		attrs = append(attrs, attribute.Int(AttrServerPort, p))
	}
	return attrs
}
