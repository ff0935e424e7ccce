package protocol

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kcompatd/kcompatd/partition"
)

func init() {
	versionChecks[saslHandshakeKey] = checkSaslHandshakeVersion
	versionChecks[saslAuthenticateKey] = checkSaslAuthenticateVersion
	versionChecks[50] = checkDescribeUserScramVersion
	versionChecks[51] = checkAlterUserScramVersion
}

// On a PLAINTEXT listener both SASL APIs answer ILLEGAL_SASL_STATE.
func checkSaslHandshakeVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.SetVersion(v)
	req.Mechanism = "PLAIN"
	if resp := w.roundTrip(req).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Errorf("error %d", resp.ErrorCode)
	}
}

func checkSaslAuthenticateVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SetVersion(v)
	resp := w.roundTrip(req).(*kmsg.SASLAuthenticateResponse)
	if resp.ErrorCode != kerr.IllegalSaslState.Code || resp.ErrorMessage == nil {
		t.Errorf("error %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
}

func checkDescribeUserScramVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	req.SetVersion(v)
	req.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{{Name: "nobody"}}
	resp := w.roundTrip(req).(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if len(resp.Results) != 1 || resp.Results[0].ErrorCode != kerr.ResourceNotFound.Code {
		t.Errorf("results %+v", resp.Results)
	}
}

func checkAlterUserScramVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.SetVersion(v)
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "nobody", Mechanism: 1}}
	resp := w.roundTrip(req).(*kmsg.AlterUserSCRAMCredentialsResponse)
	if len(resp.Results) != 1 || resp.Results[0].ErrorCode != kerr.ResourceNotFound.Code {
		t.Errorf("results %+v", resp.Results)
	}
}

