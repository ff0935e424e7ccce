// Package harness builds the kcompatd binary and runs it as a child process
// on a free 127.0.0.1 port, for the end-to-end tests, the franz-go suite run
// and the benchmark. It knows nothing about testing.T so that the benchmark
// (a main package) can use it too; tests wrap it with t.Cleanup.
//
// The broker is driven only through its documented command line:
//
//	kcompatd -c listeners=PLAINTEXT://127.0.0.1:PORT -c log.dirs=DIR [-c key=value ...]
//
// and observed through its JSON log on stdout (the "broker started" line
// carries the fields "addr" and "recovery_bytes_read").
package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StartedMessage is the message of the broker's lifecycle log line that says
// it serves; its fields include "addr" and "recovery_bytes_read".
const StartedMessage = "broker started"

// ModuleRoot returns the directory holding kcompatd's go.mod, found by
// walking up from the working directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for range 64 { // bounded: a path has far fewer components
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module github.com/kcompatd/kcompatd\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", errors.New("harness: kcompatd module root not found above the working directory")
}

// Build compiles ./cmd/kcompatd into dir and returns the binary's path.
// race builds it with the race detector, so that a race-built test run also
// checks the broker.
func Build(dir string, race bool) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "kcompatd")
	args := []string{"build", "-o", out}
	if race {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/kcompatd")
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("harness: go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return out, nil
}

// Options describe one broker process.
type Options struct {
	Binary  string // from Build
	DataDir string // log.dirs
	// Configs are extra broker properties as "key=value", passed as -c.
	Configs []string
	// Args are further command-line arguments (e.g. --config FILE),
	// placed before the -c flags.
	Args []string
	// Logf receives every line the broker writes (stdout and stderr). It
	// is not called after Kill or Stop return.
	Logf func(format string, args ...any)
	// StartTimeout bounds the wait for the broker to serve (default 30 s).
	StartTimeout time.Duration
	// Port, if not 0, is the port to listen on, with no retry; by default
	// a free one is picked.
	Port int
}

// Broker is a running kcompatd process.
type Broker struct {
	Addr string // host:port it listens on
	opts Options
	cmd  *exec.Cmd
	out  *lineWriter

	exited  chan struct{} // closed when the process has been reaped
	waitErr error         // valid after exited is closed

	startedOnce sync.Once
	started     chan struct{} // closed when the "broker started" line is seen
	startFields map[string]any
	storeFields map[string]any // the "storage loaded" line, if any
	startAt     time.Time      // when the process was started
	servedAt    time.Time      // when the started line was seen
}

// Start launches the broker on a free 127.0.0.1 port and waits until it
// serves. A port taken between picking and binding (another process won the
// race) is retried with a new port, a few times.
func Start(opts Options) (*Broker, error) {
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.Port != 0 {
		return startOn(opts, opts.Port)
	}
	var lastErr error
	for range 5 {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		b, err := startOn(opts, port)
		if err == nil {
			return b, nil
		}
		lastErr = err
		if !errors.Is(err, errAddrInUse) {
			return nil, err
		}
	}
	return nil, lastErr
}

var errAddrInUse = errors.New("harness: address in use")

// FreePort returns a port that was free on 127.0.0.1 a moment ago.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	return port, ln.Close()
}

func startOn(opts Options, port int) (*Broker, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := append(slices.Clone(opts.Args),
		"-c", "listeners=PLAINTEXT://"+addr,
		"-c", "log.dirs="+opts.DataDir,
	)
	for _, c := range opts.Configs {
		args = append(args, "-c", c)
	}
	b := &Broker{
		Addr:    addr,
		opts:    opts,
		exited:  make(chan struct{}),
		started: make(chan struct{}),
	}
	b.out = &lineWriter{onLine: b.onLine}
	b.cmd = exec.Command(opts.Binary, args...)
	b.cmd.Stdout = b.out
	b.cmd.Stderr = b.out
	b.startAt = time.Now()
	if err := b.cmd.Start(); err != nil {
		return nil, fmt.Errorf("harness: start %s: %w", opts.Binary, err)
	}
	go func() {
		b.waitErr = b.cmd.Wait() // returns after the output copy is done
		b.out.flush()
		close(b.exited)
	}()

	deadline := time.NewTimer(opts.StartTimeout)
	defer deadline.Stop()
	select {
	case <-b.started:
		return b, nil
	case <-b.exited:
		tail := b.out.tail()
		if strings.Contains(tail, "address already in use") {
			return nil, fmt.Errorf("%w: %s", errAddrInUse, addr)
		}
		return nil, fmt.Errorf("harness: broker exited before serving (%v); output:\n%s", b.waitErr, tail)
	case <-deadline.C:
		_ = b.Kill()
		return nil, fmt.Errorf("harness: broker did not log %q within %v; output:\n%s", StartedMessage, opts.StartTimeout, b.out.tail())
	}
}

func (b *Broker) onLine(line []byte) {
	b.opts.Logf("broker: %s", line)
	if bytes.Contains(line, []byte(storageLoadedMessage)) {
		var m map[string]any
		if json.Unmarshal(line, &m) == nil && m["message"] == storageLoadedMessage {
			b.storeFields = m // written before started is closed
		}
		return
	}
	if !bytes.Contains(line, []byte(StartedMessage)) {
		return
	}
	var m map[string]any
	if json.Unmarshal(line, &m) != nil || m["message"] != StartedMessage {
		return
	}
	b.startedOnce.Do(func() {
		b.startFields = m
		b.servedAt = time.Now()
		close(b.started)
	})
}

