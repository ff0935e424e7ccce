package kcompatd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func TestParseJAAS(t *testing.T) {
	tests := []struct {
		text    string
		module  string
		options map[string]string
		err     string
	}{
		{`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
			plainLoginModule, map[string]string{"username": "admin", "password": "admin-secret", "user_admin": "admin-secret", "user_alice": "alice-secret"}, ""},
		{"  org.x.M  Optional\n a = b c=\"d e\" // comment\n /* block ; */ f='g;h' ;  ",
			"org.x.M", map[string]string{"a": "b", "c": "d e", "f": "g;h"}, ""},
		{`m required k="a\"b\\c";`, "m", map[string]string{"k": `a"b\c`}, ""},
		{`m required;`, "m", map[string]string{}, ""},
		{``, "", nil, "not terminated by semi-colon"},
		{`m required k="v"`, "", nil, "not terminated by semi-colon"},
		{`m maybe;`, "", nil, "invalid control flag"},
		{`m required k;`, "", nil, "has no value"},
		{`m required k=;`, "", nil, "has no value"},
		{`m required k="v;`, "", nil, "unterminated quoted value"},
		{`m required; n required;`, "", nil, "more than one login module"},
		{`"m" required;`, "", nil, "login module class name"},
		{`m required /* open`, "", nil, "unterminated comment"},
	}
	for _, tt := range tests {
		e, err := parseJAAS(tt.text)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.text, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.text, err)
			continue
		}
		if e.module != tt.module || !maps.Equal(e.options, tt.options) {
			t.Errorf("%q: %s %v", tt.text, e.module, e.options)
		}
	}
	e, _ := parseJAAS(tests[0].text)
	users, err := e.plainUsers()
	if err != nil || !maps.Equal(users, map[string]string{"admin": "admin-secret", "alice": "alice-secret"}) {
		t.Errorf("plain users %v %v", users, err)
	}
	e, _ = parseJAAS(`org.apache.kafka.common.security.scram.ScramLoginModule required;`)
	if _, err := e.plainUsers(); err == nil {
		t.Error("a ScramLoginModule gave PLAIN users")
	}
}

// FuzzParseJAAS checks that the JAAS parser never panics.
func FuzzParseJAAS(f *testing.F) {
	f.Add(`org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";`)
	f.Add(`m optional /* c */ k='v' // x` + "\n;")
	f.Fuzz(func(t *testing.T, s string) {
		e, err := parseJAAS(s)
		if err == nil && e.module == "" {
			t.Errorf("%q parsed without a module", s)
		}
	})
}

