package harness

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The fake broker holds its listener and the standard streams.
func TestFDs(t *testing.T) {
	b, err := Start(fakeOptions(t, "ok"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Kill()
	s0, other, err := b.FDs()
	if err != nil {
		t.Fatal(err)
	}
	if s0 < 1 || other < 3 { // the listener; stdin, stdout, stderr
		t.Errorf("FDs = %d sockets, %d other; want the listener and the standard streams", s0, other)
	}
}

func TestGoroutines(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/pprof/goroutine" || r.URL.Query().Get("debug") != "1" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("goroutine profile: total 17\n3 @ 0x1 0x2\n#\t0x1\tmain.main+0x1\n"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	n, err := Goroutines(addr)
	if err != nil || n != 17 {
		t.Errorf("Goroutines = %d, %v; want 17", n, err)
	}
	// Nothing listening: an error, not a count.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	if _, err := Goroutines(dead); err == nil {
		t.Error("Goroutines of a closed port succeeded")
	}
}
