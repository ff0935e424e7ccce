// Package sharefetch is the share-fetch path of share groups (KIP-932):
// the share-partition state machine (Kafka's SharePartition), the share
// sessions of ShareFetch and ShareAcknowledge (ShareSessionCache) and the
// manager that holds both (SharePartitionManager). The durable state of
// each share-partition is kept by a sharestate.Persister: it is read when
// a share-partition is first used and written, before the acknowledgement
// is answered, after every change of a record's delivery state.
package sharefetch

import (
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcompatd/kcompatd/coordinator/sharestate"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// RecordState is a record's delivery state, with Kafka's RecordState ids
// (the ids are what the persister stores).
type RecordState int8

const (
	Available    RecordState = 0
	Acquired     RecordState = 1
	Acknowledged RecordState = 2
	// Archiving is Kafka's transient state of a record whose archival is
	// being written; here the write happens under the partition's lock,
	// so no record is ever seen in it.
	Archiving RecordState = 3
	Archived  RecordState = 4
)

func (s RecordState) String() string {
	switch s {
	case Available:
		return "AVAILABLE"
	case Acquired:
		return "ACQUIRED"
	case Acknowledged:
		return "ACKNOWLEDGED"
	case Archiving:
		return "ARCHIVING"
	case Archived:
		return "ARCHIVED"
	}
	return "UNKNOWN"
}

// Acknowledgement types of ShareFetch and ShareAcknowledge.
const (
	AckGap     int8 = 0
	AckAccept  int8 = 1
	AckRelease int8 = 2
	AckReject  int8 = 3
	AckRenew   int8 = 4
)

// Log is what a share-partition reads: a *partition.Log.
type Log interface {
	ReadWith(offset int64, maxBytes int32, minOne bool, iso partition.Isolation, alloc func(n int) []byte) (partition.ReadResult, error)
	Offsets() partition.Offsets
	OffsetForTimestamp(ts int64) (offset, timestamp int64, found bool, err error)
}

// Settings are a share group's effective settings (group configs over the
// broker's group.share.* defaults).
type Settings struct {
	LockDuration   time.Duration // share.record.lock.duration.ms
	DeliveryLimit  int16         // share.delivery.count.limit
	MaxRecordLocks int           // share.partition.max.record.locks
	Isolation      partition.Isolation
	// AutoOffsetReset is "earliest", "latest" or "by_duration:<ISO-8601>".
	AutoOffsetReset string
	RenewEnabled    bool // share.renew.acknowledge.enable
}

// inflight is one offset at or above the share-partition start offset.
type inflight struct {
	state  RecordState
	count  int16 // delivery count
	member string
	expiry time.Time // lock expiry while Acquired
}

// AcquiredRange is a range of acquired offsets with one delivery count,
// as ShareFetch's AcquiredRecords.
type AcquiredRange struct {
	FirstOffset, LastOffset int64
	DeliveryCount           int16
}

// AckBatch is one acknowledgement batch: a single type for the range, or
// one type per offset.
type AckBatch struct {
	FirstOffset, LastOffset int64
	Types                   []int8
}

// SharePartition is a share group's view of one topic partition: the
// share-partition start offset (SPSO), the end of what has been acquired,
// and the state of every offset between them.
type SharePartition struct {
	key       sharestate.Key
	log       Log
	persister sharestate.Persister

	mu         sync.Mutex
	loaded     bool
	stateEpoch int32
	start      int64 // SPSO
	recs       []inflight
	// onAvailable is called (without mu) when records become
	// acquirable again, so that waiting fetches look again.
	onAvailable func()
}

// newSharePartition is a share-partition whose state is loaded on first
// use.
func newSharePartition(k sharestate.Key, log Log, p sharestate.Persister, onAvailable func()) *SharePartition {
	return &SharePartition{key: k, log: log, persister: p, onAvailable: onAvailable}
}

// Loaded reports whether the state was read: a share-partition that
// failed to load is dropped by the manager (Kafka's
// removeSharePartitionFromCache), so that one with no state holds no
// memory.
func (sp *SharePartition) Loaded() bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.loaded
}

