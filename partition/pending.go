package partition

import "github.com/kcompatd/kcompatd/recordbatch"

// PendingAppend is a batch written to the log whose answer waits for the
// flush policy: with flush.messages due, the batch is not acknowledged,
// nor visible below the high watermark, until an fsync covers it. Produce
// writes every partition of a request first and then waits for them
// together, so that their fsyncs run at once rather than one after the
// other, and a connection can write its next request's batches while
// this one's fsync runs (the next fsync of the log covers them all).
type PendingAppend struct {
	l       *Log
	w       appended
	res     AppendResult
	size    int // bytes and records of the batch, for the observer
	records int
}

// AppendWithConfigPending is AppendWithConfig returning once the batch is
// written: its result and error come from Wait, which must be called.
// err is an append that failed before writing (nothing to wait for).
func (l *Log) AppendWithConfigPending(cfg *LogConfig, batch []byte, guard *TxnVerificationGuard) (p PendingAppend, err error) {
	_, err = l.appendPending(batch, recordbatch.OriginClient, nil, guard, cfg, &p)
	return p, err
}

// NeedsSync reports whether Wait will wait for an fsync.
func (p *PendingAppend) NeedsSync() bool {
	if p.w.dup != nil {
		return p.l.hw.Load().offset < p.w.base
	}
	return p.w.needSync
}

// Wait returns the append's answer once the batch is as durable as the
// flush policy asks: for a duplicate, once the original is.
func (p *PendingAppend) Wait() (AppendResult, error) {
	l, w, res := p.l, p.w, p.res
	if w.dup != nil {
		// The original may still be waiting for its fsync (a retry on
		// another connection): acknowledge the duplicate only once the
		// original is as durable as its own answer would be.
		if hw := l.hw.Load().offset; hw < w.base {
			if err := l.syncTo(w.base); err != nil {
				return res, storageError(err)
			}
		}
		return *w.dup, nil
	}
	if w.needSync {
		if err := l.syncTo(w.mark.offset); err != nil {
			if l.gone.Load() {
				return res, l.goneErr()
			}
			return res, storageError(err)
		}
		l.advanceHW(w.mark)
	}
	// The log may have closed since appendUnderLock returned (DeleteTopics):
	// notify is safe against that.
	l.notify()
	if o := l.store.cfg.Observer; o != nil {
		o.Appended(l.topic, p.size, p.records)
	}
	res.BaseOffset = w.base
	res.LogStartOffset = l.logStart.Load()
	return res, nil
}
