package protocol

import (
	"bufio"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/asn1"
	"net"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/internal/testcerts"
)

// Subjects in the RFC 2253 form Java's X500Principal.getName() gives.
func TestDistinguishedName(t *testing.T) {
	oidEmail := asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	oidDC := asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
	tests := []struct {
		name pkix.Name
		want string
	}{
		{pkix.Name{CommonName: "alice"}, "CN=alice"},
		{pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"Acme"}, Country: []string{"US"}},
			"CN=alice,OU=eng,O=Acme,C=US"},
		{pkix.Name{CommonName: "Tkac, Adam", Locality: []string{"Praha"}}, `CN=Tkac\, Adam,L=Praha`},
		{pkix.Name{CommonName: "#lead", Province: []string{"a+b;c<d>\"e\\"}}, `CN=\#lead,ST=a\+b\;c\<d\>\"e\\`},
		{pkix.Name{CommonName: " pad "}, `CN=\ pad\ `},
		// Types without a keyword in Java's RFC 2253 form: OID=#hex.
		{pkix.Name{CommonName: "x", ExtraNames: []pkix.AttributeTypeAndValue{{Type: oidEmail, Value: "a@b"}}},
			"1.2.840.113549.1.9.1=#0c03614062,CN=x"},
		{pkix.Name{ExtraNames: []pkix.AttributeTypeAndValue{{Type: oidDC, Value: "example"}, {Type: oidDC, Value: "com"}}},
			"DC=com,DC=example"},
		{pkix.Name{CommonName: "x", SerialNumber: "42"}, "2.5.4.5=#13023432,CN=x"},
	}
	for _, tt := range tests {
		raw, err := asn1.Marshal(tt.name.ToRDNSequence())
		if err != nil {
			t.Fatal(err)
		}
		got, err := DistinguishedName(raw)
		if err != nil {
			t.Errorf("%v: %v", tt.name, err)
			continue
		}
		if got != tt.want {
			t.Errorf("DN of %v = %q, want %q", tt.name, got, tt.want)
		}
	}
	// A multi-valued RDN joins its attributes with "+".
	multi := pkix.RDNSequence{{{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: "a"}, {Type: asn1.ObjectIdentifier{2, 5, 4, 11}, Value: "b"}}}
	raw, _ := asn1.Marshal(multi)
	if got, err := DistinguishedName(raw); err != nil || got != "CN=a+OU=b" {
		t.Errorf("multi-valued RDN: %q, %v", got, err)
	}
	if _, err := DistinguishedName([]byte{0x30, 0x03, 0x31}); err == nil {
		t.Error("a truncated subject parsed")
	}
}

// Kafka's SslPrincipalMapper rules: which lists parse, and what they map
// names to.
func TestPrincipalMappingRules(t *testing.T) {
	valid := []string{
		"", "DEFAULT", " , ,DEFAULT,, ",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
		"RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
		"RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
		"RULE://", "RULE:/.*/", "  RULE:   /     / ,  DEFAULT  ",
		`RULE:\/\\\(\)\n\t/\/\//`,
	}
	for _, s := range valid {
		if _, err := ParsePrincipalMappingRules(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	invalid := []string{
		"default", "DEFAUL", "DEFAULT/L", "DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
		"RULE:(/x/", // not a regular expression
	}
	for _, s := range invalid {
		if _, err := ParsePrincipalMappingRules(s); err == nil {
			t.Errorf("%q parsed", s)
		}
	}

	m, err := ParsePrincipalMappingRules(strings.Join([]string{
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
		"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
		"DEFAULT",
	}, ", "))
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=Duke,OU=ServiceUsers,O=Org,C=US":        "duke",
		"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US": "duke@sme",
		"cn=duke,ou=sme,dc=mycp,dc=com":             "DUKE@SME",
		"cN=duke,OU=JavaSoft,O=Sun Microsystems":    "DUKE",
		"OU=JavaSoft,O=Sun Microsystems,C=US":       "OU=JavaSoft,O=Sun Microsystems,C=US",
	} {
		if got, err := m.Map(dn); err != nil || got != want {
			t.Errorf("Map(%q) = %q, %v; want %q", dn, got, err, want)
		}
	}
	// An escaped comma inside a pattern; $n past the groups stays literal.
	m, _ = ParsePrincipalMappingRules(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	if got, _ := m.Map(`CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`); got != `Tkac\, Adam` {
		t.Errorf("escaped comma: %q", got)
	}
	m, _ = ParsePrincipalMappingRules(`RULE:^CN=(\w+)$/$1-$2-$12\/x/`)
	if got, _ := m.Map("CN=bob"); got != "bob-$2-bob2/x" {
		t.Errorf("back references: %q", got)
	}
	// No rule applies: the authentication fails.
	m, _ = ParsePrincipalMappingRules(`RULE:^CN=(\w+)$/$1/`)
	if _, err := m.Map("OU=x"); err == nil {
		t.Error("a DN no rule applies to was mapped")
	}
}

// dialTLSWire opens a wire to addr over TLS.
func dialTLSWire(t testing.TB, addr string, cfg *tls.Config) (*wire, error) {
	t.Helper()
	nc, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { nc.Close() })
	return &wire{t: t, nc: nc, br: bufio.NewReader(nc)}, nil
}

// serveTLS serves l over a new 127.0.0.1 listener of tb's server and
// returns its address.
func serveTLS(t testing.TB, tb *testBroker, l *Listener) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go tb.s.ServeListener(ln, l)
	return ln.Addr().String()
}

