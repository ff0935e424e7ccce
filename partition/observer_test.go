package partition

import (
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// countingObserver sums what it is told.
type countingObserver struct {
	mu                       sync.Mutex
	appended, records, reads map[string]int
	flushes                  int
}

func (o *countingObserver) Appended(topic string, bytes, records int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.appended[topic] += bytes
	o.records[topic] += records
}

func (o *countingObserver) Read(topic string, bytes int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.reads[topic] += bytes
}

func (o *countingObserver) Flushed(d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if d >= 0 {
		o.flushes++
	}
}

// The observer is told of each batch appended, of
// what ReadWith returns (not Read), and of each fsync.
func TestObserver(t *testing.T) {
	e := newEnv(t)
	obs := &countingObserver{appended: map[string]int{}, records: map[string]int{}, reads: map[string]int{}}
	s, err := Open(Config{Dir: e.dir, NodeID: 1, Clock: e.clock, Logger: zerolog.New(zerolog.NewTestWriter(t)), Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := mustCreate(t, s, "t", 1, map[string]string{"flush.messages": "1"}).Partitions[0]
	b1, b2 := mkBatch(t, 3, 1000, 10), mkBatch(t, 2, 1000, 20)
	mustAppend(t, l, b1)
	mustAppend(t, l, b2)
	if obs.appended["t"] != len(b1)+len(b2) || obs.records["t"] != 5 {
		t.Fatalf("appended %d bytes, %d records; want %d, 5", obs.appended["t"], obs.records["t"], len(b1)+len(b2))
	}
	if obs.flushes < 2 {
		t.Fatalf("%d fsyncs observed with flush.messages=1", obs.flushes)
	}
	if _, err := l.Read(0, 1<<20, true); err != nil {
		t.Fatal(err)
	}
	if obs.reads["t"] != 0 {
		t.Fatalf("Read told as %d bytes out", obs.reads["t"])
	}
	res, err := l.ReadWith(0, 1<<20, true, ReadUncommitted, nil)
	if err != nil || len(res.Records) != len(b1)+len(b2) {
		t.Fatalf("ReadWith: %d bytes, %v", len(res.Records), err)
	}
	if obs.reads["t"] != len(res.Records) {
		t.Fatalf("ReadWith told as %d bytes out, want %d", obs.reads["t"], len(res.Records))
	}
}
