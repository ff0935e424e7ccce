package partition

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"

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

// A resource limit is not a disk failure. Running out of file descriptors
// (EMFILE for the process, ENFILE for the system) while opening a file says
// nothing about the disk: Kafka hands the IOException to its
// LogDirFailureChannel all the same and takes the log dir offline, which
// one careless client creating topics can then do to every partition, and
// start-up may hit again. kcompatd fails only the request that hit it
// (ErrResourceLimit), writes nothing it could not complete, and keeps the
// dir online: no open failure leaves a half-written byte behind.

// isResourceLimit reports a failure that is the process's or the system's
// limit on open files, not the disk's.
func isResourceLimit(err error) bool {
	return errors.Is(err, ErrResourceLimit) || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// storageError wraps an I/O failure for the caller: ErrResourceLimit for a
// resource limit (the error chain kept, so markOffline sees it), else
// ErrStorage with the OS error's text.
func storageError(err error) error {
	if isResourceLimit(err) {
		if errors.Is(err, ErrResourceLimit) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrResourceLimit, err)
	}
	return fmt.Errorf("%w: %v", ErrStorage, err)
}

// offlineState is the data dir's failure, set once.
type offlineState struct {
	cause atomic.Pointer[error]
}

// markOffline takes the data dir offline because of err (the first cause
// is kept and logged once), unless err is a resource limit.
func (s *Store) markOffline(err error) {
	if err == nil {
		return
	}
	if isResourceLimit(err) {
		s.logger.Warn().Err(err).Str("dir", s.cfg.Dir).Msg("out of file descriptors; the log dir stays online")
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
	if isResourceLimit(err) {
		return // nothing was written (isResourceLimit)
	}
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
		return storageError(err)
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
