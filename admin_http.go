package kcompatd

// The admin HTTP listener (kcompatd.metrics.listener, off by default):
// /metrics (metrics.go), /healthz, /readyz, and the fault-injection rules
// at /faults, so that a test written in any language can make the broker
// fail on purpose. It binds only loopback addresses and answers only
// loopback Host headers.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kcompatd/kcompatd/internal/httpguard"
	"github.com/kcompatd/kcompatd/protocol"
)

// FaultRule is a fault-injection rule: which requests (API key, and
// optionally topic, partition and client id) and what they get (an error
// code without running the request, a delay, a dropped connection), for
// the next Count requests or until removed. See protocol.FaultRule.
type FaultRule = protocol.FaultRule

// FaultStatus is a rule in force with its id and match count.
type FaultStatus = protocol.FaultStatus

// The actions of a FaultRule.
const (
	FaultError = protocol.FaultError
	FaultDelay = protocol.FaultDelay
	FaultDrop  = protocol.FaultDrop
	FaultPass  = protocol.FaultPass
)

// InjectFault puts a rule in force and returns its id; the first rule in
// force that matches a request applies to it.
func (b *Broker) InjectFault(r FaultRule) (int64, error) { return b.faults.Add(r) }

// RemoveFault takes a rule out of force; false if there was none with id.
func (b *Broker) RemoveFault(id int64) bool { return b.faults.Remove(id) }

// Faults lists the rules in force, oldest first.
func (b *Broker) Faults() []FaultStatus { return b.faults.List() }

// AdminAddr is the admin HTTP listener's address, nil if it is off.
func (b *Broker) AdminAddr() net.Addr {
	if b.admin == nil {
		return nil
	}
	return b.admin.ln.Addr()
}

// adminServer is the admin HTTP listener.
type adminServer struct {
	ln  net.Listener
	srv *http.Server
}

// startAdmin opens the admin listener on addr (checked to be loopback).
func (b *Broker) startAdmin(addr string) error {
	if err := httpguard.CheckLoopbackAddr(addr); err != nil {
		return fmt.Errorf("kcompatd: admin listener %q: %w", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("kcompatd: admin listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", b.serveReady)
	if b.metrics != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(b.metrics.reg, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("GET /faults", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, b.Faults()) })
	mux.HandleFunc("POST /faults", b.servePostFault)
	mux.HandleFunc("DELETE /faults/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		if err != nil || !b.RemoveFault(id) {
			http.Error(w, "no such fault rule", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	b.admin = &adminServer{ln: ln, srv: &http.Server{Handler: httpguard.LoopbackHost(mux), ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		if err := b.admin.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.log.Warn().Err(err).Msg("admin listener stopped")
		}
	}()
	b.log.Info().Str("addr", ln.Addr().String()).Msg("admin listener started")
	return nil
}

// serveReady answers 200 while storage is loaded (it is, once New
// returned), the listeners serve and the data dir is online; 503 with
// the reason otherwise.
func (b *Broker) serveReady(w http.ResponseWriter, r *http.Request) {
	var problems []string
	select {
	case <-b.serveDone:
		problems = append(problems, "listeners are not serving")
	default:
	}
	if err := b.store.Offline(); err != nil {
		problems = append(problems, "data dir offline: "+err.Error())
	}
	if len(problems) > 0 {
		http.Error(w, strings.Join(problems, "; "), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

// servePostFault adds the rule in the body (FaultRule's JSON form) and
// answers its status, with its id.
func (b *Broker) servePostFault(w http.ResponseWriter, r *http.Request) {
	var rule FaultRule
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rule); err != nil {
		http.Error(w, "kcompatd: bad fault rule: "+err.Error(), http.StatusBadRequest)
		return
	}
	id, err := b.InjectFault(rule)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, http.StatusCreated, FaultStatus{ID: id, FaultRule: rule})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