// end is the offset after the last one acquired once (Kafka's
// endOffset+1).
func (sp *SharePartition) end() int64 { return sp.start + int64(len(sp.recs)) }

// StartOffset is the SPSO.
func (sp *SharePartition) StartOffset() int64 {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.start
}

// errCode is the Kafka code of a persister or log error.
func errCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	if errors.Is(err, partition.ErrOffsetOutOfRange) {
		return kerr.OffsetOutOfRange.Code
	}
	return kerr.UnknownServerError.Code
}

// resetOffset resolves share.auto.offset.reset against the log.
func resetOffset(log Log, reset string, now time.Time) int64 {
	off := log.Offsets()
	switch {
	case reset == "earliest":
		return off.LogStartOffset
	case len(reset) > len("by_duration:") && reset[:len("by_duration:")] == "by_duration:":
		d, ok := ParseISODuration(reset[len("by_duration:"):])
		if !ok {
			return off.HighWatermark
		}
		o, _, found, err := log.OffsetForTimestamp(now.Add(-d).UnixMilli())
		if err != nil || !found {
			return off.HighWatermark
		}
		return o
	}
	return off.HighWatermark
}

// ResetOffset is the start offset share.auto.offset.reset gives a new
// share-partition of log (the group coordinator initializes with it).
func ResetOffset(log Log, reset string, now time.Time) int64 { return resetOffset(log, reset, now) }

// UninitializedMessage is the error message of a share-partition with no
// state: Kafka's share coordinator refuses the read (INVALID_REQUEST),
// which the share-partition leader answers as UNKNOWN_SERVER_ERROR.
const UninitializedMessage = "Read operation on uninitialized share partition not allowed."

// loadLocked reads the persisted state the first time; REQUIRES sp.mu.
// Only the group coordinator initializes a share-partition's state (when
// it assigns the partition): with none, nothing is created here.
func (sp *SharePartition) loadLocked(s Settings, now time.Time) (code int16, msg string) {
	if sp.loaded {
		return 0, ""
	}
	st, found, err := sp.persister.Read(sp.key, 0)
	if err != nil {
		return errCode(err), ""
	}
	if !found {
		return kerr.UnknownServerError.Code, UninitializedMessage
	}
	if st.StartOffset < 0 {
		so := resetOffset(sp.log, s.AutoOffsetReset, now)
		if err := sp.persister.Write(sp.key, st.StateEpoch, 0, so, 0, nil); err != nil {
			return errCode(err), ""
		}
		st = sharestate.State{StateEpoch: st.StateEpoch, StartOffset: so}
	}
	sp.stateEpoch = st.StateEpoch
	sp.start = st.StartOffset
	sp.recs = sp.recs[:0]
	batches := append([]sharestate.StateBatch(nil), st.Batches...)
	sort.Slice(batches, func(i, j int) bool { return batches[i].FirstOffset < batches[j].FirstOffset })
	for _, b := range batches {
		if b.LastOffset < sp.start || b.LastOffset < b.FirstOffset || b.LastOffset-sp.start > maxWindow {
			continue
		}
		for o := max(b.FirstOffset, sp.start); o <= b.LastOffset; o++ {
			for sp.end() <= o {
				sp.recs = append(sp.recs, inflight{state: Available})
			}
			state := RecordState(b.DeliveryState)
			if state != Acknowledged && state != Archived {
				state = Available // what was acquired is delivered again
			}
			sp.recs[o-sp.start] = inflight{state: state, count: b.DeliveryCount}
		}
	}
	sp.loaded = true
	sp.advanceLocked()
	return 0, ""
}

// maxWindow bounds the in-flight window a persisted state may describe,
// so a corrupt state cannot make the broker allocate without bound.
const maxWindow = 1 << 20

