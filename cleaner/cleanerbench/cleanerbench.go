// Package cleanerbench is issue 15's cleaner workload and its measurement,
// shared by cleaner's benchmark and integration/bench's "cleaner" row:
// keys of 16-64 bytes, 1 KiB values, every key written once or twice (half
// of them twice, so a third of the records are superseded), 16 records a
// batch, appended through partition's API to a compacted topic on disk,
// then one pass of the cleaner as the broker runs it (Clean).
package cleanerbench

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"time"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// Workload describes the log to build.
type Workload struct {
	LogBytes     int64 // about this many bytes of uncompressed records
	SegmentBytes int64 // segment.bytes of the topic
	Codec        recordbatch.Codec
	ValueBytes   int // 1024 unless set
	Seed         uint64
}

// Build appends the workload to l (a compacted topic's partition) and
// returns the bytes of its closed segments: what a pass cleans (the
// active segment, holding the tail, is not cleaned).
func Build(l *partition.Log, w Workload) (int64, error) {
	vb := w.ValueBytes
	if vb == 0 {
		vb = 1024
	}
	rng := rand.New(rand.NewPCG(w.Seed, w.Seed+1))
	const perBatch = 16
	recBytes := int64(vb + 40 + 8)
	distinct := int(w.LogBytes / recBytes * 2 / 3)
	order := make([]int32, 0, distinct+distinct/2)
	for k := range distinct {
		order = append(order, int32(k))
		if k%2 == 1 {
			order = append(order, int32(k))
		}
	}
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	// Values of letters from a 16-letter alphabet: compressible about 2x,
	// as text is, so the codecs have work.
	const alphabet = "abcdefghijklmnop"
	pool := make([]byte, 1<<16)
	for i := range pool {
		pool[i] = alphabet[rng.IntN(len(alphabet))]
	}
	recs := make([]recordbatch.Record, perBatch)
	keys := make([][]byte, perBatch)
	for i := range keys {
		keys[i] = make([]byte, 64)
	}
	ts := time.Now().UnixMilli()
	for i := 0; i < len(order); i += perBatch {
		n := min(perBatch, len(order)-i)
		for j := range n {
			k := uint64(order[i+j])
			kl := 16 + int(k*2654435761%49)
			key := keys[j][:kl]
			copy(key, fmt.Sprintf("key-%012d", k))
			for p := 16; p < kl; p++ {
				key[p] = byte('a' + (k+uint64(p))%26)
			}
			off := rng.IntN(len(pool) - vb)
			recs[j] = recordbatch.Record{OffsetDelta: int32(j), TimestampDelta: int64(j), Key: key, Value: pool[off : off+vb]}
		}
		b, err := recordbatch.Build(recordbatch.BatchSpec{Codec: w.Codec, BaseTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs[:n])
		if err != nil {
			return 0, err
		}
		if _, err := l.Append(b); err != nil {
			return 0, err
		}
	}
	var size int64
	segs := l.Segments()
	for _, s := range segs[:len(segs)-1] {
		size += s.Size
	}
	return size, nil
}

// Result is one measured pass.
type Result struct {
	DirtyBytes int64         // bytes of the log the pass cleaned
	Written    int64         // bytes of the cleaned segments
	CPU        time.Duration // user+system CPU of the process during the pass
	Wall       time.Duration
	// PeakHeap is the largest growth of the live heap objects over their
	// level before the pass, sampled every 2 ms.
	PeakHeap   uint64
	Mallocs    uint64 // heap allocations during the pass
	AllocBytes uint64 // bytes they took
}

// MBPerCPUSecond is dirty MB (10^6 bytes) cleaned per CPU-second.
func (r Result) MBPerCPUSecond() float64 { return float64(r.DirtyBytes) / 1e6 / r.CPU.Seconds() }

// CPUSecondsPerGB is CPU-seconds per GB (10^9 bytes) of dirty log.
func (r Result) CPUSecondsPerGB() float64 { return r.CPU.Seconds() / (float64(r.DirtyBytes) / 1e9) }

// CPUTime is the process's user+system CPU time (getrusage).
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

const heapObjects = "/memory/classes/heap/objects:bytes"

func heapNow() uint64 {
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// Cleaner is what Clean needs of a *cleaner.Cleaner (this package does
// not import cleaner, so that cleaner's own tests can use it).
type Cleaner interface {
	CleanLog(partition.TopicPartition) (bool, error)
	Checkpoint(partition.TopicPartition) int64
}

// Clean runs one pass over l with c, as a cleaner thread runs it, and
// measures it. DirtyBytes are the bytes of the segments the pass rewrote
// (on a never-cleaned log all dirty; a partial pass, its offset map full,
// rewrites fewer). Nothing else should run in the process meanwhile: the
// CPU time is the process's.
func Clean(c Cleaner, l *partition.Log) (Result, error) {
	tp := partition.TopicPartition{Topic: l.Topic(), Partition: l.Partition()}
	before := l.Segments()
	runtime.GC()
	base := heapNow()
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if h := heapNow(); h > base && h-base > peak {
					peak = h - base
				}
			}
		}
	}()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0, t0 := CPUTime(), time.Now()
	ok, err := c.CleanLog(tp)
	cpu, wall := CPUTime()-cpu0, time.Since(t0)
	runtime.ReadMemStats(&ms1)
	close(stop)
	wg.Wait()
	if err != nil {
		return Result{}, err
	}
	if !ok {
		return Result{}, fmt.Errorf("cleanerbench: nothing cleaned")
	}
	end := c.Checkpoint(tp)
	var dirty, written int64
	for _, s := range before {
		if s.BaseOffset < end {
			dirty += s.Size
		}
	}
	for _, s := range l.Segments() {
		if s.BaseOffset < end {
			written += s.Size
		}
	}
	return Result{DirtyBytes: dirty, Written: written, CPU: cpu, Wall: wall, PeakHeap: peak,
		Mallocs: ms1.Mallocs - ms0.Mallocs, AllocBytes: ms1.TotalAlloc - ms0.TotalAlloc}, nil
}
