package kcompatd

// The TLS side of SSL and SASL_SSL listeners, from Kafka's ssl.*
// properties as a listener sees them (listenerConfig): the key store (PEM
// in a file or inline, or PKCS12), the trust store that verifies client
// certificates (PEM or PKCS12), ssl.client.auth, ssl.enabled.protocols
// and ssl.cipher.suites where Go can honour them, and the principal
// mapping. JKS stores, Java's own format, are refused with a hint to
// convert them.

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	pkcs12 "software.sslmate.com/src/go-pkcs12"

	"github.com/kcompatd/kcompatd/internal/configdef"
	"github.com/kcompatd/kcompatd/protocol"
)

// Store types (ssl.keystore.type, ssl.truststore.type).
const (
	storePEM    = "PEM"
	storePKCS12 = "PKCS12"
	storeJKS    = "JKS"
)

// tlsProtocols are the ssl.enabled.protocols Go serves, oldest first.
var tlsProtocols = []struct {
	name    string
	version uint16
}{
	{"TLSv1", tls.VersionTLS10},
	{"TLSv1.1", tls.VersionTLS11},
	{"TLSv1.2", tls.VersionTLS12},
	{"TLSv1.3", tls.VersionTLS13},
}

// serverTLS builds a listener's TLS configuration; the errors name the
// listener's properties.
func (c *Config) serverTLS(listener string) (*tls.Config, *protocol.PrincipalMapper, []*ConfigError) {
	var errs []*ConfigError
	fail := func(prop *string, reason string) {
		errs = append(errs, &ConfigError{Property: listenerPrefix(listener) + c.propertyName(prop), Reason: reason})
	}
	tc := &tls.Config{}

	cert, err := c.keyStore()
	if err != nil {
		fail(&c.SSLKeystoreType, err.Error())
	} else {
		tc.Certificates = []tls.Certificate{cert}
	}

	pool, err := c.trustStore()
	if err != nil {
		fail(&c.SSLTruststoreType, err.Error())
	}
	tc.ClientCAs = pool
	switch c.SSLClientAuth {
	case "required":
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	case "requested":
		tc.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		tc.ClientAuth = tls.NoClientCert
	}
	if tc.ClientAuth != tls.NoClientCert && pool == nil && err == nil {
		fail(&c.SSLClientAuth, "client authentication needs a trust store (ssl.truststore.location or ssl.truststore.certificates)")
	}

	if err := setTLSVersions(tc, configdef.SplitList(c.SSLEnabledProtocols)); err != nil {
		fail(&c.SSLEnabledProtocols, err.Error())
	}
	if err := setCipherSuites(tc, configdef.SplitList(c.SSLCipherSuites)); err != nil {
		fail(&c.SSLCipherSuites, err.Error())
	}
	mapper, err := protocol.ParsePrincipalMappingRules(c.SSLPrincipalMappingRules)
	if err != nil {
		fail(&c.SSLPrincipalMappingRules, err.Error())
	}
	return tc, mapper, errs
}

// propertyName is the catalog name of the property whose field is f.
func (c *Config) propertyName(f any) string {
	for i := range properties {
		if properties[i].field(c) == f {
			return properties[i].Name
		}
	}
	panic("kcompatd: no property for the field")
}

