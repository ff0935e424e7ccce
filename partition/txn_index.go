package partition

// The aborted-transaction index, `<base>.txnindex`, in Kafka's format
// (TransactionIndex, AbortedTxn): one 34-byte entry per aborted
// transaction whose ABORT marker lies in the segment,
//
//	version int16 (0)  producerId int64  firstOffset int64
//	lastOffset int64 (the marker)  lastStableOffset int64 (at the abort)
//
// The file exists only once the segment has an entry, as in Kafka. Each
// segment keeps its entries in memory too (they are few: one per abort),
// published copy-on-write so fetches read them without the log's lock.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/kcompatd/kcompatd/internal/vfs"
	"github.com/kcompatd/kcompatd/recordbatch"
)

const (
	txnIndexSuffix   = ".txnindex"
	txnEntrySize     = 34
	txnIndexVersion  = 0
	maxTxnIndexBytes = 1 << 30 // refuse to load a larger file (junk, not an index)
)

// abortedEntry is one entry of a .txnindex.
type abortedEntry struct {
	producerID       int64
	firstOffset      int64
	lastOffset       int64
	lastStableOffset int64
}

func appendTxnEntry(b []byte, e abortedEntry) []byte {
	b = binary.BigEndian.AppendUint16(b, txnIndexVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(e.producerID))
	b = binary.BigEndian.AppendUint64(b, uint64(e.firstOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(e.lastOffset))
	return binary.BigEndian.AppendUint64(b, uint64(e.lastStableOffset))
}

var errBadTxnEntry = errors.New("partition: bad aborted-transaction index entry")

// decodeTxnEntries reads whole entries from b, stopping at the first that
// is not valid (wrong version, last offset before first offset); it
// returns the valid prefix and an error naming the bad entry, if any. A
// trailing partial entry is ignored (a torn write).
func decodeTxnEntries(b []byte) ([]abortedEntry, error) {
	out := make([]abortedEntry, 0, len(b)/txnEntrySize)
	for len(b) >= txnEntrySize {
		if v := int16(binary.BigEndian.Uint16(b)); v != txnIndexVersion {
			return out, fmt.Errorf("%w: version %d at entry %d", errBadTxnEntry, v, len(out))
		}
		e := abortedEntry{
			producerID:       int64(binary.BigEndian.Uint64(b[2:])),
			firstOffset:      int64(binary.BigEndian.Uint64(b[10:])),
			lastOffset:       int64(binary.BigEndian.Uint64(b[18:])),
			lastStableOffset: int64(binary.BigEndian.Uint64(b[26:])),
		}
		if e.firstOffset < 0 || e.lastOffset < e.firstOffset {
			return out, fmt.Errorf("%w: offsets [%d, %d] at entry %d", errBadTxnEntry, e.firstOffset, e.lastOffset, len(out))
		}
		out = append(out, e)
		b = b[txnEntrySize:]
	}
	return out, nil
}

// txnIndex is a segment's aborted-transaction index.
type txnIndex struct {
	path    string
	f       vfs.File // nil until the first entry, or when the file is absent
	entries []abortedEntry
	// unsynced: written since its last fsync; an fsync of a file the
	// cache closed reopens it (syncTxn). Guarded by closeMu.
	unsynced bool
}

// abortedEntries returns the segment's entries (immutable).
func (s *segment) abortedEntries() []abortedEntry {
	if p := s.aborted.Load(); p != nil {
		return *p
	}
	return nil
}

// loadTxnIndex reads the segment's .txnindex if there is one, keeping the
// entries whose marker lies in [base, next) (next < 0: no bound). A bad
// or out-of-range tail is cut off, as a torn write would leave it.
func (l *Log) loadTxnIndex(seg *segment, next int64) error {
	fsys := l.store.fs
	path := seg.path(txnIndexSuffix)
	f, err := fsys.OpenFile(path, os.O_RDWR, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		seg.aborted.Store(nil)
		return nil
	}
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	size := st.Size()
	if size > maxTxnIndexBytes {
		f.Close()
		return fmt.Errorf("partition: %s is %d bytes, larger than any index", path, size)
	}
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, 0); err != nil && size > 0 {
		f.Close()
		return err
	}
	entries, derr := decodeTxnEntries(buf)
	keep := entries[:0]
	for _, e := range entries {
		if e.lastOffset < seg.base || (next >= 0 && e.lastOffset >= next) {
			break
		}
		keep = append(keep, e)
	}
	if derr != nil || len(keep)*txnEntrySize != len(buf) {
		l.logger.Warn().Err(derr).Str("file", path).Int("entries", len(keep)).Msg("truncating aborted-transaction index")
		if err := f.Truncate(int64(len(keep) * txnEntrySize)); err != nil {
			f.Close()
			return err
		}
	}
	seg.closeMu.Lock()
	seg.txn.f = f
	seg.txn.entries = keep
	seg.publishAborted()
	seg.closeMu.Unlock()
	return nil
}

