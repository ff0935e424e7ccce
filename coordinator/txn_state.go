package coordinator

// Transaction metadata per transactional.id, as Kafka's TransactionMetadata
// keeps it, and its record in __transaction_state (TransactionLogKey v0,
// TransactionLogValue v1, the flexible version with PreviousProducerId,
// NextProducerId and ClientTransactionVersion that Kafka writes from
// transaction.version 1 on; v0 under level 0), in partition
// abs(transactionalId.hashCode) % partitions. Every transition is written
// there before it takes effect; New reads the topic back (the last record
// per id wins, a tombstone removes it).
//
// States and transitions (Kafka's TransactionState):
//
//	Empty           an id with a producer id and epoch, no transaction
//	  -> Ongoing          AddPartitionsToTxn / AddOffsetsToTxn; under TV2 a
//	                      Produce v12+ or TxnOffsetCommit v5 (implicit add)
//	  -> Empty            InitProducerId (epoch bumped; a new producer id
//	                      once the epoch is exhausted)
//	  -> Dead             transactional.id.expiration.ms after its last use
//	  -> PrepareAbort     EndTxn v5 abort with nothing open (TV2; also from
//	                      CompleteCommit and CompleteAbort)
//	Ongoing         partitions added; transaction.timeout.ms running from
//	                the first one
//	  -> PrepareCommit    EndTxn commit
//	  -> PrepareAbort     EndTxn abort; InitProducerId or the timeout,
//	                      which first bump the epoch so the producer is
//	                      fenced (PrepareEpochFence in Kafka, never written)
//	PrepareCommit   markers being written to every partition
//	PrepareAbort      (a crash here: completed at the next start)
//	  -> CompleteCommit / CompleteAbort   every marker written
//	CompleteCommit  as Empty, for the next transaction; an EndTxn retry of
//	CompleteAbort   the same outcome is answered NONE
//	Dead            removed: a tombstone is written, the id forgotten

