package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/httpguard"
)

// debugStartedMessage is logged, with the field "addr", once the debug
// listener serves.
const debugStartedMessage = "debug listener started"

// startDebug serves Go's runtime profiles (net/http/pprof: goroutines, heap,
// CPU) on addr, for the load test's leak checks and for a developer chasing
// a slow or growing broker. It is off unless --debug-addr is given, and only
// a loopback address is accepted, and only requests whose Host is one (no
// DNS rebinding): the profiles show every goroutine's stack and must not be
// reachable from another machine or a web page.
func startDebug(addr string, log zerolog.Logger) (*http.Server, error) {
	if err := httpguard.CheckLoopbackAddr(addr); err != nil {
		return nil, fmt.Errorf("--debug-addr %q: %w", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--debug-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: httpguard.LoopbackHost(mux), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn().Err(err).Msg("debug listener stopped")
		}
	}()
	log.Info().Str("addr", ln.Addr().String()).Msg(debugStartedMessage)
	return srv, nil
}