// publishAborted gives readers the current entries. Entries are only
// ever appended once published, so readers share the backing array
// (their view is capped at its length); truncation copies.
func (s *segment) publishAborted() {
	v := s.txn.entries[:len(s.txn.entries):len(s.txn.entries)]
	s.aborted.Store(&v)
}

// openTxnFileLocked opens the segment's .txnindex if it is not open: the
// file holds the entries (start-up closes the .txnindex of inactive
// segments once read, the idle sweep that of an idle active one), or is
// stale or missing. REQUIRES: closeMu held.
func (s *segment) openTxnFileLocked(fsys vfs.FS) error {
	if s.txn.f != nil {
		return nil
	}
	f, err := fsys.OpenFile(s.path(txnIndexSuffix), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := f.Truncate(int64(len(s.txn.entries) * txnEntrySize)); err != nil {
		f.Close()
		return err
	}
	s.txn.f = f
	return nil
}

// prepareAbortLocked opens the .txnindex before an abort marker is
// written, so that running out of descriptors refuses the marker rather
// than leaving it written without its entry. REQUIRES: Log.mu held.
func (s *segment) prepareAbortLocked(fsys vfs.FS) error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return errors.New("partition: segment closed")
	}
	return s.openTxnFileLocked(fsys)
}

// appendAbortedLocked adds an entry to the segment's .txnindex, creating
// the file on the first one. REQUIRES: Log.mu held.
func (s *segment) appendAbortedLocked(fsys vfs.FS, e abortedEntry) error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return errors.New("partition: segment closed")
	}
	if err := s.openTxnFileLocked(fsys); err != nil {
		return err
	}
	pos := int64(len(s.txn.entries) * txnEntrySize)
	if _, err := s.txn.f.WriteAt(appendTxnEntry(nil, e), pos); err != nil {
		s.txn.f.Truncate(pos)
		return err
	}
	s.txn.entries = append(s.txn.entries, e)
	s.txn.unsynced = true
	s.publishAborted()
	return nil
}

// truncateAbortedLocked drops the entries whose marker is at or past
// offset (Kafka's TransactionIndex.truncateTo). REQUIRES: Log.mu held or
// the log not yet published.
func (s *segment) truncateAbortedLocked(offset int64) error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	n := len(s.txn.entries)
	for n > 0 && s.txn.entries[n-1].lastOffset >= offset {
		n--
	}
	if n == len(s.txn.entries) {
		return nil
	}
	s.txn.entries = append([]abortedEntry(nil), s.txn.entries[:n]...)
	s.txn.unsynced = true
	if s.txn.f != nil {
		if err := s.txn.f.Truncate(int64(n * txnEntrySize)); err != nil {
			return err
		}
	} else {
		f, err := s.owner.store.fs.OpenFile(s.path(txnIndexSuffix), os.O_RDWR, 0o644)
		if err != nil {
			return err
		}
		err = f.Truncate(int64(n * txnEntrySize))
		if e := f.Close(); err == nil {
			err = e
		}
		if err != nil {
			return err
		}
	}
	s.publishAborted()
	return nil
}

// closeTxn closes the .txnindex file, if open. REQUIRES: closeMu held.
func (s *segment) closeTxn() error {
	if s.txn.f == nil {
		return nil
	}
	err := s.txn.f.Close()
	s.txn.f = nil
	return err
}

