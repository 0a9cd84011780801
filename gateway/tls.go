package gateway

import (
	"crypto/tls"
	"log/slog"
	"net"
	"os"
	"sync"

	"github.com/dsh-host/dsh-host/host"
)

// TLSConfig is the gateway entry's tls key: the listener serves https with
// the certificate chain in Cert and its private key in Key (PEM files, as
// a certificate authority or cert-manager writes them). Both are read
// again when either file changes, so a renewed certificate is served from
// the next connection on, without a restart.
type TLSConfig struct {
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
}

// Validate checks that both files are named and hold a matching pair.
func (c *TLSConfig) Validate() error {
	switch {
	case c.Cert == "" && c.Key == "":
		return host.KeyErrorf("tls", "name the certificate and key files: tls: {cert: FILE, key: FILE}")
	case c.Cert == "":
		return host.KeyErrorf("tls.cert", "required with tls.key: the certificate chain's PEM file")
	case c.Key == "":
		return host.KeyErrorf("tls.key", "required with tls.cert: the private key's PEM file")
	}
	_, err := loadPair(c.Cert, c.Key)
	return err
}

// loadPair loads the key pair, with an error naming the files.
func loadPair(cert, key string) (*tls.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, host.KeyErrorf("tls", "cert %s, key %s: %v", cert, key, err)
	}
	return &pair, nil
}

// certReloader serves the key pair of two files, loaded again at the first
// handshake after either file changed (its size, time or inode, as stat
// sees it through symlinks, so a Kubernetes secret's swap counts). A
// change that does not load (the certificate written, its key not yet)
// keeps the pair served until then, logged once per change.
type certReloader struct {
	cert, key string
	logger    *slog.Logger

	mu   sync.Mutex
	pair *tls.Certificate
	seen [2]fileStamp // the files when last tried
}

// fileStamp is what stat says of a file; nil when it cannot.
type fileStamp struct{ fi os.FileInfo }

func stamp(file string) fileStamp {
	fi, _ := os.Stat(file)
	return fileStamp{fi}
}

func (a fileStamp) same(b fileStamp) bool {
	if a.fi == nil || b.fi == nil {
		return a.fi == nil && b.fi == nil
	}
	return os.SameFile(a.fi, b.fi) && a.fi.Size() == b.fi.Size() && a.fi.ModTime().Equal(b.fi.ModTime())
}

func newCertReloader(c TLSConfig, logger *slog.Logger) (*certReloader, error) {
	r := &certReloader{cert: c.Cert, key: c.Key, logger: logger, seen: [2]fileStamp{stamp(c.Cert), stamp(c.Key)}}
	pair, err := loadPair(c.Cert, c.Key)
	if err != nil {
		return nil, err
	}
	r.pair = pair
	return r, nil
}

// getCertificate is tls.Config.GetCertificate: the current pair, loaded
// again first if a file changed since the last try.
func (r *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	now := [2]fileStamp{stamp(r.cert), stamp(r.key)}
	r.mu.Lock()
	defer r.mu.Unlock()
	if now[0].same(r.seen[0]) && now[1].same(r.seen[1]) {
		return r.pair, nil
	}
	r.seen = now
	pair, err := loadPair(r.cert, r.key)
	if err != nil {
		r.logger.Warn("gateway: the TLS files changed but do not load; serving the previous certificate until they do", "err", err)
		return r.pair, nil
	}
	r.pair = pair
	r.logger.Info("gateway: TLS certificate reloaded", "cert", r.cert)
	return r.pair, nil
}

// tlsListener wraps ln to serve TLS 1.2 or later with r's certificate.
// HTTP/1.1 only: the connection cap (capListener) counts connections, and
// HTTP/2 would carry every stream of a client on one.
func tlsListener(ln net.Listener, r *certReloader) net.Listener {
	return tls.NewListener(ln, &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: r.getCertificate,
		NextProtos:     []string{"http/1.1"},
	})
}
