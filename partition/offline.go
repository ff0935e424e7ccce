package partition

import (
	"fmt"
	"sync/atomic"

	"github.com/kcompatd/kcompatd/internal/vfs"
)

// The data dir is Kafka's one log dir. As Kafka's LogDirFailureChannel
// does, an I/O error on a write path (a write, an fsync, a segment roll, a
// checkpoint, the cleaner's swap) takes the whole dir offline, not just the
// log that hit it: the disk under every partition is suspect, and after a
// failed fsync no unsynced byte in it can be trusted. From then on every
// partition answers ErrStorage (KAFKA_STORAGE_ERROR) to appends, reads and
// offset lookups, topics can be neither created nor deleted, and no log is
// written, flushed or checkpointed any more (Close included); a restart
// recovers from what is durable. (Kafka with its
// only log dir offline halts the broker; a local broker that stays up and
// says why is easier to diagnose, and clients see the same retriable
// error either way.)

// offlineState is the data dir's failure, set once.
type offlineState struct {
	cause atomic.Pointer[error]
}

// markOffline takes the data dir offline because of err (the first cause
// is kept and logged once).
func (s *Store) markOffline(err error) {
	if err == nil {
		return
	}
	if s.offline.cause.CompareAndSwap(nil, &err) {
		s.logger.Error().Err(err).Str("dir", s.cfg.Dir).Msg("I/O error, log dir offline")
	}
}

// Offline returns nil while the data dir is online, else an error wrapping
// ErrStorage with the I/O error that took it offline.
func (s *Store) Offline() error {
	if p := s.offline.cause.Load(); p != nil {
		return fmt.Errorf("%w: %v", ErrStorage, *p)
	}
	return nil
}

// fail takes the log, and with it the data dir, offline because of err.
// REQUIRES: l.mu held.
func (l *Log) fail(err error) {
	if l.failed == nil {
		l.failed = err
	}
	l.store.markOffline(err)
}

// offlineLocked returns ErrStorage (wrapped) if the log or the data dir
// is offline: nothing may be written. REQUIRES: l.mu held.
func (l *Log) offlineLocked() error {
	if l.failed == nil && l.syncFailed.Load() {
		l.fmu.Lock()
		l.failed = l.syncErr
		l.fmu.Unlock()
	}
	if l.failed != nil {
		return fmt.Errorf("%w: %v", ErrStorage, l.failed)
	}
	return l.store.Offline()
}

// Offline returns nil while the log's data dir is online, else ErrStorage
// (wrapped): the partition answers KAFKA_STORAGE_ERROR to every request,
// as Kafka answers for a partition in an offline log dir.
func (l *Log) Offline() error { return l.store.Offline() }

// offlineOnError is the cleaner's output file: a failed write, fsync or
// truncation takes the data dir offline, as an IOException in Kafka's log
// cleaner does (LogCleaner hands it to the LogDirFailureChannel).
type offlineOnError struct {
	vfs.File
	store *Store
}

func (f offlineOnError) note(err error) error {
	if err != nil {
		f.store.markOffline(err)
		return fmt.Errorf("%w: %v", ErrStorage, err)
	}
	return nil
}

func (f offlineOnError) Write(b []byte) (int, error) {
	n, err := f.File.Write(b)
	return n, f.note(err)
}

func (f offlineOnError) WriteAt(b []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(b, off)
	return n, f.note(err)
}

func (f offlineOnError) Sync() error               { return f.note(f.File.Sync()) }
func (f offlineOnError) Truncate(size int64) error { return f.note(f.File.Truncate(size)) }