// keyStore loads the server's certificate chain and private key.
func (c *Config) keyStore() (tls.Certificate, error) {
	var cert tls.Certificate
	if c.SSLKeystoreLocation == "" && c.SSLKeystoreKey == "" && c.SSLKeystoreCertificateChain == "" {
		return cert, errors.New("an SSL listener needs a key store: ssl.keystore.location, or ssl.keystore.key with ssl.keystore.certificate.chain (ssl.keystore.type PEM or PKCS12)")
	}
	switch strings.ToUpper(c.SSLKeystoreType) {
	case storePEM:
		var data []byte
		switch {
		case c.SSLKeystoreLocation != "" && (c.SSLKeystoreKey != "" || c.SSLKeystoreCertificateChain != ""):
			return cert, errors.New("ssl.keystore.location cannot be combined with ssl.keystore.key and ssl.keystore.certificate.chain")
		case c.SSLKeystoreLocation != "":
			if c.SSLKeystorePassword != "" {
				return cert, errors.New("SSL key store password cannot be specified with PEM format, only key password may be specified")
			}
			b, err := os.ReadFile(c.SSLKeystoreLocation)
			if err != nil {
				return cert, err
			}
			data = b
		case c.SSLKeystoreKey != "" && c.SSLKeystoreCertificateChain != "":
			data = []byte(c.SSLKeystoreCertificateChain + "\n" + c.SSLKeystoreKey)
		default:
			return cert, errors.New("an SSL listener needs ssl.keystore.location, or ssl.keystore.key with ssl.keystore.certificate.chain")
		}
		return pemKeyStore(data, c.SSLKeyPassword)
	case storePKCS12:
		data, err := readPKCS12(c.SSLKeystoreLocation, "key")
		if err != nil {
			return cert, err
		}
		key, leaf, chain, err := pkcs12.DecodeChain(data, c.SSLKeystorePassword)
		if err != nil {
			return cert, fmt.Errorf("reading the PKCS12 key store %s: %w", c.SSLKeystoreLocation, err)
		}
		cert.PrivateKey, cert.Leaf = key, leaf
		cert.Certificate = [][]byte{leaf.Raw}
		for _, ca := range chain {
			cert.Certificate = append(cert.Certificate, ca.Raw)
		}
		return cert, nil
	case storeJKS:
		return cert, errors.New("JKS key stores are not supported: use PKCS12 or PEM (keytool -importkeystore -deststoretype PKCS12 converts one)")
	}
	return cert, fmt.Errorf("unknown key store type %q (PEM or PKCS12)", c.SSLKeystoreType)
}

// pemKeyStore reads a PEM key store: one private key (PKCS#8, encrypted
// with ssl.key.password or not; PKCS#1 and SEC 1 keys are read too) and
// the certificate chain, leaf first.
func pemKeyStore(data []byte, keyPassword string) (tls.Certificate, error) {
	var cert tls.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		switch block.Type {
		case "CERTIFICATE":
			cert.Certificate = append(cert.Certificate, block.Bytes)
		case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY":
			if cert.PrivateKey != nil {
				return cert, errors.New("the PEM key store holds more than one private key")
			}
			key, err := parsePEMKey(block, keyPassword)
			if err != nil {
				return cert, err
			}
			cert.PrivateKey = key
		}
	}
	if len(cert.Certificate) == 0 {
		return cert, errors.New("the PEM key store holds no certificate")
	}
	if cert.PrivateKey == nil {
		return cert, errors.New("the PEM key store holds no private key")
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return cert, fmt.Errorf("the PEM key store's first certificate: %w", err)
	}
	cert.Leaf = leaf
	pub, ok := cert.PrivateKey.(interface{ Public() crypto.PublicKey })
	if !ok {
		return cert, errors.New("the PEM key store's private key is not a signing key")
	}
	if eq, ok := pub.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !eq.Equal(leaf.PublicKey) {
		return cert, errors.New("the PEM key store's private key does not match its first certificate")
	}
	return cert, nil
}

func parsePEMKey(block *pem.Block, password string) (crypto.PrivateKey, error) {
	switch block.Type {
	case "RSA PRIVATE KEY":
		return x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		return x509.ParseECPrivateKey(block.Bytes)
	case "ENCRYPTED PRIVATE KEY":
		if password == "" {
			return nil, errors.New("the private key is encrypted: set ssl.key.password")
		}
		der, err := decryptPKCS8(block.Bytes, []byte(password))
		if err != nil {
			return nil, err
		}
		return x509.ParsePKCS8PrivateKey(der)
	}
	return x509.ParsePKCS8PrivateKey(block.Bytes)
}