// PID is the broker's process id.
func (b *Broker) PID() int { return b.cmd.Process.Pid }

// StartedAt is when the process was exec'd.
func (b *Broker) StartedAt() time.Time { return b.startAt }

// StartupTime is the time from exec to the "broker started" line.
func (b *Broker) StartupTime() time.Duration { return b.servedAt.Sub(b.startAt) }

// StartedField returns a field of the "broker started" log line.
func (b *Broker) StartedField(name string) (any, bool) {
	v, ok := b.startFields[name]
	return v, ok
}

// storageLoadedMessage is partition.Store's line after recovery; it also
// carries recovery_bytes_read.
const storageLoadedMessage = "storage loaded"

// RecoveryBytesRead is the "recovery_bytes_read" field of the started line
// (partition.Store.RecoveryBytesRead): how many bytes of segment data
// recovery read at start-up. Until the started line carries it, the field of
// the storage's "storage loaded" line is used.
func (b *Broker) RecoveryBytesRead() (int64, error) {
	v, ok := b.startFields["recovery_bytes_read"]
	if !ok {
		v, ok = b.storeFields["recovery_bytes_read"]
	}
	if !ok {
		return 0, fmt.Errorf("harness: neither the %q nor the %q log line has the field recovery_bytes_read", StartedMessage, storageLoadedMessage)
	}
	f, ok := v.(float64)
	if !ok {
		return 0, fmt.Errorf("harness: recovery_bytes_read is %T, not a number", v)
	}
	return int64(f), nil
}

// Exited is closed once the process has exited and been reaped.
func (b *Broker) Exited() <-chan struct{} { return b.exited }

// Kill sends SIGKILL and waits for the process to be reaped. It is safe to
// call more than once and after Stop.
func (b *Broker) Kill() error {
	select {
	case <-b.exited:
		return nil
	default:
	}
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-b.exited
	return nil
}

// Stop sends SIGTERM and waits up to timeout for a clean exit; on timeout it
// kills the process and says so. It returns the exit error (nil for status 0).
func (b *Broker) Stop(timeout time.Duration) error {
	select {
	case <-b.exited:
		return b.waitErr
	default:
	}
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-b.exited:
		return b.waitErr
	case <-t.C:
		_ = b.Kill()
		return fmt.Errorf("harness: broker did not exit within %v of SIGTERM; killed", timeout)
	}
}

// Output returns the last lines the broker wrote.
func (b *Broker) Output() string { return b.out.tail() }

// Suspicious reports a data race report or a panic in the broker's output.
func (b *Broker) Suspicious() string {
	for _, s := range []string{"WARNING: DATA RACE", "panic:", "fatal error:"} {
		if b.out.seen(s) {
			return s
		}
	}
	return ""
}

// CPUTime is the user+system CPU time the process has used so far, from
// /proc/PID/stat (Linux only).
func (b *Broker) CPUTime() (time.Duration, error) { return ProcCPUTime(b.PID()) }

// ProcCPUTime reads utime+stime of pid from /proc/PID/stat.
func ProcCPUTime(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may contain spaces; fields after it are
	// plain numbers. utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, errors.New("harness: malformed /proc stat")
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("harness: short /proc stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("harness: malformed utime/stime")
	}
	// USER_HZ is 100 on every Linux ABI Go supports.
	return time.Duration(utime+stime) * (time.Second / 100), nil
}

// RSS is the resident set size of the process in bytes, from /proc/PID/statm.
func (b *Broker) RSS() (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", b.PID()))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(raw))
	if len(f) < 2 {
		return 0, errors.New("harness: short statm")
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, err
	}
	return pages * int64(os.Getpagesize()), nil
}

// lineWriter splits the process output into lines, keeps the last ones and
// remembers whether some markers were ever seen.
type lineWriter struct {
	onLine func([]byte)

	mu      sync.Mutex
	partial []byte
	last    []string // ring of the last lines
	next    int
	markers map[string]bool
}

const keepLines = 200

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.lineLocked(w.partial[:i])
		w.partial = w.partial[i+1:]
	}
	// A process that never writes a newline must not grow this buffer
	// without bound.
	if len(w.partial) > 1<<20 {
		w.lineLocked(w.partial)
		w.partial = nil
	}
	return len(p), nil
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.lineLocked(w.partial)
		w.partial = nil
	}
}

func (w *lineWriter) lineLocked(line []byte) {
	s := string(line)
	if len(w.last) < keepLines {
		w.last = append(w.last, s)
	} else {
		w.last[w.next] = s
		w.next = (w.next + 1) % keepLines
	}
	for _, m := range []string{"WARNING: DATA RACE", "panic:", "fatal error:"} {
		if strings.Contains(s, m) {
			if w.markers == nil {
				w.markers = map[string]bool{}
			}
			w.markers[m] = true
		}
	}
	w.onLine(line)
}

func (w *lineWriter) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var sb strings.Builder
	for i := range w.last {
		sb.WriteString(w.last[(w.next+i)%len(w.last)])
		sb.WriteByte('\n')
	}
	return sb.String()
}

func (w *lineWriter) seen(marker string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.markers[marker]
}
