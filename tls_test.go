package kcompatd

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"maps"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	pkcs12 "software.sslmate.com/src/go-pkcs12"

	"github.com/kcompatd/kcompatd/internal/testcerts"
)

// encryptPKCS8 is what `openssl pkcs8 -topk8 -v2 aes256 -v2prf
// hmacWithSHA256` writes: PBES2, PBKDF2-HMAC-SHA256, AES-256-CBC.
func encryptPKCS8(t testing.TB, der []byte, password string) []byte {
	t.Helper()
	salt, iv := make([]byte, 16), make([]byte, 16)
	rand.Read(salt)
	rand.Read(iv)
	key, err := pbkdf2.Key(sha256.New, password, salt, 2048, 32)
	if err != nil {
		t.Fatal(err)
	}
	pad := 16 - len(der)%16
	plain := append(bytes.Clone(der), bytes.Repeat([]byte{byte(pad)}, pad)...)
	block, _ := aes.NewCipher(key)
	ct := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(ct, plain)
	mustRaw := func(v any) asn1.RawValue {
		b, err := asn1.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return asn1.RawValue{FullBytes: b}
	}
	kdf := mustRaw(pbkdf2Params{Salt: salt, IterationCount: 2048, PRF: algorithmIdentifier{Algorithm: asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}, Parameters: asn1.NullRawValue}})
	params := mustRaw(pbes2Params{
		KeyDerivationFunc: algorithmIdentifier{Algorithm: oidPBKDF2, Parameters: kdf},
		EncryptionScheme:  algorithmIdentifier{Algorithm: asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}, Parameters: mustRaw(iv)},
	})
	out, err := asn1.Marshal(encryptedPrivateKeyInfo{Algorithm: algorithmIdentifier{Algorithm: oidPBES2, Parameters: params}, EncryptedData: ct})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tlsFixture is a CA, a server and a client pair, written in every store
// format kcompatd reads.
type tlsFixture struct {
	ca, server, client testcerts.Pair
	dir                string
	// files
	serverPEM, encryptedPEM, serverP12, caPEM, caP12 string
}

func newTLSFixture(t testing.TB) *tlsFixture {
	t.Helper()
	f := &tlsFixture{dir: t.TempDir()}
	f.ca = testcerts.NewCA("kcompatd test CA")
	f.server = f.ca.Server()
	f.client = f.ca.Client(pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"Acme"}})
	f.serverPEM = testcerts.Write(f.dir, "server.pem", append(f.server.KeyPEM(), append(f.server.CertPEM(), f.ca.CertPEM()...)...))
	der, err := x509.MarshalPKCS8PrivateKey(f.server.Key)
	if err != nil {
		t.Fatal(err)
	}
	enc := pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: encryptPKCS8(t, der, "key-secret")})
	f.encryptedPEM = testcerts.Write(f.dir, "server-enc.pem", append(enc, f.server.CertPEM()...))
	p12, err := pkcs12.Modern.Encode(f.server.Key, f.server.Cert, []*x509.Certificate{f.ca.Cert}, "store-secret")
	if err != nil {
		t.Fatal(err)
	}
	f.serverP12 = testcerts.Write(f.dir, "server.p12", p12)
	f.caPEM = testcerts.Write(f.dir, "ca.pem", f.ca.CertPEM())
	trust, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{f.ca.Cert}, "trust-secret")
	if err != nil {
		t.Fatal(err)
	}
	f.caP12 = testcerts.Write(f.dir, "ca.p12", trust)
	return f
}