// advanceLocked moves the SPSO past completed records and past what the
// log no longer holds.
func (sp *SharePartition) advanceLocked() {
	lso := sp.log.Offsets().LogStartOffset
	if sp.start < lso {
		drop := lso - sp.start
		if drop >= int64(len(sp.recs)) {
			sp.recs = sp.recs[:0]
		} else {
			sp.recs = sp.recs[drop:]
		}
		sp.start = lso
	}
	n := 0
	for n < len(sp.recs) && (sp.recs[n].state == Acknowledged || sp.recs[n].state == Archived) {
		n++
	}
	if n > 0 {
		sp.start += int64(n)
		sp.recs = append(sp.recs[:0], sp.recs[n:]...)
	}
}

// releaseLocked makes an acquired record available again, or archives it
// once it was delivered DeliveryLimit times.
func releaseLocked(r *inflight, limit int16) {
	r.member, r.expiry = "", time.Time{}
	if r.count >= limit {
		r.state = Archived
	} else {
		r.state = Available
	}
}

// expireLocked releases the records whose acquisition lock timed out;
// true if any did.
func (sp *SharePartition) expireLocked(s Settings, now time.Time) bool {
	any := false
	for i := range sp.recs {
		r := &sp.recs[i]
		if r.state == Acquired && !r.expiry.After(now) {
			releaseLocked(r, s.DeliveryLimit)
			any = true
		}
	}
	return any
}

// NextExpiry is when the earliest acquisition lock times out (zero if
// none is held).
func (sp *SharePartition) NextExpiry() time.Time {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	var at time.Time
	for i := range sp.recs {
		if r := sp.recs[i]; r.state == Acquired && (at.IsZero() || r.expiry.Before(at)) {
			at = r.expiry
		}
	}
	return at
}

// Fetched is what one acquisition returns.
type Fetched struct {
	Records  []byte // whole batches; only the Acquired ranges are the member's
	Acquired []AcquiredRange
	Code     int16
	Message  string // with Code, when Kafka gives one
}

// Acquire acquires for member up to maxRecords available records (those
// released or timed out first, then new ones below the high watermark, or
// the last stable offset with read_committed), within the in-flight limit.
func (sp *SharePartition) Acquire(member string, maxRecords int, maxBytes int32, s Settings, now time.Time) Fetched {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if code, msg := sp.loadLocked(s, now); code != 0 {
		return Fetched{Code: code, Message: msg}
	}
	if sp.expireLocked(s, now) {
		if err := sp.writeLocked(sp.start, sp.end()-1, nil); err != nil {
			return Fetched{Code: errCode(err)}
		}
	}
	sp.advanceLocked()
	if maxRecords <= 0 {
		maxRecords = 500
	}
	from := sp.end()
	for i := range sp.recs {
		if sp.recs[i].state == Available {
			from = sp.start + int64(i)
			break
		}
	}
	limit := int64(s.MaxRecordLocks)
	if from == sp.end() && int64(len(sp.recs)) >= limit {
		return Fetched{}
	}
	bound := sp.log.Offsets().HighWatermark
	if s.Isolation == partition.ReadCommitted {
		bound = sp.log.Offsets().LastStableOffset
	}
	if from >= bound {
		return Fetched{}
	}
	rr, err := sp.log.ReadWith(from, maxBytes, true, s.Isolation, nil)
	if err != nil {
		if errors.Is(err, partition.ErrOffsetOutOfRange) {
			sp.advanceLocked()
			return Fetched{}
		}
		return Fetched{Code: errCode(err)}
	}
	ab := newAbortTracker(rr.AbortedTransactions)
	var out Fetched
	got := 0
	first, last := -1, -1 // byte range of the batches returned
	pos := 0
	archived := false
	for b := rr.Records; len(b) >= recordbatch.HeaderSize && got < maxRecords; {
		h, err := recordbatch.ParseHeader(b)
		if err != nil || h.Size() > len(b) {
			break
		}
		size := h.Size()
		lo, hi := max(h.BaseOffset(), from), h.LastOffset()
		skip := h.Control()
		if s.Isolation == partition.ReadCommitted && h.Transactional() {
			skip = ab.aborted(h) || skip
		}
		took := false
		for o := lo; o <= hi && got < maxRecords; o++ {
			if o >= sp.end() {
				if o-sp.start >= limit && !skip {
					break
				}
				for sp.end() <= o {
					sp.recs = append(sp.recs, inflight{state: Available})
				}
			}
			r := &sp.recs[o-sp.start]
			if r.state != Available {
				continue
			}
			if skip {
				// Control records and aborted transactions are not
				// delivered: archived as they are met.
				r.state = Archived
				archived = true
				continue
			}
			r.state, r.member, r.expiry = Acquired, member, now.Add(s.LockDuration)
			r.count++
			got++
			took = true
			n := len(out.Acquired)
			if n > 0 && out.Acquired[n-1].LastOffset == o-1 && out.Acquired[n-1].DeliveryCount == r.count {
				out.Acquired[n-1].LastOffset = o
			} else {
				out.Acquired = append(out.Acquired, AcquiredRange{FirstOffset: o, LastOffset: o, DeliveryCount: r.count})
			}
		}
		if took {
			if first < 0 {
				first = pos
			}
			last = pos + size
		}
		pos += size
		b = b[size:]
	}
	if first >= 0 {
		out.Records = rr.Records[first:last]
	}
	if archived {
		if err := sp.writeLocked(sp.start, sp.end()-1, nil); err != nil {
			return Fetched{Code: errCode(err)}
		}
		sp.advanceLocked()
	}
	return out
}

