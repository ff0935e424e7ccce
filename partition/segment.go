package partition

import (
	"container/list"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kcompatd/kcompatd/internal/vfs"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// File name suffixes of a segment, as Kafka names them.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
)

// segmentFileName is Kafka's 20-digit zero-padded base offset plus suffix.
func segmentFileName(base int64, suffix string) string {
	return fmt.Sprintf("%020d%s", base, suffix)
}

// parseSegmentFileName returns the base offset of a 20-digit segment file
// name with the given suffix.
func parseSegmentFileName(name, suffix string) (int64, bool) {
	stem, ok := strings.CutSuffix(name, suffix)
	if !ok || len(stem) != 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(stem, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// segment is one .log file with its two indexes. The .log holds whole v2
// batches back to back; it is the truth, the indexes can always be rebuilt
// from it.
type segment struct {
	base    int64 // offset of the segment's first record, the file name
	dir     string
	log     vfs.File
	offIdx  *index
	timeIdx *index
	// size is the number of bytes of whole batches in the .log, published
	// after each write so readers never see a partial batch.
	size atomic.Int64
	// txn is the aborted-transaction index (txn_index.go), its file and
	// entries guarded by closeMu; aborted publishes the entries to readers.
	txn     txnIndex
	aborted atomic.Pointer[[]abortedEntry]

	// The fields below belong to the writer: guarded by Log.mu.
	bytesSinceIndex int64 // bytes appended since the last offset index entry
	rollTs          int64 // max timestamp of the first batch (segment.ms), -1 if none
	rollTsKnown     bool  // rollTs was loaded from the file
	createdMs       int64 // clock time the segment was created or opened

	// times is the largest batch max timestamp and its offset: written
	// by the appender (Log.mu) or by the lazy load of a listed segment
	// (closeMu), read under Log.mu by Segments and ListOffsets.
	times largestTimestamp

	// closeMu orders close against a background index fsync: a segment
	// rolled out and then retired by the cleaner may be closed while the
	// roll's flush goroutine is still about to sync its indexes. It also
	// guards the files (log, offIdx.f, timeIdx.f) and the fields below
	// up to fileExtra (segment_files.go).
	closeMu   sync.Mutex
	closed    bool   // for good: the log closed it, or it was removed
	filesOpen bool   // log, offIdx.f and timeIdx.f are open
	refs      int    // uses in progress (use, release)
	pinned    bool   // active or not yet durable: the files stay open
	fileExtra string // suffix of the files' current names (".deleted" once retired)
	// missingIdx: an index file was missing at start-up, rebuild it.
	missingIdx bool
	// listed is set for a segment below the recovery point that start-up
	// only listed: its indexes (entry counts, largest timestamp) are
	// loaded at its first use; listedNext is the offset after it.
	listed     atomic.Bool
	listedNext int64
	owner      *Log
	cache      *openSegments
	idleElem   *list.Element // in cache.idle; guarded by cache.mu
	// rollJitterMs is subtracted from the roll age (segment.jitter.ms),
	// drawn once: rollJitterSet. Guarded by the Log's mu.
	rollJitterMs  int64
	rollJitterSet bool
}

func (s *segment) path(suffix string) string {
	return filepath.Join(s.dir, segmentFileName(s.base, suffix))
}

// openSegment opens (create: creates, truncating leftovers) the three files
// of the segment with base offset base.
func openSegment(fsys vfs.FS, dir string, base int64, cfg *LogConfig, create bool, nowMs int64) (*segment, error) {
	return openSegmentNamed(fsys, dir, base, cfg, create, nowMs, "")
}

// openSegmentNamed opens a segment whose files carry an extra suffix
// (".swap" while the cleaner's output is swapped in); the segment's paths
// stay the final names.
func openSegmentNamed(fsys vfs.FS, dir string, base int64, cfg *LogConfig, create bool, nowMs int64, extra string) (*segment, error) {
	s := newSegment(dir, base, cfg, nowMs)
	s.pinned, s.filesOpen = true, true
	logFlag := os.O_RDWR
	idxFlag := os.O_RDWR | os.O_CREATE
	if create {
		logFlag |= os.O_CREATE | os.O_TRUNC
		idxFlag |= os.O_TRUNC
	}
	var err error
	if s.log, err = fsys.OpenFile(s.path(logSuffix)+extra, logFlag, 0o644); err != nil {
		return nil, err
	}
	fi, err := fsys.OpenFile(s.path(indexSuffix)+extra, idxFlag, 0o644)
	if err != nil {
		s.log.Close()
		return nil, err
	}
	ft, err := fsys.OpenFile(s.path(timeIndexSuffix)+extra, idxFlag, 0o644)
	if err != nil {
		s.log.Close()
		fi.Close()
		return nil, err
	}
	s.offIdx.f, s.timeIdx.f = fi, ft
	if create {
		s.rollTsKnown = true
	}
	return s, nil
}

// newSegment is a segment with no files open yet.
func newSegment(dir string, base int64, cfg *LogConfig, nowMs int64) *segment {
	s := &segment{base: base, dir: dir, rollTs: -1, createdMs: nowMs}
	s.times.set(-1, -1)
	s.offIdx = newIndex(nil, offsetIndexEntrySize, cfg.SegmentIndexBytes)
	s.timeIdx = newIndex(nil, timeIndexEntrySize, cfg.SegmentIndexBytes)
	s.offIdx.setLoaded(nil)
	s.timeIdx.setLoaded(nil)
	return s
}

// adopt makes l the segment's owner, sharing the store's cache of open
// segments.
func (s *segment) adopt(l *Log) {
	s.owner, s.cache = l, l.store.openSegs
}

// close closes the segment's files for good.
func (s *segment) close() error {
	s.closeMu.Lock()
	s.closed = true
	err := s.closeFilesLocked()
	if e := s.closeTxn(); err == nil {
		err = e
	}
	s.closeMu.Unlock()
	if s.cache != nil {
		s.cache.remove(s)
	}
	return err
}

// syncIndexes fsyncs both index files and the .txnindex, reopening them
// if the cache closed them (an idle active segment may be closed with
// index data not yet fsynced). A segment already closed for good was
// retired (its data lives on in the segments that replaced it, synced
// before the swap), so there is nothing left to make durable.
func (s *segment) syncIndexes() error {
	err := s.withFiles(func() error {
		s.closeMu.Lock()
		defer s.closeMu.Unlock()
		if s.closed {
			return nil
		}
		if err := s.offIdx.f.Sync(); err != nil {
			return err
		}
		if err := s.syncTxn(); err != nil {
			return err
		}
		return s.timeIdx.f.Sync()
	})
	if errors.Is(err, errSegmentClosed) {
		return nil
	}
	return err
}

// finalizeLocked appends the time index entry for the largest timestamp,
// as Kafka does when a segment becomes inactive or is closed, so the last
// entry of a closed segment's time index is its largest timestamp.
// REQUIRES: Log.mu held.
func (s *segment) finalizeLocked() error {
	if maxTs, off := s.times.get(); maxTs >= 0 && maxTs > s.timeIdx.last.key && !s.timeIdx.full() {
		return s.timeIdx.append(indexEntry{maxTs, off}, s.base)
	}
	return nil
}

// noteBatchLocked updates the writer's view after a batch of size bytes at
// pos was written, adding index entries when index.interval.bytes is due.
// REQUIRES: Log.mu held.
func (s *segment) noteBatchLocked(h recordbatch.Header, pos int64, size int64, interval int32) error {
	if ts := h.MaxTimestamp(); ts > s.times.max.Load() {
		s.times.set(ts, h.LastOffset())
	}
	if pos == 0 {
		s.rollTs, s.rollTsKnown = h.MaxTimestamp(), true
	}
	if s.bytesSinceIndex > int64(interval) {
		if err := s.offIdx.append(indexEntry{h.LastOffset(), pos}, s.base); err != nil {
			return err
		}
		if maxTs, off := s.times.get(); maxTs > s.timeIdx.last.key {
			if err := s.timeIdx.append(indexEntry{maxTs, off}, s.base); err != nil {
				return err
			}
		}
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += size
	return nil
}

// loadRollTsLocked reads the first batch's max timestamp, which segment.ms
// measures from (Kafka's rollingBasedTimestamp). REQUIRES: Log.mu held.
func (s *segment) loadRollTsLocked() {
	if s.rollTsKnown {
		return
	}
	s.rollTsKnown = true
	if s.size.Load() < recordbatch.HeaderSize {
		return
	}
	var b [recordbatch.HeaderSize]byte
	if _, err := s.log.ReadAt(b[:], 0); err != nil {
		return
	}
	if h, err := recordbatch.ParseHeader(b[:]); err == nil {
		s.rollTs = h.MaxTimestamp()
	}
}

// largestTimestamp is a segment's largest timestamp and the offset that
// carries it, readable while a lazy load sets them: set stores the offset
// first and get loads the timestamp first, so a reader that sees the
// timestamp sees its offset (a listed segment is loaded once; the
// active segment's pair changes only under Log.mu, where it is read).
type largestTimestamp struct {
	max, off atomic.Int64
}

func (t *largestTimestamp) set(maxTs, off int64) {
	t.off.Store(off)
	t.max.Store(maxTs)
}

func (t *largestTimestamp) get() (maxTs, off int64) {
	maxTs = t.max.Load()
	return maxTs, t.off.Load()
}
