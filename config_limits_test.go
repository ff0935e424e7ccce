package kcompatd

import (
	"encoding/binary"
	"io"
	"math"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestParseConfigConnectionLimits(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	v6 := netip.MustParseAddr("2001:db8::1")
	tests := []struct {
		name  string
		props map[string]string
		check func(c Config) bool
	}{
		{"defaults", map[string]string{}, func(c Config) bool {
			return c.ConnectionsMaxIdleMs == 600000 && c.MaxConnections == math.MaxInt32 &&
				c.MaxConnectionsPerIP == math.MaxInt32 && c.MaxConnectionsPerIPOverrides == ""
		}},
		{"connections.max.idle.ms", map[string]string{"connections.max.idle.ms": "101"}, func(c Config) bool { return c.ConnectionsMaxIdleMs == 101 }},
		{"connections.max.idle.ms never", map[string]string{"connections.max.idle.ms": "-5"}, func(c Config) bool { return c.ConnectionsMaxIdleMs == -5 }},
		{"connections.max.idle.ms long", map[string]string{"connections.max.idle.ms": "9223372036854775807"}, func(c Config) bool { return c.ConnectionsMaxIdleMs == math.MaxInt64 }},
		{"max.connections zero", map[string]string{"max.connections": "0"}, func(c Config) bool { return c.MaxConnections == 0 }},
		{"max.connections.per.ip", map[string]string{"max.connections.per.ip": "10"}, func(c Config) bool { return c.MaxConnectionsPerIP == 10 }},
		{"per ip zero with overrides", map[string]string{"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "127.0.0.1:5"}, func(c Config) bool {
			return c.MaxConnectionsPerIP == 0
		}},
		{"overrides with blanks and IPv6", map[string]string{"max.connections.per.ip.overrides": " 127.0.0.1 : 5 , 2001:db8::1:0 ,"}, func(c Config) bool {
			l, err := c.connectionLimits()
			return err == nil && len(l.MaxConnectionsPerIPOverrides) == 2 &&
				l.MaxConnectionsPerIPOverrides[lo] == 5 && l.MaxConnectionsPerIPOverrides[v6] == 0
		}},
		{"last override wins", map[string]string{"max.connections.per.ip.overrides": "127.0.0.1:5,127.0.0.1:7"}, func(c Config) bool {
			l, err := c.connectionLimits()
			return err == nil && l.MaxConnectionsPerIPOverrides[lo] == 7
		}},
		{"v4-mapped override", map[string]string{"max.connections.per.ip.overrides": "::ffff:127.0.0.1:3"}, func(c Config) bool {
			l, err := c.connectionLimits()
			return err == nil && l.MaxConnectionsPerIPOverrides[lo] == 3
		}},
		{"limits passed on", map[string]string{"connections.max.idle.ms": "1000", "max.connections": "9", "max.connections.per.ip": "3"}, func(c Config) bool {
			l, err := c.connectionLimits()
			return err == nil && l.MaxIdleMs == 1000 && l.MaxConnections == 9 && l.MaxConnectionsPerIP == 3 && l.MaxConnectionsPerIPOverrides == nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := ParseConfig(tt.props)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Fatalf("unexpected config %+v", c)
			}
		})
	}
}

func TestParseConfigConnectionLimitErrors(t *testing.T) {
	tests := []struct {
		props map[string]string
		prop  string // the property the one error names
		text  string // a piece of its reason
	}{
		{map[string]string{"connections.max.idle.ms": "0"}, "connections.max.idle.ms", "failed.authentication.delay.ms"},
		{map[string]string{"connections.max.idle.ms": "100"}, "connections.max.idle.ms", "greater than"},
		{map[string]string{"connections.max.idle.ms": "10m"}, "connections.max.idle.ms", "type LONG"},
		{map[string]string{"max.connections": "-1"}, "max.connections", "at least 0"},
		{map[string]string{"max.connections": "2147483648"}, "max.connections", "type INT"},
		{map[string]string{"max.connections.per.ip": "-1"}, "max.connections.per.ip", "at least 0"},
		{map[string]string{"max.connections.per.ip": "0"}, "max.connections.per.ip", "overrides"},
		{map[string]string{"max.connections.per.ip.overrides": "host1"}, "max.connections.per.ip.overrides", "host:count"},
		{map[string]string{"max.connections.per.ip.overrides": "host#:100"}, "max.connections.per.ip.overrides", "invalid address"},
		{map[string]string{"max.connections.per.ip.overrides": ":100"}, "max.connections.per.ip.overrides", "invalid address"},
		{map[string]string{"max.connections.per.ip.overrides": "h:many"}, "max.connections.per.ip.overrides", "32-bit"},
		{map[string]string{"max.connections.per.ip.overrides": "h:99999999999"}, "max.connections.per.ip.overrides", "32-bit"},
		// A bad override list is its own error, not also the zero rule's.
		{map[string]string{"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "h"}, "max.connections.per.ip.overrides", "host:count"},
	}
	for _, tt := range tests {
		t.Run(tt.prop+"="+tt.props[tt.prop], func(t *testing.T) {
			_, _, err := ParseConfig(tt.props)
			errs := configErrors(t, err)
			if len(errs) != 1 {
				t.Fatalf("got %d errors (%v), want 1", len(errs), err)
			}
			if errs[0].Property != tt.prop || !strings.Contains(errs[0].Reason, tt.text) {
				t.Fatalf("got %v, want %s: ...%s...", errs[0], tt.prop, tt.text)
			}
			if errs[0].Value != tt.props[tt.prop] {
				t.Errorf("error value %q, want %q", errs[0].Value, tt.props[tt.prop])
			}
		})
	}
}

// An override host name is resolved when the broker starts.
func TestConnectionLimitsResolveHost(t *testing.T) {
	c := DefaultConfig()
	c.MaxConnectionsPerIPOverrides = "localhost:4"
	l, err := c.connectionLimits()
	if err != nil {
		t.Skipf("localhost does not resolve here: %v", err)
	}
	if l.MaxConnectionsPerIPOverrides[netip.MustParseAddr("127.0.0.1")] != 4 && l.MaxConnectionsPerIPOverrides[netip.IPv6Loopback()] != 4 {
		t.Fatalf("localhost resolved to %v", l.MaxConnectionsPerIPOverrides)
	}
}

// metadataOn sends a Metadata v1 request on nc and reads its answer.
func metadataOn(nc net.Conn) error {
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 1
	frame := []byte{0, 0, 0, 0}
	frame = binary.BigEndian.AppendUint16(frame, uint16(req.Key()))
	frame = binary.BigEndian.AppendUint16(frame, uint16(req.Version))
	frame = binary.BigEndian.AppendUint32(frame, 1)
	frame = binary.BigEndian.AppendUint16(frame, 0xffff) // null client id
	frame = req.AppendTo(frame)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	if _, err := nc.Write(frame); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(nc, body); err != nil {
		return err
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 1
	return resp.ReadFrom(body[4:])
}

// The broker applies max.connections.per.ip.overrides from its properties.
func TestBrokerMaxConnectionsPerIP(t *testing.T) {
	b := newTestBroker(t, "", map[string]string{
		"max.connections.per.ip":           "0",
		"max.connections.per.ip.overrides": "127.0.0.1:1",
	})
	first, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if err := metadataOn(first); err != nil {
		t.Fatal(err)
	}
	second, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if err := metadataOn(second); err == nil {
		t.Fatal("second connection from 127.0.0.1 served over its limit of 1")
	}
	if err := metadataOn(first); err != nil {
		t.Fatalf("first connection after the rejection: %v", err)
	}
}
