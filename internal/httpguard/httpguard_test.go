package httpguard

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestLoopbackHost(t *testing.T) {
	h := LoopbackHost(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	for host, want := range map[string]int{
		"127.0.0.1:8080":      http.StatusNoContent,
		"127.1.2.3":           http.StatusNoContent,
		"localhost:1":         http.StatusNoContent,
		"LOCALHOST":           http.StatusNoContent,
		"[::1]:9":             http.StatusNoContent,
		"evil.example:8080":   http.StatusForbidden,
		"10.0.0.1:80":         http.StatusForbidden,
		"":                    http.StatusForbidden,
		"localhost.evil.test": http.StatusForbidden,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != want {
			t.Errorf("Host %q: %d, want %d", host, rec.Code, want)
		}
	}
	for addr, ok := range map[string]bool{"127.0.0.1:0": true, "localhost:9": true, "[::1]:1": true, "0.0.0.0:1": false, ":80": false, "x": false} {
		if err := CheckLoopbackAddr(addr); (err == nil) != ok {
			t.Errorf("%q: %v", addr, err)
		}
	}
}
