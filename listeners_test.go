package kcompatd

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// seedRequest sends req to the broker at addr itself, never to an address
// it advertises (which need not exist).
func seedRequest(t *testing.T, addr string, req kmsg.Request) kmsg.Response {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := cl.SeedBrokers()[0].Request(testContext(t), req)
	if err != nil {
		t.Fatalf("%s to %s: %v", kmsg.NameForKey(req.Key()), addr, err)
	}
	return resp
}

// Each listener answers Metadata, DescribeCluster and FindCoordinator
// with its own advertised address; one not in advertised.listeners with
// its bound address.
func TestListenersAdvertiseTheirOwnAddress(t *testing.T) {
	b := newTestBroker(t, "", map[string]string{
		"listeners":                      "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0,THIRD://127.0.0.1:0",
		"listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,THIRD:PLAINTEXT",
		"advertised.listeners":           "INTERNAL://internal.example:19092,EXTERNAL://external.example:29092",
	})
	third := b.ListenerAddr("third").String()
	want := map[string]string{
		"INTERNAL": "internal.example:19092",
		"EXTERNAL": "external.example:29092",
		"THIRD":    third,
	}
	if b.AdvertisedAddr() != want["INTERNAL"] {
		t.Errorf("AdvertisedAddr %s, want the first listener's %s", b.AdvertisedAddr(), want["INTERNAL"])
	}
	for name, adv := range want {
		addr := b.ListenerAddr(name)
		if addr == nil {
			t.Fatalf("no listener %s", name)
		}
		meta := seedRequest(t, addr.String(), kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse)
		if len(meta.Brokers) != 1 || hostPort(meta.Brokers[0].Host, meta.Brokers[0].Port) != adv {
			t.Errorf("%s: Metadata brokers %+v, want %s", name, meta.Brokers, adv)
		}
		dc := seedRequest(t, addr.String(), kmsg.NewPtrDescribeClusterRequest()).(*kmsg.DescribeClusterResponse)
		if len(dc.Brokers) != 1 || hostPort(dc.Brokers[0].Host, dc.Brokers[0].Port) != adv {
			t.Errorf("%s: DescribeCluster brokers %+v, want %s", name, dc.Brokers, adv)
		}
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKey = "g"
		fc.CoordinatorKeys = []string{"g"}
		fcr := seedRequest(t, addr.String(), fc).(*kmsg.FindCoordinatorResponse)
		if len(fcr.Coordinators) != 1 || hostPort(fcr.Coordinators[0].Host, fcr.Coordinators[0].Port) != adv {
			t.Errorf("%s: FindCoordinator %+v, want %s", name, fcr.Coordinators, adv)
		}
	}
}

func hostPort(h string, p int32) string { return net.JoinHostPort(h, strconv.Itoa(int(p))) }

// The listener properties are checked together, with Kafka's rules.
func TestListenerConfigErrors(t *testing.T) {
	tests := []struct {
		name  string
		props map[string]string
		want  string // in the error
	}{
		{"unmapped listener", map[string]string{"listeners": "FOO://127.0.0.1:0"}, "no security protocol for listener FOO"},
		{"unknown protocol", map[string]string{"listener.security.protocol.map": "PLAINTEXT:TLS"}, `unknown security protocol "TLS"`},
		{"duplicate port", map[string]string{
			"listeners":                      "A://127.0.0.1:9092,B://127.0.0.1:9092",
			"listener.security.protocol.map": "A:PLAINTEXT,B:PLAINTEXT"}, "each listener must have a different port"},
		{"duplicate name", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:1,plaintext://127.0.0.1:2"}, "used twice"},
		{"advertised not a listener", map[string]string{"advertised.listeners": "OTHER://x:1"}, "must be equal to or a subset"},
		{"advertised 0.0.0.0", map[string]string{"advertised.listeners": "PLAINTEXT://0.0.0.0:1"}, "non-routable"},
		{"bind 0.0.0.0 unadvertised", map[string]string{"listeners": "PLAINTEXT://0.0.0.0:0"}, "must be set for listener PLAINTEXT"},
		{"only controllers", map[string]string{"listeners": "CONTROLLER://127.0.0.1:0", "controller.listener.names": "CONTROLLER",
			"listener.security.protocol.map": "CONTROLLER:PLAINTEXT"}, "no client listener"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props := map[string]string{"log.dirs": t.TempDir(), "listeners": "PLAINTEXT://127.0.0.1:0"}
			for k, v := range tt.props {
				props[k] = v
			}
			_, _, err := ParseConfig(props)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// An override naming no configured listener (a typo, or a listener left
// out of listeners) is warned about, not applied silently.
func TestListenerOverrideForNoListenerWarns(t *testing.T) {
	_, warnings, err := ParseConfig(map[string]string{
		"listeners":                         "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
		"listener.name.ssl.ssl.client.auth": "required",
		"listener.name.sll.ssl.client.auth": "required",
	})
	if err != nil && !strings.Contains(err.Error(), "keystore") {
		t.Fatal(err)
	}
	var got []string
	for _, w := range warnings {
		if w.Reason == WarnNoSuchListener {
			got = append(got, w.Property)
		}
	}
	if len(got) != 1 || got[0] != "listener.name.sll.ssl.client.auth" {
		t.Fatalf("warnings %v", warnings)
	}
}
