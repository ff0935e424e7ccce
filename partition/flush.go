package partition

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// The group commit. Every fsync of a log's data runs on its flush loop:
// a goroutine started by the first waiter when none runs, which fsyncs
// (flushOnce: everything appended so far), publishes the high watermark,
// wakes the waiters, and starts the next fsync at once if anyone wants
// more, without a timer; it ends when nobody waits. Waiters (syncTo) never
// fsync themselves: an appender that arrives while an fsync runs is
// covered by the next one with every other appender of that moment, and
// a connection answering several requests (conn_pipeline.go) is not
// delayed by an fsync for someone else.

// errFlushPanic is what the waiters of a flush that panicked get; the log
// stays online and the next flush tries again.
var errFlushPanic = errors.New("partition: flush panicked")

// syncTo returns once every offset below target is fsynced, or with the
// error of a flush that was to cover it; on a closed or deleted log it
// starts no flush and returns goneErr for what is not yet fsynced.
func (l *Log) syncTo(target int64) error {
	l.fmu.Lock()
	defer l.fmu.Unlock()
	// Any flush begun from now on reads the log end offset after target
	// was taken (target is at most the log end offset), so covers it.
	mine := l.flushStarts
	for {
		if l.flushed.Load() >= target {
			return nil
		}
		if l.syncErr != nil {
			return l.syncErr
		}
		if l.softFail > mine {
			return l.softErr
		}
		if l.gone.Load() {
			// close has waited out the last flush and is closing the
			// files (set under fmu, so no loop starts after it).
			return l.goneErr()
		}
		l.syncWant = max(l.syncWant, target)
		if !l.syncing {
			l.syncing = true
			go l.flushLoop()
		}
		l.fcond.Wait()
	}
}

// flushLoop runs flushes while the recovery point is below what a waiter
// wants; it stops after a failure (a later waiter starts it again, unless
// the log is offline) or when nobody waits. Started with syncing set.
func (l *Log) flushLoop() {
	l.fmu.Lock()
	defer l.fmu.Unlock()
	for {
		l.flushStarts++
		n := l.flushStarts
		l.fmu.Unlock()
		end, err := l.flushRecovered()
		l.fmu.Lock()
		l.flushDone = n
		switch {
		case err == nil:
			if end > l.flushed.Load() {
				l.flushed.Store(end)
			}
		case isResourceLimit(err) || errors.Is(err, errFlushPanic):
			// Opening an idle segment's files failed (or the flush
			// panicked): nothing was synced or lost, the next flush
			// tries again.
			l.logger.Warn().Err(err).Msg("flush failed; the next one tries again")
			l.softFail, l.softErr = n, err
		default:
			l.syncErr = err
			l.syncFailed.Store(true)
			l.store.markOffline(err)
			l.logger.Error().Err(err).Msg("fsync failed, partition offline")
		}
		l.fcond.Broadcast()
		if err != nil || l.flushed.Load() >= l.syncWant {
			l.syncing = false
			return
		}
	}
}

// flushRecovered is flushObserved, a panic in it turned into
// errFlushPanic (logged), so that the loop's waiters are not left waiting.
// The directory is fsynced again by the next flush, in case this one took
// the flag and did not get to it.
func (l *Log) flushRecovered() (end int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			l.logger.Error().Str("panic", fmt.Sprint(r)).Bytes("stack", debug.Stack()).Msg("flush panicked")
			l.mu.Lock()
			l.dirDirty = true
			l.mu.Unlock()
			end, err = 0, errFlushPanic
		}
	}()
	return l.flushObserved()
}

// waitRunningFlush waits until a flush running now, if any, has returned
// (not for the loop to stop: under steady appends it may never).
func (l *Log) waitRunningFlush() {
	l.fmu.Lock()
	defer l.fmu.Unlock()
	n := l.flushStarts
	for l.syncing && l.flushDone < n {
		l.fcond.Wait()
	}
}
