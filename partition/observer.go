package partition

import "time"

// Observer is told of appends, fetch reads and fsyncs, for metrics
// (internal/metrics implements it). Config.Observer nil observes nothing
// and costs nothing. Its methods run on the appending, reading or
// flushing goroutine, some under a log's locks: they must be quick, must
// not block and must not call back into the store.
type Observer interface {
	// Appended is told of a batch appended to a partition of topic: its
	// size as stored and its record count. Duplicates are not appended.
	Appended(topic string, bytes, records int)
	// Read is told of the bytes of batches ReadWith returned (a Fetch;
	// Read, which the coordinators load their topics with, is not told).
	// A long poll that read fewer than its MinBytes reads again after
	// waiting, and both reads are told.
	Read(topic string, bytes int)
	// Flushed is told of one fsync of a log (flushOnce) and its time.
	Flushed(d time.Duration)
}

// flushObserved is flushOnce, timed for the observer if there is one.
func (l *Log) flushObserved() (int64, error) {
	o := l.store.cfg.Observer
	if o == nil {
		return l.flushOnce()
	}
	start := time.Now() // real time: the disk's, not the injected clock's
	end, err := l.flushOnce()
	if err == nil {
		o.Flushed(time.Since(start))
	}
	return end, err
}
