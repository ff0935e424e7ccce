package main

// The disk's share of the latency under log.flush.interval.messages=1: the
// latency workload (records of -record-size at -rate, spread over
// -partitions logs) written by the least a broker that fsyncs each log
// before acknowledging can do, with no network, protocol or validation:
// one file per partition, each with a group-commit loop that fsyncs all
// that was appended while the previous fsync ran. A record's latency is
// from its write to the end of the fsync that covers it. It is what the
// disk alone costs such a broker, not a bound: a broker's producers batch
// and spread records their own way. The table prints it under the
// broker's row.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"
)

// stickyBytes is how many bytes of values franz-go's default partitioner
// (UniformBytesPartitioner(64 KiB, ...)) sends to one partition before it
// picks another; the bench's producers use it.
const stickyBytes = 64 << 10

// commitLog is one partition's file and the write times its next fsync
// covers.
type commitLog struct {
	f       *os.File
	mu      sync.Mutex
	pending []time.Time
	kick    chan struct{}
}

// measureCommitFloor runs the workload for d in a fresh directory under dir
// and returns the records' latency p50 and p99. Records go to one partition
// for stickyBytes of values, then to another one at random, as franz-go's
// default partitioner does for unkeyed records.
func measureCommitFloor(dir string, rate int, d time.Duration, partitions, recordSize int) (p50, p99 time.Duration, err error) {
	work, err := os.MkdirTemp(dir, "commit-floor-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(work)
	var (
		latMu   sync.Mutex
		lat     []time.Duration
		syncErr error
		wg      sync.WaitGroup
	)
	logs := make([]*commitLog, partitions)
	for i := range logs {
		f, err := os.Create(fmt.Sprintf("%s/%d.log", work, i))
		if err != nil {
			return 0, 0, err
		}
		defer f.Close()
		l := &commitLog{f: f, kick: make(chan struct{}, 1)}
		logs[i] = l
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range l.kick {
				l.mu.Lock()
				covered := l.pending
				l.pending = nil
				l.mu.Unlock()
				if len(covered) == 0 {
					continue
				}
				err := l.f.Sync()
				now := time.Now()
				latMu.Lock()
				if err != nil && syncErr == nil {
					syncErr = err
				}
				for _, t := range covered {
					lat = append(lat, now.Sub(t))
				}
				latMu.Unlock()
			}
		}()
	}
	// A record batch of one record: its value plus about 70 bytes of
	// batch and record framing.
	buf := make([]byte, recordSize+70)
	n := int(float64(rate) * d.Seconds())
	interval := time.Second / time.Duration(rate)
	t0 := time.Now()
	cur, stuck := 0, 0
	for i := range n {
		if w := time.Until(t0.Add(time.Duration(i) * interval)); w > 0 {
			time.Sleep(w)
		}
		if stuck += recordSize; stuck > stickyBytes && partitions > 1 {
			cur = (cur + 1 + rand.IntN(partitions-1)) % partitions
			stuck = recordSize
		}
		l := logs[cur]
		l.mu.Lock()
		_, werr := l.f.Write(buf)
		l.pending = append(l.pending, time.Now())
		l.mu.Unlock()
		if werr != nil {
			err = werr
			break
		}
		select {
		case l.kick <- struct{}{}:
		default: // a kick is queued: that fsync's loop turn takes this write too
		}
	}
	for _, l := range logs {
		close(l.kick)
	}
	wg.Wait()
	if err == nil {
		err = syncErr
	}
	if err == nil && len(lat) != n {
		err = fmt.Errorf("group-commit floor: fsyncs covered %d of %d writes", len(lat), n)
	}
	if err != nil {
		return 0, 0, err
	}
	slices.Sort(lat)
	return lat[len(lat)*50/100], lat[len(lat)*99/100], nil
}
