//go:build linux

package protocol

import (
	"net"
	"syscall"
	"testing"
)

// Accepted connections have TCP keepalive on, with our probe timing, so a
// peer that vanished without a FIN is found.
func TestKeepAliveOnAcceptedConns(t *testing.T) {
	b := startBroker(t, nil)
	w := dialWire(t, b.addr)
	w.roundTrip(apiVersionsReq(3))
	c := onlyConn(t, b.s)
	raw, err := c.nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	raw.Control(func(fd uintptr) {
		for name, opt := range map[string][2]int{
			"SO_KEEPALIVE":  {syscall.SOL_SOCKET, syscall.SO_KEEPALIVE},
			"TCP_KEEPIDLE":  {syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE},
			"TCP_KEEPINTVL": {syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL},
			"TCP_KEEPCNT":   {syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT},
		} {
			v, err := syscall.GetsockoptInt(int(fd), opt[0], opt[1])
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			got[name] = v
		}
	})
	want := map[string]int{
		"SO_KEEPALIVE":  1,
		"TCP_KEEPIDLE":  int(keepAliveIdle.Seconds()),
		"TCP_KEEPINTVL": int(keepAliveInterval.Seconds()),
		"TCP_KEEPCNT":   keepAliveCount,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
}
