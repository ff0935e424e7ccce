package main

import (
	"flag"
	"fmt"
	"os"
	"slices"

	"github.com/kcompatd/kcompatd/cleaner"
	"github.com/kcompatd/kcompatd/cleaner/cleanerbench"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

var (
	flagCleanerSize    = flag.Int64("cleaner-size", 256<<20, "bytes of (uncompressed) records in the log the cleaner measurement cleans")
	flagCleanerSegment = flag.Int64("cleaner-segment", 32<<20, "segment.bytes of the cleaner measurement's topic")
)

// measureCleaner is the "cleaner" measurement (issue 15): for each codec,
// -runs rounds (codecs interleaved) of one cleaning pass over a fresh,
// never-cleaned compacted log built through partition's API in a store
// under tmp (cleanerbench's workload: 16-64 byte keys, 1 KiB values, half
// of the keys written twice), run in this process by the cleaner package
// as a broker's cleaner thread runs it, with the default
// log.cleaner.dedupe.buffer.size. MB/s per core is dirty log MB per
// CPU-second of the pass (getrusage; nothing else runs in this process
// meanwhile); peak heap is the live heap's largest growth during it.
func measureCleaner(tmp string, runs int) ([][]string, error) {
	codecs := []recordbatch.Codec{recordbatch.None, recordbatch.LZ4, recordbatch.Zstd}
	results := map[recordbatch.Codec][]cleanerbench.Result{}
	for i := range runs {
		for _, c := range codecs {
			progress("cleaner round %d/%d, %v: %d MB", i+1, runs, c, *flagCleanerSize>>20)
			r, err := cleanOnce(tmp, c)
			if err != nil {
				return nil, fmt.Errorf("cleaner %v: %w", c, err)
			}
			progress("cleaner %v: %.0f MB/s per core, %.2f CPU-s/GB, peak heap %.1f MB", c, r.MBPerCPUSecond(), r.CPUSecondsPerGB(), float64(r.PeakHeap)/1e6)
			results[c] = append(results[c], r)
		}
	}
	var rows [][]string
	for _, c := range codecs {
		rs := results[c]
		heap := mapVals(rs, func(r cleanerbench.Result) float64 { return float64(r.PeakHeap) / 1e6 })
		rows = append(rows, []string{"log cleaner pass, " + c.String(),
			spread("%.0f", " MB/s per core", mapVals(rs, cleanerbench.Result.MBPerCPUSecond)),
			spread("%.2f", " CPU-s/GB", mapVals(rs, cleanerbench.Result.CPUSecondsPerGB)),
			fmt.Sprintf("peak heap +%.0f MB", slices.Max(heap)),
			fmt.Sprintf("%d MB dirty (as stored), 16-64 B keys, 1 KiB values, half the keys twice, %d MB segments, dedupe buffer 128 MiB; median of %d",
				rs[0].DirtyBytes/1e6, *flagCleanerSegment>>20, len(rs))})
	}
	return rows, nil
}

// cleanOnce builds the workload with codec c in a fresh store and cleans
// it with one pass.
func cleanOnce(tmp string, c recordbatch.Codec) (cleanerbench.Result, error) {
	dir, err := os.MkdirTemp(tmp, "cleaner-")
	if err != nil {
		return cleanerbench.Result{}, err
	}
	defer os.RemoveAll(dir)
	s, err := partition.Open(partition.Config{Dir: dir, NodeID: 1})
	if err != nil {
		return cleanerbench.Result{}, err
	}
	defer s.Close()
	t, err := s.CreateTopic("cleaner-bench", 1, map[string]string{partition.CleanupPolicyConfig: "compact", partition.SegmentBytesConfig: fmt.Sprint(*flagCleanerSegment)}, false)
	if err != nil {
		return cleanerbench.Result{}, err
	}
	l := t.Partitions[0]
	if _, err := cleanerbench.Build(l, cleanerbench.Workload{LogBytes: *flagCleanerSize, SegmentBytes: *flagCleanerSegment, Codec: c, Seed: 1}); err != nil {
		return cleanerbench.Result{}, err
	}
	cl := cleaner.New(s, cleaner.DefaultConfig())
	defer cl.Close()
	return cleanerbench.Clean(cl, l)
}