func TestParseScramUsers(t *testing.T) {
	us, err := parseScramUsers(`SCRAM-SHA-256=[name=alice,password=alice-secret], SCRAM-SHA-512=[name="bob",password="b,o]b\"",iterations=8192],SCRAM-SHA-256=[name=bob,password=x]`)
	if err != nil {
		t.Fatal(err)
	}
	if len(us) != 3 || us[0].name != "alice" || us[0].iterations != 4096 || us[1].password != `b,o]b"` || us[1].iterations != 8192 || us[1].mechanism.Name != "SCRAM-SHA-512" {
		t.Errorf("%+v", us)
	}
	for _, bad := range []string{
		"SCRAM-SHA-1=[name=a,password=b]", "SCRAM-SHA-256=[name=a]", "SCRAM-SHA-256=[name=a,password=b",
		"SCRAM-SHA-256=[name=a,password=b,iterations=100]", "SCRAM-SHA-256=[name=a,password=b,salt=x]",
		"SCRAM-SHA-256=[name=a,password=b]SCRAM-SHA-512=[name=a,password=b]", "SCRAM-SHA-256=[name=a,password=b],SCRAM-SHA-256=[name=a,password=c]",
		"alice",
	} {
		if _, err := parseScramUsers(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// saslClient pings the listener at addr with the mechanism.
func saslPing(t *testing.T, addr string, m sasl.Mechanism, opts ...kgo.Opt) error {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(m), kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	return err
}

// A server.properties with two SASL listeners: PLAIN users from the
// listener's JAAS config, SCRAM users from kcompatd.scram.users, which
// are still there (and not rewritten) after a restart.
func TestSASLListenersFromProperties(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SCRAMONLY://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SCRAMONLY:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":        "PLAIN,SCRAM-SHA-256",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
		"listener.name.scramonly.sasl.enabled.mechanisms":     "SCRAM-SHA-512",
		"kcompatd.scram.users":                                "SCRAM-SHA-256=[name=bob,password=bob-secret],SCRAM-SHA-512=[name=carol,password=carol-secret,iterations=8192]",
	}
	b := newTestBroker(t, dir, props)
	saslAddr, scramAddr := b.ListenerAddr("SASL_PLAINTEXT").String(), b.ListenerAddr("SCRAMONLY").String()
	if err := saslPing(t, saslAddr, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()); err != nil {
		t.Errorf("PLAIN: %v", err)
	}
	if err := saslPing(t, saslAddr, scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism()); err != nil {
		t.Errorf("SCRAM-SHA-256: %v", err)
	}
	if err := saslPing(t, saslAddr, plain.Auth{User: "alice", Pass: "nope"}.AsMechanism()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("wrong PLAIN password: %v", err)
	}
	// The override: only SCRAM-SHA-512 on SCRAMONLY.
	if err := saslPing(t, scramAddr, scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism()); err != nil {
		t.Errorf("SCRAM-SHA-512: %v", err)
	}
	if err := saslPing(t, scramAddr, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()); !errors.Is(err, kerr.UnsupportedSaslMechanism) {
		t.Errorf("PLAIN where it is not enabled: %v", err)
	}
	before, _ := b.store.ScramCredential("bob", 1)
	b.Close()

	b = newTestBroker(t, dir, props)
	after, _ := b.store.ScramCredential("bob", 1)
	if string(after.Salt) != string(before.Salt) {
		t.Error("a restart rewrote a configured SCRAM user whose password did not change")
	}
	if err := saslPing(t, b.ListenerAddr("SCRAMONLY").String(), scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism()); err != nil {
		t.Errorf("SCRAM-SHA-512 after restart: %v", err)
	}
}

func TestSASLConfigErrors(t *testing.T) {
	base := map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:0"}
	for _, tt := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{}, "mechanism GSSAPI is not supported"},
		{map[string]string{"sasl.enabled.mechanisms": "KERBEROS"}, "mechanism KERBEROS is not supported"},
		{map[string]string{"sasl.enabled.mechanisms": "OAUTHBEARER"}, "OAUTHBEARER needs its login module"},
		{map[string]string{"sasl.enabled.mechanisms": "OAUTHBEARER", "sasl.jaas.config": plainLoginModule + " required;"}, "OAUTHBEARER needs " + oauthBearerLoginModule},
		{map[string]string{"sasl.enabled.mechanisms": "OAUTHBEARER", "sasl.jaas.config": oauthBearerLoginModule + " required unsecuredValidatorAllowableClockSkewMs=-1;"}, "unsecuredValidatorAllowableClockSkewMs must be a non-negative int"},
		{map[string]string{"sasl.enabled.mechanisms": "OAUTHBEARER", "sasl.jaas.config": oauthBearerLoginModule + ` required unsecuredValidatorRequiredScope="a b\\c";`}, "invalid scope value"},
		{map[string]string{"sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": plainLoginModule + " required;", "listener.name.sasl_plaintext.plain.connections.max.reauth.ms": "x"}, "connections.max.reauth.ms"},
		{map[string]string{"sasl.enabled.mechanisms": "PLAIN"}, "PLAIN needs its users"},
		{map[string]string{"sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": "x required k=;"}, "has no value"},
		{map[string]string{"sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": "org.x.Scram required;"}, "PLAIN needs org.apache.kafka.common.security.plain.PlainLoginModule"},
		{map[string]string{"sasl.enabled.mechanisms": "SCRAM-SHA-256", "kcompatd.scram.users": "SCRAM-SHA-256=[name=a]"}, "needs a name and a password"},
	} {
		props := map[string]string{"log.dirs": t.TempDir()}
		maps.Copy(props, base)
		maps.Copy(props, tt.props)
		_, _, err := ParseConfig(props)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.props, err, tt.want)
		}
	}
	// sasl.jaas.config unprefixed is read too (Kafka's broker ignores it).
	props := map[string]string{"log.dirs": t.TempDir(), "sasl.enabled.mechanisms": "PLAIN",
		"sasl.jaas.config": plainLoginModule + ` required user_a="b";`}
	maps.Copy(props, base)
	if _, _, err := ParseConfig(props); err != nil {
		t.Errorf("unprefixed sasl.jaas.config: %v", err)
	}
}