// RFC 7677's example exchange, byte for byte.
func TestScramRFC7677Vector(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	m := ScramSHA256
	cred := m.Credential("user", salt, m.SaltedPassword("pencil", salt, 4096), 4096)
	srv := &scramServer{
		mech:   m,
		lookup: func(u string) (partition.ScramCredential, bool) { return cred, u == "user" },
		fake:   fakeScramCredential([]byte("secret"), m),
		nonce:  func() string { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0" },
	}
	out, done, err := srv.Next([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
	if err != nil || done {
		t.Fatal(err, done)
	}
	if want := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"; string(out) != want {
		t.Fatalf("server-first %q, want %q", out, want)
	}
	out, done, err = srv.Next([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if err != nil || !done {
		t.Fatal(err, done)
	}
	if want := "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="; string(out) != want {
		t.Fatalf("server-final %q, want %q", out, want)
	}
	if srv.User() != "user" {
		t.Errorf("user %q", srv.User())
	}

	// A wrong proof, and the same exchange for an unknown user, fail
	// alike; the unknown user still gets a server-first, with a salt
	// that stays the same.
	for _, user := range []string{"user", "stranger"} {
		srv.step = 0
		first, _, err := srv.Next([]byte("n,,n=" + user + ",r=abc"))
		if err != nil {
			t.Fatalf("%s: client-first refused: %v", user, err)
		}
		nonce := strings.TrimPrefix(strings.Split(string(first), ",")[0], "r=")
		_, _, err = srv.Next([]byte("c=biws,r=" + nonce + ",p=" + base64.StdEncoding.EncodeToString(make([]byte, 32))))
		if !errors.Is(err, errScram) {
			t.Errorf("%s: bad proof: %v", user, err)
		}
	}
	a := fakeScramCredential([]byte("k"), m)("x")
	if b := fakeScramCredential([]byte("k"), m)("x"); string(a.Salt) != string(b.Salt) {
		t.Error("an unknown user's salt changes between attempts")
	}
}

// Malformed SCRAM messages fail the exchange.
func TestScramMalformed(t *testing.T) {
	srv := func() *scramServer {
		return &scramServer{mech: ScramSHA512, lookup: func(string) (partition.ScramCredential, bool) { return partition.ScramCredential{}, false },
			fake: fakeScramCredential([]byte("s"), ScramSHA512), nonce: scramNonce}
	}
	for _, first := range []string{"", "y,,n=u,r=x", "p=tls-unique,,n=u,r=x", "n,,r=x", "n,,n=,r=x", "n,,n=a=2Xb,r=x", "n,a=other,n=u,r=x",
		"n,,n=u,r=x,tokenauth=true", "n,,n=u,r=a b", "n,x,n=u,r=x"} {
		if _, _, err := srv().Next([]byte(first)); err == nil {
			t.Errorf("client-first %q accepted", first)
		}
	}
	s := srv()
	if _, _, err := s.Next([]byte("n,a=u=2C1,n=u=2C1,r=x")); err != nil || s.user != "u,1" {
		t.Errorf("escaped user: %q %v", s.user, err)
	}
	for _, final := range []string{"", "c=biws", "c=eSws,r=x,p=AA==", "r=x,c=biws,p=AA=="} {
		s := srv()
		s.Next([]byte("n,,n=u,r=x"))
		if _, _, err := s.Next([]byte(final)); err == nil {
			t.Errorf("client-final %q accepted", final)
		}
	}
}

// startSASL serves a SASL_PLAINTEXT listener over tb's server.
func startSASL(t *testing.T, tb *testBroker, mechanisms ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &Listener{Name: "SASL_PLAINTEXT", Protocol: SASLPlaintext, AdvertisedHost: "127.0.0.1", AdvertisedPort: int32(ln.Addr().(*net.TCPAddr).Port),
		SASL: &SASLConfig{Mechanisms: mechanisms, PlainUsers: map[string]string{"alice": "alice-secret", "admin": "admin-secret"}}}
	go tb.s.ServeListener(ln, l)
	return ln.Addr().String()
}

func noAuthDelay(c *Config) { c.FailedAuthenticationDelay = -1 }

// kgo authenticates with PLAIN (users from the listener's JAAS users) and
// with SCRAM-SHA-256/512 after creating the user with kadm over the
// PLAINTEXT listener; wrong passwords and unknown users are refused with
// Kafka's messages.
func TestSASLWithKgo(t *testing.T) {
	tb := startBroker(t, noAuthDelay)
	addr := startSASL(t, tb, "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	admin, err := kgo.NewClient(kgo.SeedBrokers(tb.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-256"},
		{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "carol-512"},
	})
	if err != nil || res.Error() != nil {
		t.Fatalf("AlterUserSCRAMs: %v %v", err, res.Error())
	}
	described, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil || len(described) != 2 || described["carol"].CredInfos[0].Iterations != 8192 {
		t.Fatalf("DescribeUserSCRAMs: %+v %v", described, err)
	}

	try := func(m sasl.Mechanism) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(m), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err
	}
	for name, m := range map[string]sasl.Mechanism{
		"PLAIN":         plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(),
		"SCRAM-SHA-256": scram.Auth{User: "bob", Pass: "bob-256"}.AsSha256Mechanism(),
		"SCRAM-SHA-512": scram.Auth{User: "carol", Pass: "carol-512"}.AsSha512Mechanism(),
	} {
		if err := try(m); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A client of Kafka 0.11 (no SaslAuthenticate) uses a v0 handshake and
	// raw tokens.
	for name, m := range map[string]sasl.Mechanism{
		"PLAIN":         plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(),
		"SCRAM-SHA-256": scram.Auth{User: "bob", Pass: "bob-256"}.AsSha256Mechanism(),
	} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(m), kgo.RequestRetries(0), kgo.MaxVersions(kversion.V0_11_0()))
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.Ping(ctx); err != nil {
			t.Errorf("%s with raw tokens: %v", name, err)
		}
		cl.Close()
	}

	// Past authentication, frames may exceed sasl.server.max.receive.size.
	big, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(scram.Auth{User: "bob", Pass: "bob-256"}.AsSha256Mechanism()),
		kgo.DefaultProduceTopic("big"), kgo.AllowAutoTopicCreation(), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordDeliveryTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	if err := big.ProduceSync(ctx, &kgo.Record{Value: make([]byte, DefaultSASLMaxReceiveBytes+1000)}).FirstErr(); err != nil {
		t.Errorf("a large produce after SCRAM: %v", err)
	}

	for _, tt := range []struct {
		m    sasl.Mechanism
		want string
	}{
		{plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism(), plainFailedMessage},
		{plain.Auth{User: "nobody", Pass: "wrong"}.AsMechanism(), plainFailedMessage},
		{scram.Auth{User: "bob", Pass: "wrong"}.AsSha256Mechanism(), invalidCredentialsMessage("SCRAM-SHA-256")},
		{scram.Auth{User: "nobody", Pass: "wrong"}.AsSha256Mechanism(), invalidCredentialsMessage("SCRAM-SHA-256")},
		{scram.Auth{User: "bob", Pass: "bob-256"}.AsSha512Mechanism(), invalidCredentialsMessage("SCRAM-SHA-512")},
	} {
		err := try(tt.m)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want SASL_AUTHENTICATION_FAILED %q", tt.m.Name(), err, tt.want)
		}
	}
}

