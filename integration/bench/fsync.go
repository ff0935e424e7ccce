package main

// The fsync measurement: many producers at a fixed total rate, with the
// default flush policy and with log.flush.interval.messages=1 (an fsync
// before each append is acknowledged), on fresh brokers, interleaved; it
// reports the records/s achieved, their ratio, and the produce latency.
// Next to it, the disk's own cost of what the broker does per append (a
// small appending write and its fsync), measured in the same minutes on
// the same file system, so a reader can tell the broker from the disk.

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	flagFsyncRate      = flag.Int("fsync-rate", 50000, "total records per second offered by the fsync measurement's producers")
	flagFsyncProducers = flag.Int("fsync-producers", 16, "producers (clients, each its own connection) of the fsync measurement")
	flagFsyncDuration  = flag.Duration("fsync-duration", 5*time.Second, "how long each fsync run produces")
)

// flushPolicies are the two broker configurations the fsync measurement
// and the latency measurement compare.
var flushPolicies = []struct {
	name    string
	configs []string
}{
	{"default flush policy", nil},
	{"log.flush.interval.messages=1", []string{"log.flush.interval.messages=1"}},
}

// fsyncRun is one run's figures.
type fsyncRun struct {
	rps      float64
	p50, p99 time.Duration // produce latency, from Produce to its ack
}

// measureFsync runs the fsync measurement for every peer, -runs rounds,
// and adds its rows; record takes each figure for the peers' ratios.
func measureFsync(peers []peer, tmp string, add func(...string), record func(p peer, metric string, v float64)) error {
	runs := make([][]fsyncRun, len(flushPolicies)) // kcompatd's, per policy
	var floors []diskFloor
	idempotent := false
	for i := range *flagRuns {
		for _, p := range peers {
			for pi, fp := range flushPolicies {
				progress("fsync round %d/%d (%s), %s: %d producers, %d rec/s", i+1, *flagRuns, fp.name, p.name, *flagFsyncProducers, *flagFsyncRate)
				r, idem, err := measureFsyncRun(p, tmp, fp.configs)
				if err != nil {
					return fmt.Errorf("%s: %w", p.name, err)
				}
				progress("%s: %.0f rec/s, produce p50 %.2f ms, p99 %.2f ms", p.name, r.rps, ms(r.p50), ms(r.p99))
				record(p, "fsync run rec/s, "+fp.name, r.rps)
				record(p, "fsync run produce p99 ms, "+fp.name, ms(r.p99))
				if p.name == "kcompatd" {
					runs[pi] = append(runs[pi], r)
					idempotent = idem
				}
			}
		}
		f, err := measureDiskFloor(tmp)
		if err != nil {
			return err
		}
		progress("disk floor: 1 KiB append+fsync p50 %.3f ms, p99 %.3f ms", ms(f.p50), ms(f.p99))
		floors = append(floors, f)
	}
	acks := "acks=all, not idempotent (broker lacks InitProducerId)"
	if idempotent {
		acks = "acks=all, idempotent"
	}
	var rps [2][]float64
	for pi, fp := range flushPolicies {
		rs := runs[pi]
		rps[pi] = mapVals(rs, func(r fsyncRun) float64 { return r.rps })
		p50 := mapVals(rs, func(r fsyncRun) float64 { return ms(r.p50) })
		p99 := mapVals(rs, func(r fsyncRun) float64 { return ms(r.p99) })
		add("many producers, "+fp.name,
			spread("%.0f", " rec/s", rps[pi]),
			"produce p50 "+spread("%.2f", " ms", p50),
			"p99 "+spread("%.2f", " ms", p99),
			fmt.Sprintf("%d producers, %d rec/s offered, keyed %d B records, %d partitions, %s; median of %d",
				*flagFsyncProducers, *flagFsyncRate, *flagRecordSize, *flagPartitions, acks, len(rs)))
	}
	// The ratio per round (runs of one round are minutes apart at most).
	var ratio []float64
	for i := range rps[0] {
		ratio = append(ratio, rps[0][i]/rps[1][i])
	}
	add("many producers, rec/s default / flush.messages=1",
		spread("%.2f", "x", ratio), "", "",
		fmt.Sprintf("per round; median of %d", len(ratio)))
	add(diskFloorRow(floors)...)
	return nil
}

