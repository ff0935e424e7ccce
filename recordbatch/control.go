package recordbatch

import (
	"encoding/binary"
	"fmt"
)

// Control records (ControlRecordType.java, EndTransactionMarker.java). A
// control batch (attribute bit 5) holds one control record whose key is
//
//	version int16 (0)   type int16 (0 abort, 1 commit; KRaft uses more)
//
// and, for transaction markers, whose value is
//
//	version int16 (0)   coordinatorEpoch int32

// Control record types.
const (
	ControlAbort  int16 = 0
	ControlCommit int16 = 1
)

// EndTxnMarker is the content of a transaction marker.
type EndTxnMarker struct {
	Commit           bool
	CoordinatorEpoch int32
}

// ControlType returns the type of a control record from its key. Like
// Kafka it accepts key versions above 0 (reading the same prefix) but
// not negative ones.
func ControlType(r Record) (int16, error) {
	if len(r.Key) < 4 {
		return 0, fmt.Errorf("%w: control record key of %d bytes", ErrCorruptRecords, len(r.Key))
	}
	if v := int16(binary.BigEndian.Uint16(r.Key)); v < 0 {
		return 0, fmt.Errorf("%w: control record key version %d", ErrCorruptRecords, v)
	}
	return int16(binary.BigEndian.Uint16(r.Key[2:])), nil
}

// ParseEndTxnMarker reads a transaction marker record.
func ParseEndTxnMarker(r Record) (EndTxnMarker, error) {
	t, err := ControlType(r)
	if err != nil {
		return EndTxnMarker{}, err
	}
	if t != ControlAbort && t != ControlCommit {
		return EndTxnMarker{}, fmt.Errorf("%w: control type %d is not a transaction marker", ErrCorruptRecords, t)
	}
	if len(r.Value) < 6 {
		return EndTxnMarker{}, fmt.Errorf("%w: transaction marker value of %d bytes", ErrCorruptRecords, len(r.Value))
	}
	if v := int16(binary.BigEndian.Uint16(r.Value)); v < 0 {
		return EndTxnMarker{}, fmt.Errorf("%w: transaction marker version %d", ErrCorruptRecords, v)
	}
	return EndTxnMarker{Commit: t == ControlCommit, CoordinatorEpoch: int32(binary.BigEndian.Uint32(r.Value[2:]))}, nil
}

// BuildEndTxnMarker builds the control batch that ends a producer's
// transaction on one partition, as Kafka's
// MemoryRecords.withEndTransactionMarker does: transactional and control
// bits, no compression, one record at offset delta 0, base sequence -1.
func BuildEndTxnMarker(baseOffset int64, leaderEpoch int32, timestamp, producerID int64, producerEpoch int16, m EndTxnMarker) ([]byte, error) {
	typ := ControlAbort
	if m.Commit {
		typ = ControlCommit
	}
	key := binary.BigEndian.AppendUint16(make([]byte, 2, 4), uint16(typ))
	value := binary.BigEndian.AppendUint32(make([]byte, 2, 6), uint32(m.CoordinatorEpoch))
	return Build(BatchSpec{BaseOffset: baseOffset, LeaderEpoch: leaderEpoch, Transactional: true, Control: true,
		BaseTimestamp: timestamp, MaxTimestamp: timestamp, ProducerID: producerID, ProducerEpoch: producerEpoch,
		BaseSequence: NoSequence}, []Record{{Key: key, Value: value}})
}
