package integration

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcompatd/kcompatd/integration/harness"
	"github.com/kcompatd/kcompatd/internal/testcerts"
)

// listenerSpec is one extra listener of a secured broker: its name and
// security protocol.
type listenerSpec struct{ name, protocol string }

// startSecured starts kcompatd with a PLAINTEXT listener (b.Addr) and the
// given extra listeners on free 127.0.0.1 ports, whose addresses are
// returned by name.
func startSecured(t *testing.T, dataDir string, extra []listenerSpec, configs ...string) (*broker, map[string]string) {
	t.Helper()
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addrs := map[string]string{}
	listeners := []string{"PLAINTEXT://127.0.0.1:" + strconv.Itoa(port)}
	protocols := []string{"PLAINTEXT:PLAINTEXT"}
	for _, l := range extra {
		p, err := harness.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		addrs[l.name] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		listeners = append(listeners, l.name+"://"+addrs[l.name])
		protocols = append(protocols, l.name+":"+l.protocol)
	}
	all := append([]string{
		"listeners=" + strings.Join(listeners, ","),
		"listener.security.protocol.map=" + strings.Join(protocols, ","),
	}, configs...)
	b := startBrokerWith(t, harness.Options{DataDir: dataDir, Port: port, Configs: all})
	return b, addrs
}

// tlsFiles writes a CA, a server key store and a trust store as PEM files.
type tlsFiles struct {
	ca, client        testcerts.Pair
	keystore, castore string
}

func writeTLSFiles(t *testing.T) tlsFiles {
	t.Helper()
	dir := t.TempDir()
	ca := testcerts.NewCA("integration CA")
	server := ca.Server()
	return tlsFiles{
		ca:       ca,
		client:   ca.Client(pkix.Name{CommonName: "alice", Organization: []string{"Acme"}}),
		keystore: testcerts.Write(dir, "server.pem", append(server.KeyPEM(), server.CertPEM()...)),
		castore:  testcerts.Write(dir, "ca.pem", ca.CertPEM()),
	}
}

// sslConfigs are the broker properties of an SSL listener named name that
// requires client certificates.
func (f tlsFiles) sslConfigs(name string) []string {
	p := "listener.name." + strings.ToLower(name) + "."
	return []string{
		p + "ssl.keystore.type=PEM",
		p + "ssl.keystore.location=" + f.keystore,
		p + "ssl.truststore.type=PEM",
		p + "ssl.truststore.location=" + f.castore,
		p + "ssl.client.auth=required",
	}
}

// produceConsume produces one record to a new topic with cl and reads it
// back.
func produceConsume(t *testing.T, cl *kgo.Client, topic string) {
	t.Helper()
	ctx := adminCtx(t)
	rec := &kgo.Record{Topic: topic, Value: []byte("value of " + topic)}
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
	cl.AddConsumeTopics(topic)
	fs := cl.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatalf("fetch %s: %v", topic, err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != string(rec.Value) {
		t.Fatalf("consumed %v from %s", recs, topic)
	}
}

// kgo over an SSL listener with a client certificate, beside the
// PLAINTEXT one; a client without a certificate is refused.
func TestSSLListenerClientCertificate(t *testing.T) {
	f := writeTLSFiles(t)
	b, addrs := startSecured(t, "", []listenerSpec{{"SSL", "SSL"}}, f.sslConfigs("SSL")...)

	tc := &tls.Config{RootCAs: f.ca.Pool(), Certificates: []tls.Certificate{f.client.TLS()}}
	cl := b.newClient(t, kgo.SeedBrokers(addrs["SSL"]), kgo.DialTLSConfig(tc), kgo.AllowAutoTopicCreation())
	produceConsume(t, cl, "over-ssl")

	plain := b.newClient(t, kgo.AllowAutoTopicCreation())
	produceConsume(t, plain, "over-plaintext")

	// Without a certificate nothing is served.
	bare, closeBare := b.tempClient(t, kgo.SeedBrokers(addrs["SSL"]), kgo.DialTLSConfig(&tls.Config{RootCAs: f.ca.Pool()}),
		kgo.RequestRetries(0), kgo.RetryTimeout(0))
	defer closeBare()
	ctx := adminCtx(t)
	if err := bare.Ping(ctx); err == nil {
		t.Error("a client without a certificate was served")
	} else {
		t.Logf("refused as expected: %v", err)
	}
}