// Before authentication only ApiVersions and SaslHandshake are served; a
// mechanism not enabled is answered UNSUPPORTED_SASL_MECHANISM and closed.
func TestSASLBeforeAuthentication(t *testing.T) {
	tb := startBroker(t, noAuthDelay)
	addr := startSASL(t, tb, "SCRAM-SHA-512")

	w := dialWire(t, addr)
	w.roundTrip(apiVersionsReq(3))
	w.send(kmsg.NewPtrMetadataRequest())
	w.expectClosed()

	w = dialWire(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	resp := w.roundTrip(hs).(*kmsg.SASLHandshakeResponse)
	if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(resp.SupportedMechanisms) != 1 || resp.SupportedMechanisms[0] != "SCRAM-SHA-512" {
		t.Errorf("handshake %+v", resp)
	}
	w.expectClosed()

	// After a v1 handshake, anything but SaslAuthenticate closes.
	w = dialWire(t, addr)
	hs.Mechanism = "SCRAM-SHA-512"
	if resp := w.roundTrip(hs).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
		t.Fatalf("handshake %+v", resp)
	}
	w.send(apiVersionsReq(3))
	w.expectClosed()

	// A frame above sasl.server.max.receive.size closes.
	w = dialWire(t, addr)
	w.writeRaw(binary.BigEndian.AppendUint32(nil, DefaultSASLMaxReceiveBytes+1))
	w.expectClosed()
}

// A v0 SaslHandshake moves the exchange to raw size-prefixed tokens:
// PLAIN's one token gets an empty one back, then the connection is
// served; a bad password closes it without an answer.
func TestSASLRawTokensV0(t *testing.T) {
	tb := startBroker(t, noAuthDelay)
	addr := startSASL(t, tb, "PLAIN")
	handshake := func(w *wire) {
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.SetVersion(0)
		hs.Mechanism = "PLAIN"
		if resp := w.roundTrip(hs).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
			t.Fatalf("handshake %+v", resp)
		}
	}
	token := func(s string) []byte { return append(binary.BigEndian.AppendUint32(nil, uint32(len(s))), s...) }

	w := dialWire(t, addr)
	handshake(w)
	w.writeRaw(token("\x00alice\x00alice-secret"))
	w.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var empty [4]byte
	if _, err := io.ReadFull(w.br, empty[:]); err != nil || empty != [4]byte{} {
		t.Fatalf("PLAIN's raw answer: %x, %v; want an empty token", empty, err)
	}
	w.roundTrip(kmsg.NewPtrMetadataRequest())
	if got := principals(tb.s); !containsString(got, "User:alice") {
		t.Errorf("principals %q", got)
	}

	w = dialWire(t, addr)
	handshake(w)
	w.writeRaw(token("\x00alice\x00wrong"))
	w.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := io.ReadFull(w.br, make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("a failed raw token was answered (%d, %v)", n, err)
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// AlterUserScramCredentials and DescribeUserScramCredentials answer as
// Kafka's controller and ScramImage do.
func TestUserScramCredentialsSemantics(t *testing.T) {
	tb := startBroker(t, nil)
	w := dialWire(t, tb.addr)
	alter := func(dels []kmsg.AlterUserSCRAMCredentialsRequestDeletion, ups []kmsg.AlterUserSCRAMCredentialsRequestUpsertion) map[string]string {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		req.Deletions, req.Upsertions = dels, ups
		out := map[string]string{}
		for _, r := range w.roundTrip(req).(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
			msg := ""
			if r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			out[r.User] = "ok"
			if r.ErrorCode != 0 {
				out[r.User] = kerr.ErrorForCode(r.ErrorCode).(*kerr.Error).Message + ": " + msg
			}
		}
		return out
	}
	up := func(name string, mech int8, iters int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		return kmsg.AlterUserSCRAMCredentialsRequestUpsertion{Name: name, Mechanism: mech, Iterations: iters, Salt: []byte("salt"), SaltedPassword: make([]byte, 32)}
	}
	del := func(name string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
		return kmsg.AlterUserSCRAMCredentialsRequestDeletion{Name: name, Mechanism: mech}
	}
	got := alter([]kmsg.AlterUserSCRAMCredentialsRequestDeletion{del("ghost", 1), del("twice", 1)},
		[]kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up("a", 1, 4096), up("b", 2, 16384), up("", 1, 4096), up("c", 3, 4096),
			up("few", 1, 4095), up("many", 1, 16385), up("twice", 1, 4096)})
	want := map[string]string{
		"a": "ok", "b": "ok",
		"ghost": "RESOURCE_NOT_FOUND: Attempt to delete a user credential that does not exist",
		"":      "UNACCEPTABLE_CREDENTIAL: Username must not be empty",
		"c":     "UNSUPPORTED_SASL_MECHANISM: Unknown SCRAM mechanism",
		"few":   "UNACCEPTABLE_CREDENTIAL: Too few iterations",
		"many":  "UNACCEPTABLE_CREDENTIAL: Too many iterations",
		"twice": "RESOURCE_NOT_FOUND: Attempt to delete a user credential that does not exist",
	}
	for u, w := range want {
		if !strings.HasPrefix(got[u], w) {
			t.Errorf("%q: %q, want %q", u, got[u], w)
		}
	}
	// A user named twice: neither change applies.
	got = alter([]kmsg.AlterUserSCRAMCredentialsRequestDeletion{del("a", 1)}, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up("a", 2, 4096)})
	if !strings.HasPrefix(got["a"], "DUPLICATE_RESOURCE: A user credential cannot be altered twice in the same request") {
		t.Errorf("twice: %q", got["a"])
	}

	describe := func(users ...string) []kmsg.DescribeUserSCRAMCredentialsResponseResult {
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		for _, u := range users {
			req.Users = append(req.Users, kmsg.DescribeUserSCRAMCredentialsRequestUser{Name: u})
		}
		return w.roundTrip(req).(*kmsg.DescribeUserSCRAMCredentialsResponse).Results
	}
	all := describe()
	if len(all) != 2 || all[0].User != "a" || all[1].User != "b" || all[1].CredentialInfos[0].Mechanism != 2 || all[1].CredentialInfos[0].Iterations != 16384 {
		t.Errorf("describe all: %+v", all)
	}
	some := describe("b", "x", "b")
	if len(some) != 2 || some[0].ErrorCode != kerr.DuplicateResource.Code ||
		*some[0].ErrorMessage != "Cannot describe SCRAM credentials for the same user twice in a single request: b" ||
		some[1].ErrorCode != kerr.ResourceNotFound.Code || *some[1].ErrorMessage != "Attempt to describe a user credential that does not exist: x" {
		t.Errorf("describe b x b: %+v", some)
	}
	// Deleting works and is durable in the store.
	if got := alter([]kmsg.AlterUserSCRAMCredentialsRequestDeletion{del("a", 1)}, nil); got["a"] != "ok" {
		t.Errorf("delete a: %q", got["a"])
	}
	if _, ok := tb.store.ScramCredential("a", 1); ok {
		t.Error("a still stored")
	}
}