// abortTracker finds the batches of aborted transactions as Kafka's
// consumer does: walking the batches in order, a producer is aborting
// from its aborted transaction's first offset to its abort marker.
type abortTracker struct {
	pending  []partition.AbortedTxn // by first offset
	aborting map[int64]bool
}

func newAbortTracker(txns []partition.AbortedTxn) *abortTracker {
	t := &abortTracker{pending: append([]partition.AbortedTxn(nil), txns...), aborting: map[int64]bool{}}
	sort.Slice(t.pending, func(i, j int) bool { return t.pending[i].FirstOffset < t.pending[j].FirstOffset })
	return t
}

// aborted tells whether h, a transactional batch, is aborted; its abort
// marker (a control batch) ends the producer's aborted transaction.
func (t *abortTracker) aborted(h recordbatch.Header) bool {
	for len(t.pending) > 0 && t.pending[0].FirstOffset <= h.LastOffset() {
		t.aborting[t.pending[0].ProducerID] = true
		t.pending = t.pending[1:]
	}
	pid := h.ProducerID()
	if !t.aborting[pid] {
		return false
	}
	if h.Control() {
		delete(t.aborting, pid)
	}
	return true
}

// Acknowledge applies member's acknowledgements, all or none: every
// offset must be acquired by member (INVALID_RECORD_STATE), the types
// valid (INVALID_REQUEST). The change is written through the persister
// before Acknowledge returns.
func (sp *SharePartition) Acknowledge(member string, batches []AckBatch, renewAllowed bool, s Settings, now time.Time) int16 {
	sp.mu.Lock()
	code, released := sp.acknowledgeLocked(member, batches, renewAllowed, s, now)
	sp.mu.Unlock()
	if released && sp.onAvailable != nil {
		sp.onAvailable()
	}
	return code
}

