package main

// A SIGINT or SIGTERM of the bench stops every broker it started (kcompatd,
// and Kafka's JVM and kfake with BENCH_PEERS) and removes its temp dir
// before it exits. Every start goes through starting/started, so a broker
// whose start is under way when the signal comes is stopped too: the
// handler waits (bounded) for starts in progress to register, then stops
// everything registered, concurrently.

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// interruptCtx ends at the first SIGINT or SIGTERM; long waits of the
// measurements derive from it.
var interruptCtx, interrupt = context.WithCancel(context.Background())

// live is the registry of running brokers.
var live struct {
	mu       sync.Mutex
	stopping bool
	inStart  int
	byID     map[any]func()
}

// starting is called before a broker process is started: it fails once the
// bench is stopping.
func starting() error {
	live.mu.Lock()
	defer live.mu.Unlock()
	if live.stopping {
		return context.Canceled
	}
	live.inStart++
	return nil
}

// started ends a starting: with a non-nil id, the broker is registered and
// stopFn stops it (it must be safe to call twice, and concurrently with the
// bench's own stop).
func started(id any, stopFn func()) {
	live.mu.Lock()
	defer live.mu.Unlock()
	live.inStart--
	if id != nil {
		if live.byID == nil {
			live.byID = map[any]func(){}
		}
		live.byID[id] = stopFn
	}
}

// forget unregisters a broker the bench has stopped.
func forget(id any) {
	live.mu.Lock()
	defer live.mu.Unlock()
	delete(live.byID, id)
}

// handleSignals installs the handler; cleanup runs after the brokers are
// stopped (it removes the temp dir), then the bench exits with status 130.
func handleSignals(cleanup func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		progress("%v: stopping the brokers started and removing %s", sig, "the temp dir")
		interrupt()
		live.mu.Lock()
		live.stopping = true
		live.mu.Unlock()
		// Starts under way finish within their start timeouts (Kafka's
		// is the longest, 2 min, plus its storage format).
		for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			live.mu.Lock()
			n := live.inStart
			live.mu.Unlock()
			if n == 0 {
				break
			}
		}
		live.mu.Lock()
		var stops []func()
		for _, f := range live.byID {
			stops = append(stops, f)
		}
		live.mu.Unlock()
		var wg sync.WaitGroup
		for _, f := range stops {
			wg.Add(1)
			go func() { defer wg.Done(); f() }()
		}
		wg.Wait()
		cleanup()
		progress("stopped %d broker(s); exiting", len(stops))
		os.Exit(130)
	}()
}

// interrupted reports whether a signal has started the shutdown: run's
// errors after it are its consequence, and main waits for the handler.
func interrupted() bool { return interruptCtx.Err() != nil }
