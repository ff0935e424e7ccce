// Package testcerts makes throwaway certificates for tests: a CA, server
// certificates for 127.0.0.1 and localhost, and client certificates with
// a chosen subject, written as PEM files into a directory the test owns.
// Nothing outside tests and make compat (integration/compat/certgen) uses it.
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Pair is a certificate and its private key.
type Pair struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// CertPEM is the certificate in PEM.
func (p Pair) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.Cert.Raw})
}

// KeyPEM is the private key in unencrypted PKCS#8 PEM.
func (p Pair) KeyPEM() []byte {
	der, err := x509.MarshalPKCS8PrivateKey(p.Key)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// TLS is the pair as a tls.Certificate.
func (p Pair) TLS() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{p.Cert.Raw}, PrivateKey: p.Key, Leaf: p.Cert}
}

// NewCA makes a self-signed CA.
func NewCA(cn string) Pair {
	return issue(nil, pkix.Name{CommonName: cn}, func(t *x509.Certificate) {
		t.IsCA, t.BasicConstraintsValid = true, true
		t.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	})
}

// Server issues a server certificate for 127.0.0.1, ::1 and localhost.
func (ca Pair) Server() Pair {
	return issue(&ca, pkix.Name{CommonName: "localhost"}, func(t *x509.Certificate) {
		t.DNSNames = []string{"localhost"}
		t.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		t.KeyUsage = x509.KeyUsageDigitalSignature
	})
}

// Client issues a client certificate with the subject name.
func (ca Pair) Client(name pkix.Name) Pair {
	return issue(&ca, name, func(t *x509.Certificate) {
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		t.KeyUsage = x509.KeyUsageDigitalSignature
	})
}

func issue(parent *Pair, name pkix.Name, edit func(*x509.Certificate)) Pair {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err)
	}
	t := &x509.Certificate{
		SerialNumber: sn,
		Subject:      name,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
	edit(t)
	signer, signerCert := key, t
	if parent != nil {
		signer, signerCert = parent.Key, parent.Cert
	}
	der, err := x509.CreateCertificate(rand.Reader, t, signerCert, &key.PublicKey, signer)
	if err != nil {
		panic(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		panic(err)
	}
	return Pair{Cert: cert, Key: key}
}

// Write writes b to dir/name and returns the path.
func Write(dir, name string, b []byte) string {
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		panic(err)
	}
	return path
}

// Pool is a pool holding the CA.
func (ca Pair) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}