// measureFsyncRun starts a broker with configs and runs the producers at
// the offered rate for -fsync-duration.
func measureFsyncRun(p peer, tmp string, configs []string) (fsyncRun, bool, error) {
	var run fsyncRun
	b, err := p.start(tmp, configs)
	if err != nil {
		return run, false, err
	}
	defer b.stop()
	idempotent, err := supportsIdempotence(b)
	if err != nil {
		return run, false, err
	}
	const topic = "fsync"
	if err := createTopic(b, topic); err != nil {
		return run, idempotent, err
	}
	np := max(*flagFsyncProducers, 1)
	perProducer := float64(*flagFsyncRate) / float64(np)
	total := int(perProducer * flagFsyncDuration.Seconds())

	values := make([][]byte, 64)
	for i := range values {
		values[i] = make([]byte, *flagRecordSize)
		_, _ = rand.Read(values[i])
	}
	clients := make([]*kgo.Client, np)
	for i := range clients {
		if clients[i], err = newClient(b, append(producerOpts(idempotent), kgo.ProducerLinger(0))...); err != nil {
			return run, idempotent, err
		}
		defer clients[i].Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), *flagFsyncDuration+2*time.Minute)
	defer cancel()
	// Connections and metadata first, untimed.
	for _, cl := range clients {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: values[0]}).FirstErr(); err != nil {
			return run, idempotent, fmt.Errorf("warm-up produce: %w", err)
		}
	}

	var (
		mu      sync.Mutex
		lat     = make([]time.Duration, 0, total*np)
		failed  atomic.Pointer[error]
		lastAck atomic.Int64
		wg      sync.WaitGroup
	)
	t0 := time.Now()
	for pi, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, total)
			var mineMu sync.Mutex
			interval := time.Duration(float64(time.Second) / perProducer)
			for i := range total {
				// Paced in steps of a millisecond or so, not per record.
				if d := time.Until(t0.Add(time.Duration(i) * interval)); d > time.Millisecond {
					time.Sleep(d)
				}
				key := fmt.Appendf(nil, "p%d-%d", pi, i)
				sent := time.Now()
				cl.Produce(ctx, &kgo.Record{Topic: topic, Key: key, Value: values[i%len(values)]}, func(_ *kgo.Record, err error) {
					now := time.Now()
					if err != nil {
						failed.CompareAndSwap(nil, &err)
						return
					}
					lastAck.Store(int64(now.Sub(t0)))
					mineMu.Lock()
					mine = append(mine, now.Sub(sent))
					mineMu.Unlock()
				})
			}
			if err := cl.Flush(ctx); err != nil {
				failed.CompareAndSwap(nil, &err)
			}
			mineMu.Lock()
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
			mineMu.Unlock()
		}()
	}
	wg.Wait()
	if e := failed.Load(); e != nil {
		return run, idempotent, fmt.Errorf("produce: %w", *e)
	}
	slices.Sort(lat)
	run.rps = float64(len(lat)) / time.Duration(lastAck.Load()).Seconds()
	run.p50, run.p99 = lat[len(lat)*50/100], lat[len(lat)*99/100]
	return run, idempotent, nil
}

// diskFloor is the disk's own cost of what the broker does per append
// under flush.messages=1.
type diskFloor struct{ p50, p99 time.Duration }

// floorWrites is how many appends+fsyncs one floor measurement times.
const floorWrites = 2000

// measureDiskFloor appends floorWrites 1 KiB writes to a fresh file in
// dir (the file system of the brokers' data dirs), each followed by an
// fsync, as a segment is written under flush.messages=1.
func measureDiskFloor(dir string) (diskFloor, error) {
	f, err := os.CreateTemp(dir, "disk-floor-")
	if err != nil {
		return diskFloor{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 1024)
	ds := make([]time.Duration, 0, floorWrites)
	for i := range floorWrites {
		t := time.Now()
		if _, err := f.WriteAt(buf, int64(i*len(buf))); err != nil {
			return diskFloor{}, err
		}
		if err := f.Sync(); err != nil {
			return diskFloor{}, err
		}
		ds = append(ds, time.Since(t))
	}
	slices.Sort(ds)
	return diskFloor{ds[len(ds)*50/100], ds[len(ds)*99/100]}, nil
}

// diskFloorRow is the table row of the disk floors measured.
func diskFloorRow(fs []diskFloor) []string {
	p50 := mapVals(fs, func(f diskFloor) float64 { return ms(f.p50) })
	p99 := mapVals(fs, func(f diskFloor) float64 { return ms(f.p99) })
	return []string{"disk floor: 1 KiB append + fsync",
		"p50 " + spread("%.3f", " ms", p50),
		"p99 " + spread("%.3f", " ms", p99), "",
		fmt.Sprintf("%d writes to a fresh file next to the data dirs, once per round; median of %d", floorWrites, len(fs))}
}