// trustStore loads the certificates that verify client certificates; nil
// when none is configured.
func (c *Config) trustStore() (*x509.CertPool, error) {
	if c.SSLTruststoreLocation == "" && c.SSLTruststoreCertificates == "" {
		return nil, nil
	}
	var certs []*x509.Certificate
	switch strings.ToUpper(c.SSLTruststoreType) {
	case storePEM:
		var data []byte
		switch {
		case c.SSLTruststoreLocation != "" && c.SSLTruststoreCertificates != "":
			return nil, errors.New("ssl.truststore.location cannot be combined with ssl.truststore.certificates")
		case c.SSLTruststorePassword != "":
			return nil, errors.New("SSL trust store password cannot be specified for PEM format")
		case c.SSLTruststoreLocation != "":
			b, err := os.ReadFile(c.SSLTruststoreLocation)
			if err != nil {
				return nil, err
			}
			data = b
		default:
			data = []byte(c.SSLTruststoreCertificates)
		}
		for {
			var block *pem.Block
			block, data = pem.Decode(data)
			if block == nil {
				break
			}
			if block.Type != "CERTIFICATE" {
				continue
			}
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("a trust store certificate: %w", err)
			}
			certs = append(certs, cert)
		}
	case storePKCS12:
		data, err := readPKCS12(c.SSLTruststoreLocation, "trust")
		if err != nil {
			return nil, err
		}
		if certs, err = pkcs12.DecodeTrustStore(data, c.SSLTruststorePassword); err != nil {
			return nil, fmt.Errorf("reading the PKCS12 trust store %s: %w", c.SSLTruststoreLocation, err)
		}
	case storeJKS:
		return nil, errors.New("JKS trust stores are not supported: use PKCS12 or PEM (keytool -importkeystore -deststoretype PKCS12 converts one)")
	default:
		return nil, fmt.Errorf("unknown trust store type %q (PEM or PKCS12)", c.SSLTruststoreType)
	}
	if len(certs) == 0 {
		return nil, errors.New("the trust store holds no certificate")
	}
	pool := x509.NewCertPool()
	for _, cert := range certs {
		pool.AddCert(cert)
	}
	return pool, nil
}

// readPKCS12 reads the PKCS12 key or trust store at location, which must
// be set.
func readPKCS12(location, kind string) ([]byte, error) {
	if location == "" {
		return nil, fmt.Errorf("a PKCS12 %s store needs ssl.%sstore.location", kind, kind)
	}
	return os.ReadFile(location)
}

// setTLSVersions enables ssl.enabled.protocols: Go takes a range of
// versions, so the list must be contiguous.
func setTLSVersions(tc *tls.Config, names []string) error {
	lo, hi := -1, -1
	for _, n := range names {
		i := slices.IndexFunc(tlsProtocols, func(p struct {
			name    string
			version uint16
		}) bool {
			return p.name == n
		})
		if i < 0 {
			return fmt.Errorf("protocol %s is not supported (TLSv1, TLSv1.1, TLSv1.2, TLSv1.3)", n)
		}
		if lo < 0 || i < lo {
			lo = i
		}
		hi = max(hi, i)
	}
	if lo < 0 {
		return errors.New("no protocol enabled")
	}
	if hi-lo+1 != len(slices.Compact(slices.Sorted(slices.Values(names)))) {
		return errors.New("Go enables a contiguous range of TLS versions: the list cannot skip one")
	}
	tc.MinVersion, tc.MaxVersion = tlsProtocols[lo].version, tlsProtocols[hi].version
	return nil
}

// setCipherSuites limits the TLS 1.2 and older cipher suites to names (IANA
// names, as Java spells them). Go does not let TLS 1.3's suites be chosen:
// they are accepted in the list, and a list without any of them turns
// TLS 1.3 off, as Java would find no suite for it.
func setCipherSuites(tc *tls.Config, names []string) error {
	if len(names) == 0 {
		return nil
	}
	byName := map[string]*tls.CipherSuite{}
	for _, cs := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		byName[cs.Name] = cs
	}
	has13 := false
	for _, n := range names {
		cs, ok := byName[n]
		if !ok {
			return fmt.Errorf("unsupported cipher suite %s", n)
		}
		if slices.Contains(cs.SupportedVersions, tls.VersionTLS13) {
			has13 = true
			continue
		}
		tc.CipherSuites = append(tc.CipherSuites, cs.ID)
	}
	if !has13 && tc.MaxVersion == tls.VersionTLS13 {
		tc.MaxVersion = tls.VersionTLS12
	}
	return nil
}