func (sp *SharePartition) acknowledgeLocked(member string, batches []AckBatch, renewAllowed bool, s Settings, now time.Time) (int16, bool) {
	if code, _ := sp.loadLocked(s, now); code != 0 {
		return code, false
	}
	expired := sp.expireLocked(s, now)
	lo, hi := int64(-1), int64(-1)
	for _, b := range batches {
		if b.LastOffset < b.FirstOffset || len(b.Types) == 0 || len(b.Types) != 1 && int64(len(b.Types)) != b.LastOffset-b.FirstOffset+1 {
			return kerr.InvalidRequest.Code, false
		}
		for _, t := range b.Types {
			if t < AckGap || t > AckRenew || t == AckRenew && !renewAllowed {
				return kerr.InvalidRequest.Code, false
			}
		}
		if b.FirstOffset < sp.start || b.LastOffset >= sp.end() {
			return kerr.InvalidRecordState.Code, false
		}
		for o := b.FirstOffset; o <= b.LastOffset; o++ {
			if r := sp.recs[o-sp.start]; r.state != Acquired || r.member != member {
				return kerr.InvalidRecordState.Code, false
			}
		}
		if lo < 0 || b.FirstOffset < lo {
			lo = b.FirstOffset
		}
		hi = max(hi, b.LastOffset)
	}
	if len(batches) == 0 {
		return 0, false
	}
	snap := append([]inflight(nil), sp.recs...)
	start := sp.start
	released := expired
	durable := false
	for _, b := range batches {
		for o := b.FirstOffset; o <= b.LastOffset; o++ {
			t := b.Types[0]
			if len(b.Types) > 1 {
				t = b.Types[o-b.FirstOffset]
			}
			r := &sp.recs[o-sp.start]
			switch t {
			case AckAccept:
				r.state, r.member, r.expiry = Acknowledged, "", time.Time{}
			case AckGap, AckReject:
				r.state, r.member, r.expiry = Archived, "", time.Time{}
			case AckRelease:
				releaseLocked(r, s.DeliveryLimit)
				released = released || r.state == Available
			case AckRenew:
				r.expiry = now.Add(s.LockDuration)
				continue
			}
			durable = true
		}
	}
	if !durable && !expired {
		return 0, released
	}
	if expired {
		lo, hi = sp.start, sp.end()-1
	}
	sp.advanceLocked()
	if err := sp.writeLocked(lo, hi, nil); err != nil {
		sp.recs, sp.start = snap, start
		return errCode(err), false
	}
	return 0, released
}

// ReleaseMember releases every record member holds (its share session
// closed or it left the group).
func (sp *SharePartition) ReleaseMember(member string, s Settings, now time.Time) {
	sp.mu.Lock()
	any := false
	if sp.loaded {
		for i := range sp.recs {
			if r := &sp.recs[i]; r.state == Acquired && r.member == member {
				releaseLocked(r, s.DeliveryLimit)
				any = true
			}
		}
		if any {
			sp.advanceLocked()
			_ = sp.writeLocked(sp.start, sp.end()-1, nil) // the records are in memory; a failed write loses only delivery counts
		}
	}
	sp.mu.Unlock()
	if any && sp.onAvailable != nil {
		sp.onAvailable()
	}
}

// writeLocked writes the state of [lo, hi] (clipped to the window) and the
// SPSO through the persister.
func (sp *SharePartition) writeLocked(lo, hi int64, _ []sharestate.StateBatch) error {
	var batches []sharestate.StateBatch
	lo = max(lo, sp.start)
	hi = min(hi, sp.end()-1)
	complete := int32(0)
	for i := range sp.recs {
		if st := sp.recs[i].state; st == Acknowledged || st == Archived {
			complete++
		}
	}
	for o := lo; o <= hi; o++ {
		r := sp.recs[o-sp.start]
		st := r.state
		if st == Acquired {
			// Not persisted as such: after a restart an acquired
			// record is available again, with the count it had.
			st = Available
		}
		n := len(batches)
		if n > 0 && batches[n-1].LastOffset == o-1 && batches[n-1].DeliveryState == int8(st) && batches[n-1].DeliveryCount == r.count {
			batches[n-1].LastOffset = o
			continue
		}
		batches = append(batches, sharestate.StateBatch{FirstOffset: o, LastOffset: o, DeliveryState: int8(st), DeliveryCount: r.count})
	}
	return sp.persister.Write(sp.key, sp.stateEpoch, 0, sp.start, complete, batches)
}

// Snapshot is the in-memory state, for tests and DescribeShareGroupOffsets.
type Snapshot struct {
	StartOffset int64
	States      []RecordState
	Counts      []int16
}

// Snapshot copies the current state.
func (sp *SharePartition) Snapshot() Snapshot {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	s := Snapshot{StartOffset: sp.start}
	for _, r := range sp.recs {
		s.States = append(s.States, r.state)
		s.Counts = append(s.Counts, r.count)
	}
	return s
}