// README's security example starts a broker as it is, but for its key
// store path and ports; --check-config hides its secrets.
func TestREADMESecurityExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "    listeners=PLAINTEXT://127.0.0.1:9092,SASL_SSL://")
	if start < 0 {
		t.Fatal("no security example in README.md")
	}
	end := strings.Index(text[start:], "\n\n`server.pem`")
	if end < 0 {
		t.Fatal("security example not followed by its note")
	}
	f := newTLSFixture(t)
	example := strings.NewReplacer("/etc/kcompatd/server.pem", f.serverPEM, ":9092", ":0", ":9093", ":0",
		"/tmp/kcompatd-secure", t.TempDir(), "\n    ", "\n").Replace(strings.TrimPrefix(text[start:start+end], "    "))
	props, err := ReadProperties(strings.NewReader(example))
	if err != nil {
		t.Fatal(err)
	}
	delete(props, "advertised.listeners") // ports 0: advertise the bound ones
	cfg, warnings, err := ParseConfig(props)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("%v %v", err, warnings)
	}
	for _, kv := range cfg.Properties() {
		if strings.Contains(kv[1], "secret") {
			t.Errorf("--check-config shows %s=%s", kv[0], kv[1])
		}
	}
	b, err := New(cfg, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tc := &tls.Config{RootCAs: f.ca.Pool()}
	if err := saslPing(t, b.ListenerAddr("SASL_SSL").String(), scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(), kgo.DialTLSConfig(tc)); err != nil {
		t.Errorf("SCRAM-SHA-512 over SASL_SSL: %v", err)
	}
	if err := saslPing(t, b.ListenerAddr("SASL_SSL").String(), plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism(), kgo.DialTLSConfig(tc)); err != nil {
		t.Errorf("PLAIN over SASL_SSL: %v", err)
	}
}

