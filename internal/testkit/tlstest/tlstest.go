// Package tlstest makes self-signed certificates for 127.0.0.1, for the
// tests of serving over TLS.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"testing"
	"time"
)

// Cert is a self-signed certificate for 127.0.0.1 and its key, as PEM.
type Cert struct {
	Serial  int64
	CertPEM []byte
	KeyPEM  []byte
	X509    *x509.Certificate
}

// New makes a certificate with serial, valid for an hour either side of
// now; it is its own CA, so Pool trusts it.
func New(t testing.TB, serial int64) Cert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial),
		Subject:               pkix.Name{CommonName: "dsh-host test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return Cert{Serial: serial, X509: c,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})}
}

// Write writes the pair to cert and key, the way a renewal replaces them:
// a new file renamed over the old one.
func (c Cert) Write(t testing.TB, cert, key string) {
	t.Helper()
	for file, data := range map[string][]byte{cert: c.CertPEM, key: c.KeyPEM} {
		tmp := file + ".new"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
}

// Pool is a certificate pool trusting c.
func (c Cert) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(c.X509)
	return pool
}
