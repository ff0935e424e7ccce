package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestDebugAddrLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "example.com:0", "127.0.0.1", ""} {
		if srv, err := startDebug(addr, zerolog.Nop()); err == nil {
			srv.Close()
			t.Errorf("startDebug(%q) accepted a non-loopback or malformed address", addr)
		}
	}
}

func TestDebugServesGoroutineProfile(t *testing.T) {
	var logged strings.Builder
	srv, err := startDebug("127.0.0.1:0", zerolog.New(&logged))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// The listener's address is in the log line.
	_, rest, ok := strings.Cut(logged.String(), `"addr":"`)
	if !ok {
		t.Fatalf("no addr in %q", logged.String())
	}
	addr, _, _ := strings.Cut(rest, `"`)
	resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(body), "goroutine profile: total ") {
		t.Errorf("goroutine profile starts %.60q", body)
	}
}
