package harness

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// FDs counts the process's open file descriptors, from /proc/PID/fd (Linux
// only): sockets (the listener and client connections) and everything else
// (segment files, indexes, the data dir's lock, pipes).
func (b *Broker) FDs() (sockets, other int, err error) {
	dir := fmt.Sprintf("/proc/%d/fd", b.PID())
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		target, err := os.Readlink(dir + "/" + e.Name())
		if err != nil {
			continue // closed between the listing and the readlink
		}
		if strings.HasPrefix(target, "socket:") {
			sockets++
		} else {
			other++
		}
	}
	return sockets, other, nil
}

// Goroutines returns the number of goroutines of a broker started with
// --debug-addr debugAddr, from its goroutine profile
// (/debug/pprof/goroutine?debug=1, whose first line is "goroutine profile:
// total N"). The request's own handler goroutine is included.
func Goroutines(debugAddr string) (int, error) {
	profile, err := GoroutineProfile(debugAddr)
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(profile, "\n")
	n, ok := strings.CutPrefix(line, "goroutine profile: total ")
	if !ok {
		return 0, fmt.Errorf("harness: unexpected goroutine profile header %q", line)
	}
	return strconv.Atoi(strings.TrimSpace(n))
}

// GoroutineProfile returns the goroutine profile of a broker started with
// --debug-addr debugAddr, grouped by stack (debug=1).
func GoroutineProfile(debugAddr string) (string, error) {
	// No keep-alive: an idle connection would hold a goroutine in the
	// broker between samples.
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := cl.Get("http://" + debugAddr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("harness: goroutine profile: %s", resp.Status)
	}
	var sb strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		sb.Write(sc.Bytes())
		sb.WriteByte('\n')
		if sb.Len() > 8<<20 {
			return "", errors.New("harness: goroutine profile over 8 MiB")
		}
	}
	return sb.String(), sc.Err()
}
