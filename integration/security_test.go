package integration

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

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

// plainJAAS is a PlainLoginModule JAAS config with the users given.
func plainJAAS(users map[string]string) string {
	var b strings.Builder
	b.WriteString(`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret"`)
	for u, p := range users {
		b.WriteString(` user_` + u + `="` + p + `"`)
	}
	b.WriteString(";")
	return b.String()
}

// kgo with PLAIN over SASL_PLAINTEXT and with SCRAM-SHA-256 and
// SCRAM-SHA-512 over SASL_SSL, the SCRAM users created with kadm's
// AlterUserSCRAMs; wrong passwords refused with SASL_AUTHENTICATION_FAILED
// alike for known and unknown users; the SCRAM users still there after a
// restart.
func TestSASLListeners(t *testing.T) {
	f := writeTLSFiles(t)
	configs := append(f.sslConfigs("SASL_SSL"),
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config="+plainJAAS(map[string]string{"alice": "alice-secret"}),
		"listener.name.sasl_ssl.ssl.client.auth=none",
		"listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
	)
	b, addrs := startSecured(t, "", []listenerSpec{{"SASL_PLAINTEXT", "SASL_PLAINTEXT"}, {"SASL_SSL", "SASL_SSL"}}, configs...)
	ctx := adminCtx(t)

	adm, _ := adminClient(t, b)
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "bob-secret-512"},
	})
	if err == nil {
		err = res.Error()
	}
	if err == nil || !strings.Contains(err.Error(), "DUPLICATE_RESOURCE") {
		t.Fatalf("two changes of one user in a request: %v, want DUPLICATE_RESOURCE", err)
	}
	for _, u := range []kadm.UpsertSCRAM{
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
		{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "carol-secret"},
	} {
		res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{u})
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			t.Fatalf("AlterUserSCRAMs %s: %v", u.User, err)
		}
	}

	tlsCfg := &tls.Config{RootCAs: f.ca.Pool()}
	run := func(b *broker) {
		plainCl := b.newClient(t, kgo.SeedBrokers(addrs["SASL_PLAINTEXT"]), kgo.AllowAutoTopicCreation(),
			kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
		produceConsume(t, plainCl, "sasl-plain-"+strconv.Itoa(b.PID()))
		s256 := b.newClient(t, kgo.SeedBrokers(addrs["SASL_SSL"]), kgo.DialTLSConfig(tlsCfg), kgo.AllowAutoTopicCreation(),
			kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism()))
		produceConsume(t, s256, "sasl-256-"+strconv.Itoa(b.PID()))
		s512 := b.newClient(t, kgo.SeedBrokers(addrs["SASL_SSL"]), kgo.DialTLSConfig(tlsCfg), kgo.AllowAutoTopicCreation(),
			kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism()))
		produceConsume(t, s512, "sasl-512-"+strconv.Itoa(b.PID()))
	}
	run(b)

	refused := func(addr string, m sasl.Mechanism, opts ...kgo.Opt) string {
		cl, closeCl := b.tempClient(t, append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(m), kgo.RequestRetries(0)}, opts...)...)
		defer closeCl()
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED", m.Name(), err)
			return ""
		}
		return err.Error()
	}
	known := refused(addrs["SASL_SSL"], scram.Auth{User: "bob", Pass: "wrong"}.AsSha256Mechanism(), kgo.DialTLSConfig(tlsCfg))
	unknown := refused(addrs["SASL_SSL"], scram.Auth{User: "nobody", Pass: "wrong"}.AsSha256Mechanism(), kgo.DialTLSConfig(tlsCfg))
	if known != unknown {
		t.Errorf("a wrong password and an unknown user are told apart:\n%s\n%s", known, unknown)
	}
	if msg := refused(addrs["SASL_PLAINTEXT"], plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism()); !strings.Contains(msg, "Invalid username or password") {
		t.Errorf("PLAIN message %q", msg)
	}

	b = b.restart(t)
	run(b)
	described, err := kadm.NewClient(b.newClient(t)).DescribeUserSCRAMs(ctx)
	if err != nil || len(described) != 2 || described["carol"].CredInfos[0].Iterations != 8192 {
		t.Errorf("after restart: %+v %v", described, err)
	}
}

// disconnects counts the connections to the broker that ended (kgo's
// HookBrokerDisconnect).
type disconnects struct{ n atomic.Int32 }

func (d *disconnects) OnBrokerDisconnect(kgo.BrokerMetadata, net.Conn) { d.n.Add(1) }

// OAUTHBEARER with Kafka's unsecured validator, and re-authentication
// (KIP-368) over the binary: a PLAIN client whose session lasts
// connections.max.reauth.ms (2 s) keeps producing past several lifetimes
// on the connections it has, re-authenticating on them (kgo does so a
// second before the end); an unsecured token logs in, an expired one is
// refused with invalid_token, one without the required scope with
// insufficient_scope.
func TestSASLOAuthBearerAndReauthentication(t *testing.T) {
	b, addrs := startSecured(t, "", []listenerSpec{{"SASL_PLAINTEXT", "SASL_PLAINTEXT"}},
		"sasl.enabled.mechanisms=PLAIN,OAUTHBEARER",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config="+plainJAAS(map[string]string{"alice": "alice-secret"}),
		`listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin" unsecuredValidatorRequiredScope="produce";`,
		"listener.name.sasl_plaintext.plain.connections.max.reauth.ms=2000",
	)
	ctx := adminCtx(t)
	addr := addrs["SASL_PLAINTEXT"]

	token := func(claims string) string {
		enc := base64.RawURLEncoding.EncodeToString
		return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + "."
	}
	ping := func(tok string) error {
		cl, closeCl := b.tempClient(t, kgo.SeedBrokers(addr), kgo.SASL(oauth.Auth{Token: tok}.AsMechanism()), kgo.RequestRetries(0))
		defer closeCl()
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err
	}
	hour := time.Now().Add(time.Hour).Unix()
	if err := ping(token(fmt.Sprintf(`{"sub":"bob","exp":%d,"scope":["produce"]}`, hour))); err != nil {
		t.Errorf("OAUTHBEARER: %v", err)
	}
	for _, tt := range []struct{ claims, want string }{
		{fmt.Sprintf(`{"sub":"bob","exp":%d,"scope":"produce"}`, time.Now().Add(-time.Minute).Unix()), `{"status":"invalid_token"}`},
		{fmt.Sprintf(`{"sub":"bob","exp":%d}`, hour), `{"status":"insufficient_scope", "scope":"[produce]"}`},
	} {
		if err := ping(token(tt.claims)); !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED %s", tt.claims, err, tt.want)
		}
	}

	var d disconnects
	cl := b.newClient(t, kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("reauth"),
		kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()), kgo.WithHooks(&d))
	for i := range 25 { // about 5 s: beyond two session lifetimes
		if err := cl.ProduceSync(ctx, kgo.StringRecord(strconv.Itoa(i))).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		time.Sleep(200 * time.Millisecond) // real time, for the sessions to run out
	}
	if n := d.n.Load(); n != 0 {
		t.Errorf("%d connections ended while re-authentication should have kept them", n)
	}
}
