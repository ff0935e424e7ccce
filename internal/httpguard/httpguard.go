// Package httpguard keeps kcompatd's HTTP endpoints (the admin listener,
// the debug profiles) to the machine they run on.
package httpguard

import (
	"net"
	"net/http"
	"strings"
)

// LoopbackHost serves only requests whose Host names a loopback address
// (127.0.0.0/8, ::1, localhost), so that a web page cannot reach the
// endpoint through DNS rebinding (a name of the page's that resolves to
// 127.0.0.1 still arrives with that name as its Host). Others get 403.
func LoopbackHost(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !IsLoopbackHost(r.Host) {
			http.Error(w, "kcompatd: only loopback Host headers are served", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// IsLoopbackHost reports whether a Host header (host or host:port) names
// a loopback address.
func IsLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckLoopbackAddr refuses a listen address whose host is not a loopback
// address (localhost, 127.0.0.0/8, ::1).
func CheckLoopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if !IsLoopbackHost(host) {
		return &net.AddrError{Err: "must be a loopback address (127.0.0.1, ::1 or localhost)", Addr: addr}
	}
	return nil
}