import (
	"math"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// txnState is Kafka's TransactionState; the values are its ids in
// __transaction_state.
type txnState int8

const (
	txnEmpty             txnState = 0
	txnOngoing           txnState = 1
	txnPrepareCommit     txnState = 2
	txnPrepareAbort      txnState = 3
	txnCompleteCommit    txnState = 4
	txnCompleteAbort     txnState = 5
	txnDead              txnState = 6
	txnPrepareEpochFence txnState = 7
)

var txnStateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func (s txnState) String() string {
	if s >= 0 && int(s) < len(txnStateNames) {
		return txnStateNames[s]
	}
	return "Unknown"
}

// txnStateFromName is TransactionState.fromName.
func txnStateFromName(name string) (txnState, bool) {
	for i, n := range txnStateNames {
		if n == name {
			return txnState(i), true
		}
	}
	return 0, false
}

// expirationAllowed is TransactionState.isExpirationAllowed.
func (s txnState) expirationAllowed() bool {
	return s == txnEmpty || s == txnCompleteCommit || s == txnCompleteAbort
}

// Transaction versions of a client (Kafka's TransactionVersion): TV2 is
// KIP-890 part 2, used by EndTxn v5+.
const (
	tv0 int16 = 0
	tv2 int16 = 2
)

// noProducerID and noProducerEpoch are RecordBatch.NO_PRODUCER_ID/EPOCH.
const (
	noProducerID    int64 = -1
	noProducerEpoch int16 = -1
)

// epochExhausted is TransactionMetadata.isEpochExhausted: the last epoch
// is kept for the coordinator, so it can always fence a producer.
func epochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// txnData is one transactional id's metadata: the persisted fields plus
// lastProducerEpoch, which Kafka does not persist either.
type txnData struct {
	producerID       int64
	prevProducerID   int64 // producer id before the last transition (differs only right after a rotation)
	nextProducerID   int64 // TV2: the id taking over once an epoch-exhausting transaction completes
	producerEpoch    int16
	lastEpoch        int16 // the epoch before the last bump, for InitProducerId retries
	timeoutMs        int32
	state            txnState
	partitions       map[TopicPartition]struct{}
	startMs          int64 // when the first partition was added; -1 when none
	lastUpdateMs     int64
	clientTxnVersion int16
}

// clone copies d, with its own partition set.
func (d txnData) clone() txnData {
	parts := make(map[TopicPartition]struct{}, len(d.partitions))
	for p := range d.partitions {
		parts[p] = struct{}{}
	}
	d.partitions = parts
	return d
}

// sortedPartitions is d's partitions ordered by topic, then partition.
func (d *txnData) sortedPartitions() []TopicPartition {
	out := make([]TopicPartition, 0, len(d.partitions))
	for p := range d.partitions {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// Record versions (TransactionLog.keyToBytes / valueToBytes): the value
// is version 1, flexible, from transaction.version 1 on, version 0 below
// (TransactionVersion.transactionLogValueVersion).
const (
	txnKeyVersion   = 0
	txnValueVersion = 1
)

// txnValueVersionFor is the value version written under the finalized
// transaction.version level.
func txnValueVersionFor(level int16) int16 {
	if level >= 1 {
		return txnValueVersion
	}
	return 0
}

// txnRecord is the __transaction_state record of id's metadata d (nil d:
// a tombstone), its value at the latest version.
func txnRecord(id string, d *txnData) recordbatch.Record {
	return txnRecordAt(id, d, txnValueVersion)
}

// txnRecordAt is txnRecord with the value at version valueVersion (0:
// without the fields of transaction.version 1, previous and next producer
// ids and the client's transaction version, which Kafka drops too).
func txnRecordAt(id string, d *txnData, valueVersion int16) recordbatch.Record {
	k := kmsg.TxnMetadataKey{Version: txnKeyVersion, TransactionalID: id}
	r := recordbatch.Record{Key: k.AppendTo(nil)}
	if d == nil {
		return r
	}
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID = d.producerID
	v.PreviousProducerID = d.prevProducerID
	v.NextProducerID = d.nextProducerID
	v.ProducerEpoch = d.producerEpoch
	v.TimeoutMillis = d.timeoutMs
	v.State = kmsg.TransactionState(d.state)
	v.LastUpdateTimestamp = d.lastUpdateMs
	v.StartTimestamp = d.startMs
	v.ClientTransactionVersion = d.clientTxnVersion
	if d.state != txnEmpty { // Kafka writes null partitions for Empty
		v.Topics = []kmsg.TxnMetadataValueTopic{}
		for _, p := range d.sortedPartitions() {
			if n := len(v.Topics); n > 0 && v.Topics[n-1].Topic == p.Topic {
				v.Topics[n-1].Partitions = append(v.Topics[n-1].Partitions, p.Partition)
				continue
			}
			v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: p.Topic, Partitions: []int32{p.Partition}})
		}
	}
	r.Value = v.AppendTo(nil)
	return r
}

// decodeTxnRecord parses one __transaction_state record: ok is false for
// a record that is not transaction metadata or does not decode; d is nil
// for a tombstone. Bytes read at start-up are untrusted: nothing here
// panics or allocates beyond what the record holds.
func decodeTxnRecord(key, value []byte) (id string, d *txnData, ok bool) {
	var k kmsg.TxnMetadataKey
	if len(key) < 2 || k.ReadFrom(key) != nil || k.Version != txnKeyVersion {
		return "", nil, false
	}
	if value == nil {
		return k.TransactionalID, nil, true
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil || v.Version < 0 || v.Version > txnValueVersion {
		return "", nil, false
	}
	if v.State < 0 || int(v.State) > int(txnPrepareEpochFence) || v.ProducerID < 0 {
		return "", nil, false
	}
	d = &txnData{
		producerID:       v.ProducerID,
		prevProducerID:   noProducerID,
		nextProducerID:   noProducerID,
		producerEpoch:    v.ProducerEpoch,
		lastEpoch:        noProducerEpoch,
		timeoutMs:        v.TimeoutMillis,
		state:            txnState(v.State),
		partitions:       map[TopicPartition]struct{}{},
		startMs:          v.StartTimestamp,
		lastUpdateMs:     v.LastUpdateTimestamp,
		clientTxnVersion: tv0,
	}
	if v.Version >= 1 {
		d.prevProducerID = v.PreviousProducerID
		d.nextProducerID = v.NextProducerID
		d.clientTxnVersion = v.ClientTransactionVersion
	}
	if d.state != txnEmpty {
		for _, t := range v.Topics {
			for _, p := range t.Partitions {
				d.partitions[TopicPartition{t.Topic, p}] = struct{}{}
			}
		}
	}
	return k.TransactionalID, d, true
}