// OAUTHBEARER's validator options come from the listener's
// OAuthBearerLoginModule entry, and connections.max.reauth.ms per
// listener and mechanism, as Kafka's SaslChannelBuilder reads it.
func TestOAuthBearerAndReauthConfig(t *testing.T) {
	props := map[string]string{
		"log.dirs":                                              "/tmp/unused",
		"listeners":                                             "A://127.0.0.1:0,B://127.0.0.1:0",
		"listener.security.protocol.map":                        "A:SASL_PLAINTEXT,B:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":                               "PLAIN,OAUTHBEARER",
		"listener.name.a.plain.sasl.jaas.config":                plainLoginModule + ` required user_alice="alice-secret";`,
		"listener.name.b.plain.sasl.jaas.config":                plainLoginModule + ` required user_alice="alice-secret";`,
		"listener.name.a.oauthbearer.sasl.jaas.config":          oauthBearerLoginModule + ` required unsecuredLoginStringClaim_sub="admin" unsecuredValidatorPrincipalClaimName=user unsecuredValidatorScopeClaimName=perms unsecuredValidatorRequiredScope="read  write" unsecuredValidatorAllowableClockSkewMs=" 1500 ";`,
		"sasl.jaas.config":                                      oauthBearerLoginModule + ` required;`,
		"connections.max.reauth.ms":                             "60000",
		"listener.name.a.connections.max.reauth.ms":             "30000",
		"listener.name.a.oauthbearer.connections.max.reauth.ms": "10000",
	}
	cfg, _, err := ParseConfig(props)
	if err != nil {
		t.Fatal(err)
	}
	plan, cerr := cfg.resolveListeners()
	if cerr != nil {
		t.Fatal(cerr)
	}
	ls, errs := cfg.buildListeners(plan)
	if len(errs) > 0 || len(ls) != 2 {
		t.Fatalf("%v %v", ls, errs)
	}
	a, b := ls[0].SASL, ls[1].SASL
	if ob := a.OAuthBearer; ob.PrincipalClaim != "user" || ob.ScopeClaim != "perms" || strings.Join(ob.RequiredScope, ",") != "read,write" || ob.AllowableClockSkew != 1500*time.Millisecond {
		t.Errorf("A's validator %+v", ob)
	}
	if ob := b.OAuthBearer; ob.PrincipalClaim != "" || len(ob.RequiredScope) != 0 || ob.AllowableClockSkew != 0 {
		t.Errorf("B's validator %+v", ob)
	}
	want := map[string]time.Duration{"PLAIN": 30 * time.Second, "OAUTHBEARER": 10 * time.Second}
	if !maps.Equal(a.MaxReauth, want) {
		t.Errorf("A's connections.max.reauth.ms %v, want %v", a.MaxReauth, want)
	}
	want = map[string]time.Duration{"PLAIN": time.Minute, "OAUTHBEARER": time.Minute}
	if !maps.Equal(b.MaxReauth, want) {
		t.Errorf("B's connections.max.reauth.ms %v, want %v", b.MaxReauth, want)
	}
}

// listener.name.* overrides are listed by DescribeConfigs of the broker
// as Kafka 4.3.1 lists them: STATIC_BROKER_CONFIG, of the overridden
// property's type (a JAAS config sensitive, its value hidden), read-only,
// undocumented, the overridden property its synonym after itself.
func TestListenerOverridesDescribed(t *testing.T) {
	b := newTestBroker(t, "", map[string]string{
		"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms":         "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config":          plainLoginModule + ` required user_alice="alice-secret";`,
		"listener.name.sasl_plaintext.plain.connections.max.reauth.ms": "4000",
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.ListenerAddr("PLAINTEXT").String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range resp.Resources[0].Configs {
		if !strings.HasPrefix(c.Name, "listener.name.") {
			continue
		}
		line := fmt.Sprintf("%v src=%d sens=%v ro=%v type=%d doc=%v", strp(c.Value), c.Source, c.IsSensitive, c.ReadOnly, c.ConfigType, c.Documentation != nil)
		for _, sy := range c.ConfigSynonyms {
			line += fmt.Sprintf(" | %s=%s src=%d", sy.Name, strp(sy.Value), sy.Source)
		}
		got[c.Name] = line
	}
	// What Kafka 4.3.1 answers for the same three.
	want := map[string]string{
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms":         "PLAIN src=4 sens=false ro=true type=7 doc=false | listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN src=4 | sasl.enabled.mechanisms=GSSAPI src=5",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config":          "<nil> src=4 sens=true ro=true type=9 doc=false | listener.name.sasl_plaintext.plain.sasl.jaas.config=<nil> src=4",
		"listener.name.sasl_plaintext.plain.connections.max.reauth.ms": "4000 src=4 sens=false ro=true type=5 doc=false | listener.name.sasl_plaintext.plain.connections.max.reauth.ms=4000 src=4 | connections.max.reauth.ms=0 src=5",
	}
	if !maps.Equal(got, want) {
		t.Errorf("got\n%v\nwant\n%v", got, want)
	}
}

func strp(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}
