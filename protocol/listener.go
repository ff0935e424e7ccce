package protocol

import (
	"crypto/tls"
	"fmt"
	"net"
)

// SecurityProtocol is a listener's Kafka security protocol
// (listener.security.protocol.map values).
type SecurityProtocol string

// Kafka's security protocols (SecurityProtocol.java).
const (
	Plaintext     SecurityProtocol = "PLAINTEXT"
	SSL           SecurityProtocol = "SSL"
	SASLPlaintext SecurityProtocol = "SASL_PLAINTEXT"
	SASLSSL       SecurityProtocol = "SASL_SSL"
)

// ParseSecurityProtocol returns the protocol named s (in any case).
func ParseSecurityProtocol(s string) (SecurityProtocol, error) {
	switch p := SecurityProtocol(upperASCII(s)); p {
	case Plaintext, SSL, SASLPlaintext, SASLSSL:
		return p, nil
	}
	return "", fmt.Errorf("unknown security protocol %q", s)
}

// UsesTLS says whether connections are TLS (SSL, SASL_SSL).
func (p SecurityProtocol) UsesTLS() bool { return p == SSL || p == SASLSSL }

// UsesSASL says whether clients authenticate with SASL first
// (SASL_PLAINTEXT, SASL_SSL).
func (p SecurityProtocol) UsesSASL() bool { return p == SASLPlaintext || p == SASLSSL }

func upperASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// Listener is one entry of listeners as the server serves it: Kafka
// answers Metadata, DescribeCluster, FindCoordinator and Fetch's leader
// endpoints with the advertised address of the listener a request came in
// on, so each connection remembers its listener.
type Listener struct {
	// Name is the listener name (PLAINTEXT, CLIENT, ...), upper case.
	Name string
	// Protocol is its security protocol; the zero value is PLAINTEXT.
	Protocol SecurityProtocol
	// AdvertisedHost and AdvertisedPort are what clients are told to
	// connect to (the listener's entry of advertised.listeners, else its
	// own address).
	AdvertisedHost string
	AdvertisedPort int32
	// TLS is the server side of SSL and SASL_SSL listeners (nil for the
	// others). Its ClientAuth comes from ssl.client.auth; the principal
	// of a verified client certificate is named by Principal.
	TLS *tls.Config
	// Principal maps a verified client certificate's subject, in RFC 2253
	// form, to the principal name (ssl.principal.mapping.rules); nil: the
	// DN as it is.
	Principal func(dn string) (string, error)
	// SASL holds the mechanisms of a SASL listener (nil for the others).
	SASL *SASLConfig
}

// defaultListener is the listener Serve serves: PLAINTEXT, advertising
// Config.AdvertisedHost and AdvertisedPort.
func (s *Server) defaultListener() *Listener {
	return &Listener{Name: string(Plaintext), Protocol: Plaintext, AdvertisedHost: s.cfg.AdvertisedHost, AdvertisedPort: s.cfg.AdvertisedPort}
}

// advertisedFor is the host and port to name this broker by in the
// answer to r: its listener's advertised address.
func (s *Server) advertisedFor(r *Request) (string, int32) {
	if r != nil && r.listener != nil {
		return r.listener.AdvertisedHost, r.listener.AdvertisedPort
	}
	return s.cfg.AdvertisedHost, s.cfg.AdvertisedPort
}

// check reports a listener the server cannot serve.
func (l *Listener) check() error {
	switch {
	case l.Protocol.UsesTLS() && l.TLS == nil:
		return fmt.Errorf("protocol: listener %s (%s) has no TLS configuration", l.Name, l.Protocol)
	case l.Protocol.UsesSASL() && (l.SASL == nil || len(l.SASL.Mechanisms) == 0):
		return fmt.Errorf("protocol: listener %s (%s) has no SASL mechanism", l.Name, l.Protocol)
	}
	return nil
}

// wrap returns nc as the listener's protocol reads it: a TLS server
// connection for SSL and SASL_SSL (its handshake runs on first use).
func (l *Listener) wrap(nc net.Conn) net.Conn {
	if l.Protocol.UsesTLS() {
		return tls.Server(nc, l.TLS)
	}
	return nc
}