// syncTxn fsyncs the .txnindex file if open, or, if written since its
// last fsync and closed since (closeFilesLocked), reopened for the fsync.
// REQUIRES: closeMu held.
func (s *segment) syncTxn() error {
	if s.txn.f == nil {
		if !s.txn.unsynced {
			return nil
		}
		f, err := s.owner.store.fs.OpenFile(s.path(txnIndexSuffix)+s.fileExtra, os.O_RDWR, 0o644)
		if errors.Is(err, fs.ErrNotExist) {
			s.txn.unsynced = false
			return nil
		}
		if err != nil {
			return err
		}
		err = f.Sync()
		if e := f.Close(); err == nil {
			err = e
		}
		if err == nil {
			s.txn.unsynced = false
		}
		return err
	}
	if err := s.txn.f.Sync(); err != nil {
		return err
	}
	s.txn.unsynced = false
	return nil
}

// syncTxnIndex is syncTxn taking closeMu.
func (s *segment) syncTxnIndex() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	return s.syncTxn()
}

// collectAborted adds the segment's entries that overlap [from, upTo) to
// out and reports whether the search is complete: an entry's LSO at or
// past upTo means no later segment holds a transaction that started
// below upTo (Kafka's TransactionIndex.collectAbortedTxns).
func collectAborted(entries []abortedEntry, from, upTo int64, out []AbortedTxn) ([]AbortedTxn, bool) {
	for _, e := range entries {
		if e.lastOffset >= from && e.firstOffset < upTo {
			out = append(out, AbortedTxn{ProducerID: e.producerID, FirstOffset: e.firstOffset})
		}
		if e.lastStableOffset >= upTo {
			return out, true
		}
	}
	return out, false
}

// swapAbortedEntries prepares the .txnindex of a cleaner's output segment
// seg replacing old: the cleaner's own "<base>.txnindex.cleaned" if it
// wrote one (WriteCleanedTxnIndex; an empty one means no entries), else
// the old segments' entries whose ABORT marker the cleaned output still
// holds. The entries are written to cleanedPath (when there are any) and
// installed in seg; it reports whether the file exists.
func (l *Log) swapAbortedEntries(seg *segment, old []*segment, cleanedPath string) (bool, error) {
	fsys := l.store.fs
	if data, err := readFile(fsys, cleanedPath, maxTxnIndexBytes); err == nil {
		entries, derr := decodeTxnEntries(data)
		if derr != nil {
			return false, derr
		}
		if len(entries) == 0 {
			return false, fsys.Remove(cleanedPath)
		}
		seg.txn.entries = entries
		seg.publishAborted()
		return true, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	var cand []abortedEntry
	for _, s := range old {
		cand = append(cand, s.abortedEntries()...)
	}
	if len(cand) == 0 {
		return false, nil
	}
	markers, err := controlBatchOffsets(seg)
	if err != nil {
		return false, err
	}
	var keep []abortedEntry
	for _, e := range cand {
		if markers[e.lastOffset] {
			keep = append(keep, e)
		}
	}
	if len(keep) == 0 {
		return false, nil
	}
	if err := writeTxnIndexFile(fsys, cleanedPath, keep); err != nil {
		return false, err
	}
	seg.txn.entries = keep
	seg.publishAborted()
	return true, nil
}

// writeTxnIndexFile writes entries to a new file at path and fsyncs it.
func writeTxnIndexFile(fsys vfs.FS, path string, entries []abortedEntry) error {
	var buf []byte
	for _, e := range entries {
		buf = appendTxnEntry(buf, e)
	}
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(buf, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// controlBatchOffsets returns the base offsets of a segment's control
// batches, reading only batch headers.
func controlBatchOffsets(seg *segment) (map[int64]bool, error) {
	out := map[int64]bool{}
	size := seg.size.Load()
	var hb [recordbatch.HeaderSize]byte
	for pos := int64(0); pos+recordbatch.HeaderSize <= size; {
		if _, err := seg.log.ReadAt(hb[:], pos); err != nil {
			return nil, err
		}
		h := recordbatch.Header(hb[:])
		sz := int64(h.BatchLength()) + recordbatch.LogOverhead
		if sz < recordbatch.HeaderSize || pos+sz > size {
			return nil, errCorruptSegment(seg, pos)
		}
		if h.Control() {
			out[h.BaseOffset()] = true
		}
		pos += sz
	}
	return out, nil
}