// Every key and trust store form Kafka reads, and the settings Kafka
// refuses.
func TestServerTLSStores(t *testing.T) {
	f := newTLSFixture(t)
	ok := []map[string]string{
		{"ssl.keystore.type": "PEM", "ssl.keystore.location": f.serverPEM},
		{"ssl.keystore.type": "PEM", "ssl.keystore.key": string(f.server.KeyPEM()), "ssl.keystore.certificate.chain": string(f.server.CertPEM())},
		{"ssl.keystore.type": "PEM", "ssl.keystore.location": f.encryptedPEM, "ssl.key.password": "key-secret"},
		{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": f.serverP12, "ssl.keystore.password": "store-secret"},
		{"ssl.keystore.type": "pkcs12", "ssl.keystore.location": f.serverP12, "ssl.keystore.password": "store-secret",
			"ssl.truststore.type": "PKCS12", "ssl.truststore.location": f.caP12, "ssl.truststore.password": "trust-secret", "ssl.client.auth": "required"},
		{"ssl.keystore.type": "PEM", "ssl.keystore.location": f.serverPEM,
			"ssl.truststore.type": "PEM", "ssl.truststore.location": f.caPEM, "ssl.client.auth": "requested"},
		{"ssl.keystore.type": "PEM", "ssl.keystore.location": f.serverPEM,
			"ssl.truststore.type": "PEM", "ssl.truststore.certificates": string(f.ca.CertPEM()), "ssl.client.auth": "required",
			"ssl.enabled.protocols": "TLSv1.2", "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"},
	}
	for i, props := range ok {
		c := mustParse(t, props)
		tc, _, errs := c.serverTLS("SSL")
		if len(errs) > 0 {
			t.Errorf("case %d: %v", i, errs[0])
			continue
		}
		if len(tc.Certificates) != 1 || !tc.Certificates[0].Leaf.Equal(f.server.Cert) {
			t.Errorf("case %d: not the server certificate", i)
		}
		if props["ssl.client.auth"] != "" && tc.ClientCAs == nil {
			t.Errorf("case %d: no client CAs", i)
		}
	}
	tc, _, _ := mustParse(t, ok[6]).serverTLS("SSL")
	if tc.MinVersion != tls.VersionTLS12 || tc.MaxVersion != tls.VersionTLS12 || len(tc.CipherSuites) != 1 || tc.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Errorf("versions %x-%x suites %v auth %v", tc.MinVersion, tc.MaxVersion, tc.CipherSuites, tc.ClientAuth)
	}

	bad := []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{}, "an SSL listener needs a key store"},
		{map[string]string{"ssl.keystore.location": f.serverPEM}, "JKS key stores are not supported"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.key": "x"}, "needs ssl.keystore.location, or ssl.keystore.key with"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": f.serverPEM, "ssl.keystore.password": "x"}, "password cannot be specified with PEM"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": f.encryptedPEM}, "set ssl.key.password"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": f.encryptedPEM, "ssl.key.password": "wrong"}, "encrypted private key"},
		{map[string]string{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": f.serverP12, "ssl.keystore.password": "wrong"}, "PKCS12 key store"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.key": string(f.client.KeyPEM()), "ssl.keystore.certificate.chain": string(f.server.CertPEM())}, "does not match"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": f.serverPEM, "ssl.client.auth": "required"}, "needs a trust store"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": f.serverPEM, "ssl.enabled.protocols": "TLSv1.1,TLSv1.3"}, "contiguous"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": f.serverPEM, "ssl.enabled.protocols": "SSLv3"}, "not supported"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": f.serverPEM, "ssl.cipher.suites": "TLS_NOPE"}, "unsupported cipher suite"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": f.serverPEM, "ssl.truststore.type": "PEM", "ssl.truststore.location": f.serverP12}, "holds no certificate"},
	}
	for _, tt := range bad {
		c := mustParse(t, tt.props)
		_, _, errs := c.serverTLS("SSL")
		if len(errs) == 0 || !strings.Contains(errs[0].Error(), tt.want) {
			t.Errorf("%v: errors %v, want %q", tt.props, errs, tt.want)
		}
	}
}