// principals lists the principals of the server's connections.
func principals(s *Server) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for c := range s.conns {
		out = append(out, c.Principal())
	}
	return out
}

// A TLS connection with a verified client certificate runs as the mapped
// principal; one without a certificate (ssl.client.auth=requested) as
// User:ANONYMOUS; with required, one without is refused.
func TestTLSListenerPrincipal(t *testing.T) {
	ca := testcerts.NewCA("test CA")
	server := ca.Server()
	client := ca.Client(pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}})
	mapper, err := ParsePrincipalMappingRules(`RULE:^CN=([^,]+),OU=eng$/$1/U,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		auth     tls.ClientAuthType
		withCert bool
		want     string // "": refused
	}{
		{tls.VerifyClientCertIfGiven, true, "User:ALICE"},
		{tls.VerifyClientCertIfGiven, false, AnonymousPrincipal},
		{tls.RequireAndVerifyClientCert, true, "User:ALICE"},
		{tls.RequireAndVerifyClientCert, false, ""},
	} {
		tb := startBroker(t, nil)
		addr := serveTLS(t, tb, &Listener{Name: "SSL", Protocol: SSL, AdvertisedHost: "127.0.0.1", AdvertisedPort: 1,
			TLS:       &tls.Config{Certificates: []tls.Certificate{server.TLS()}, ClientCAs: ca.Pool(), ClientAuth: tt.auth},
			Principal: mapper.Map})
		cfg := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
		if tt.withCert {
			cfg.Certificates = []tls.Certificate{client.TLS()}
		}
		w, err := dialTLSWire(t, addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		corr := w.send(apiVersionsReq(3))
		_, err = w.recv(kmsg.ApiVersions.Int16(), 3, corr)
		if tt.want == "" {
			if err == nil {
				t.Errorf("auth %v without a certificate was served", tt.auth)
			}
			continue
		}
		if err != nil {
			t.Fatalf("auth %v cert %v: %v", tt.auth, tt.withCert, err)
		}
		if got := principals(tb.s); len(got) != 1 || got[0] != tt.want {
			t.Errorf("auth %v cert %v: principals %q, want %q", tt.auth, tt.withCert, got, tt.want)
		}
		// Metadata names the TLS listener's advertised address.
		meta := w.roundTrip(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse)
		if len(meta.Brokers) != 1 || meta.Brokers[0].Port != 1 {
			t.Errorf("Metadata brokers %+v, want the SSL listener's port 1", meta.Brokers)
		}
	}
}

// FuzzDistinguishedName checks that DistinguishedName never panics on a
// subject's bytes, which come from a client's certificate.
func FuzzDistinguishedName(f *testing.F) {
	for _, n := range []pkix.Name{{CommonName: "a", OrganizationalUnit: []string{"b"}}, {SerialNumber: "1"}} {
		raw, _ := asn1.Marshal(n.ToRDNSequence())
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		DistinguishedName(b)
	})
}