// FuzzSASLServers feeds arbitrary client messages to PLAIN and to both
// steps of SCRAM: never a panic, and never an authentication with
// made-up bytes.
func FuzzSASLServers(f *testing.F) {
	f.Add([]byte("\x00alice\x00alice-secret"), []byte("n,,n=u,r=x"), []byte("c=biws,r=x,p=AA=="))
	f.Add([]byte("a\x00b"), []byte("n,a=u,n=u,r=x,ext=1"), []byte(""))
	f.Fuzz(func(t *testing.T, plainMsg, first, final []byte) {
		p := &plainServer{users: map[string]string{"alice": "alice-secret"}, dummy: []byte("d")}
		if _, done, err := p.Next(plainMsg); done && (err != nil || p.User() != "alice") {
			t.Errorf("PLAIN %q authenticated %q", plainMsg, p.User())
		}
		s := &scramServer{mech: ScramSHA256, lookup: func(string) (partition.ScramCredential, bool) { return partition.ScramCredential{}, false },
			fake: fakeScramCredential([]byte("s"), ScramSHA256), nonce: scramNonce}
		if _, _, err := s.Next(first); err != nil {
			return
		}
		if _, done, _ := s.Next(final); done {
			t.Errorf("SCRAM authenticated an unknown user with %q %q", first, final)
		}
	})
}

// PLAIN tokens as Kafka's PlainSaslServer reads them, and the message the
// client is told.
func TestPlainServer(t *testing.T) {
	generic := invalidCredentialsMessage("PLAIN")
	for _, tt := range []struct {
		token, user, msg string
	}{
		{"\x00alice\x00alice-secret", "alice", ""},
		{"alice\x00alice\x00alice-secret", "alice", ""},
		{"\x00alice\x00alice-secret\x00ignored", "alice", ""}, // Kafka cuts the password at a third NUL
		{"", "", generic},
		{"alice", "", generic},
		{"\x00alice", "", generic},
		{"\x00alice\x00", "", generic},
		{"\x00\x00pw", "", generic},
		{"\x00alice\x00wrong", "", plainFailedMessage},
		{"\x00nobody\x00alice-secret", "", plainFailedMessage},
		{"bob\x00alice\x00alice-secret", "", "Authentication failed: Client requested an authorization id that is different from username"},
	} {
		p := &plainServer{users: map[string]string{"alice": "alice-secret"}, dummy: []byte("dummy")}
		out, done, err := p.Next([]byte(tt.token))
		if tt.msg == "" {
			if err != nil || !done || p.User() != tt.user || out == nil || len(out) != 0 {
				t.Errorf("%q: %q %v %v %q", tt.token, out, done, err, p.User())
			}
			continue
		}
		msg := generic
		var af *authFailure
		if errors.As(err, &af) {
			msg = af.msg
		}
		if err == nil || msg != tt.msg {
			t.Errorf("%q: %v, told %q, want %q", tt.token, err, msg, tt.msg)
		}
	}
}