func mustParse(t testing.TB, props map[string]string) *Config {
	t.Helper()
	all := map[string]string{"log.dirs": t.TempDir(), "listeners": "PLAINTEXT://127.0.0.1:0"}
	for k, v := range props {
		all[k] = v
	}
	c, _, err := ParseConfig(all)
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

// A SASL-less SSL listener beside PLAINTEXT, configured through
// listener.name.secure.* overrides: a client with a certificate produces
// and consumes over it; one without is refused (ssl.client.auth=required);
// the PLAINTEXT listener ignores the TLS settings.
func TestSSLListener(t *testing.T) {
	f := newTLSFixture(t)
	b := newTestBroker(t, "", map[string]string{
		"listeners":                                    "PLAINTEXT://127.0.0.1:0,SECURE://127.0.0.1:0",
		"listener.security.protocol.map":               "PLAINTEXT:PLAINTEXT,SECURE:SSL",
		"listener.name.secure.ssl.keystore.type":       "PEM",
		"listener.name.secure.ssl.keystore.location":   f.serverPEM,
		"listener.name.secure.ssl.truststore.type":     "PEM",
		"listener.name.secure.ssl.truststore.location": f.caPEM,
		"listener.name.secure.ssl.client.auth":         "required",
		"ssl.client.auth":                              "none",
	})
	addr := b.ListenerAddr("SECURE").String()
	ctx := testContext(t)
	withCert := &tls.Config{RootCAs: f.ca.Pool(), Certificates: []tls.Certificate{f.client.TLS()}}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(withCert), kgo.DefaultProduceTopic("tls"),
		kgo.ConsumeTopics("tls"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("over TLS")}).FirstErr(); err != nil {
		t.Fatalf("produce over TLS: %v", err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "over TLS" {
		t.Fatalf("consumed %v", recs)
	}

	// No certificate: the handshake fails.
	d := tls.Dialer{Config: &tls.Config{RootCAs: f.ca.Pool()}}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	nc, err := d.DialContext(dctx, "tcp", addr)
	if err == nil {
		// TLS 1.3: the client learns of the refusal on its first read.
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		if err = rawMetadataOn(nc); err == nil {
			t.Error("a client without a certificate was served")
		}
		nc.Close()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("refusal took a timeout: %v", err)
	}

	// The PLAINTEXT listener is plain.
	if err := rawMetadata(b.ListenerAddr("PLAINTEXT").String()); err != nil {
		t.Errorf("Metadata over PLAINTEXT: %v", err)
	}
}

// FuzzDecryptPKCS8 checks that decryptPKCS8 never panics, whatever the
// bytes and password, and that a key it encrypted itself comes back.
func FuzzDecryptPKCS8(f *testing.F) {
	key := testcerts.NewCA("fuzz").Key
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	f.Add(encryptPKCS8(f, der, "pw"), "pw")
	f.Add(encryptPKCS8(f, der, "pw"), "other")
	f.Add([]byte{0x30, 0x00}, "")
	f.Fuzz(func(t *testing.T, b []byte, pw string) {
		out, err := decryptPKCS8(b, []byte(pw))
		if err == nil && len(out) >= len(b) {
			t.Errorf("plaintext of %d bytes from %d", len(out), len(b))
		}
	})
}

// KIP-684: a SASL_SSL listener takes ssl.client.auth only from its own
// listener.name override; an SSL listener from either.
func TestSASLSSLClientAuthOnlyPrefixed(t *testing.T) {
	f := newTLSFixture(t)
	base := map[string]string{
		"listeners":               "SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0",
		"sasl.enabled.mechanisms": "SCRAM-SHA-256",
		"ssl.keystore.type":       "PEM", "ssl.keystore.location": f.serverPEM,
		"ssl.truststore.type": "PEM", "ssl.truststore.location": f.caPEM,
		"ssl.client.auth": "required",
	}
	auth := func(extra map[string]string) map[string]tls.ClientAuthType {
		props := maps.Clone(base)
		maps.Copy(props, extra)
		c := mustParse(t, props)
		plan, cerr := c.resolveListeners()
		if cerr != nil {
			t.Fatal(cerr)
		}
		ls, errs := c.buildListeners(plan)
		if len(errs) > 0 {
			t.Fatal(errs[0])
		}
		out := map[string]tls.ClientAuthType{}
		for _, l := range ls {
			out[l.Name] = l.TLS.ClientAuth
		}
		return out
	}
	if got := auth(nil); got["SASL_SSL"] != tls.NoClientCert || got["SSL"] != tls.RequireAndVerifyClientCert {
		t.Errorf("unprefixed: %v", got)
	}
	if got := auth(map[string]string{"listener.name.sasl_ssl.ssl.client.auth": "requested"}); got["SASL_SSL"] != tls.VerifyClientCertIfGiven {
		t.Errorf("prefixed: %v", got)
	}
}

// LIST properties print as set (--check-config, DescribeConfigs).
func TestListPropertiesPrint(t *testing.T) {
	c := mustParse(t, map[string]string{"sasl.enabled.mechanisms": "SCRAM-SHA-256, PLAIN", "ssl.enabled.protocols": "TLSv1.3"})
	got := map[string]string{}
	for _, kv := range c.Properties() {
		got[kv[0]] = kv[1]
	}
	if got["sasl.enabled.mechanisms"] != "SCRAM-SHA-256,PLAIN" || got["ssl.enabled.protocols"] != "TLSv1.3" {
		t.Errorf("printed %q and %q", got["sasl.enabled.mechanisms"], got["ssl.enabled.protocols"])
	}
}
