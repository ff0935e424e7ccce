package sharestate

// The records of __share_group_state, in Kafka 4.3's schemas
// (share-coordinator's common/message/Share{Snapshot,Update}{Key,Value}.json).
// A key is its record type (int16) then its fields at version 0, not
// flexible; a value is its version (int16, 0) then its fields, flexible
// (compact arrays, tagged fields):
//
//	type  key (both)             value v0
//	0     ShareSnapshotKey       SnapshotEpoch, StateEpoch, LeaderEpoch int32,
//	        GroupId string       StartOffset int64, CreateTimestamp,
//	        TopicId uuid         WriteTimestamp int64, StateBatches [],
//	        Partition int32      tag 0: DeliveryCompleteCount int32 (default -1)
//	1     ShareUpdateKey         SnapshotEpoch, LeaderEpoch int32,
//	                             StartOffset int64, StateBatches [],
//	                             tag 0: DeliveryCompleteCount int32 (default -1)
//
// A state batch is FirstOffset, LastOffset int64, DeliveryState int8,
// DeliveryCount int16, then its (empty) tagged fields. A tombstone of a
// ShareSnapshotKey deletes the share-partition's state. These layouts are
// part of the on-disk format.

import (
	"errors"
	"math"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Record types (Kafka's share CoordinatorRecordType).
const (
	recShareSnapshot = 0
	recShareUpdate   = 1
)

// valueVersion is the one version of both values.
const valueVersion = 0

// tagDeliveryCompleteCount is DeliveryCompleteCount's tag (KIP-1226).
const tagDeliveryCompleteCount = 0

// batchWireSize is the encoded size of one state batch.
const batchWireSize = 8 + 8 + 1 + 2 + 1

// errBadRecord is a __share_group_state record that does not decode.
var errBadRecord = errors.New("sharestate: malformed __share_group_state record")

// snapshotValue is ShareSnapshotValue; also the in-memory state of a
// share-partition (Kafka's ShareGroupOffset).
type snapshotValue struct {
	SnapshotEpoch         int32
	StateEpoch            int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32
	CreateTimestamp       int64
	WriteTimestamp        int64
	Batches               []StateBatch
}

// updateValue is ShareUpdateValue.
type updateValue struct {
	SnapshotEpoch         int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32
	Batches               []StateBatch
}

// appendKey encodes a record key of type typ.
func appendKey(dst []byte, typ int16, k Key) []byte {
	dst = kbin.AppendInt16(dst, typ)
	dst = kbin.AppendString(dst, k.GroupID)
	dst = kbin.AppendUuid(dst, k.TopicID)
	return kbin.AppendInt32(dst, k.Partition)
}

// parseKey decodes a record key: its type and share-partition.
func parseKey(b []byte) (int16, Key, error) {
	r := kbin.Reader{Src: b}
	typ := r.Int16()
	if typ != recShareSnapshot && typ != recShareUpdate {
		return typ, Key{}, errBadRecord
	}
	var k Key
	k.GroupID = r.String()
	k.TopicID = r.Uuid()
	k.Partition = r.Int32()
	if r.Complete() != nil || len(r.Src) != 0 {
		return typ, Key{}, errBadRecord
	}
	return typ, k, nil
}

func appendBatches(dst []byte, bs []StateBatch) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(bs))
	for _, b := range bs {
		dst = kbin.AppendInt64(dst, b.FirstOffset)
		dst = kbin.AppendInt64(dst, b.LastOffset)
		dst = kbin.AppendInt8(dst, b.DeliveryState)
		dst = kbin.AppendInt16(dst, b.DeliveryCount)
		dst = kbin.AppendUvarint(dst, 0)
	}
	return dst
}

func readBatches(r *kbin.Reader) []StateBatch {
	n := r.CompactArrayLen()
	if n < 0 || int(n) > len(r.Src)/batchWireSize {
		r.Span(len(r.Src) + 1) // invalidates the reader
		return nil
	}
	bs := make([]StateBatch, n)
	for i := range bs {
		bs[i] = StateBatch{FirstOffset: r.Int64(), LastOffset: r.Int64(), DeliveryState: r.Int8(), DeliveryCount: r.Int16()}
		skipTags(r, nil)
		if !validBatch(bs[i]) {
			r.Span(len(r.Src) + 1)
			return nil
		}
	}
	return bs
}

// validBatch: offsets from 0 up, first not past last, last below the
// largest offset (merging computes last+1).
func validBatch(b StateBatch) bool {
	return b.FirstOffset >= 0 && b.FirstOffset <= b.LastOffset && b.LastOffset < math.MaxInt64
}

// appendTags writes the tagged fields: DeliveryCompleteCount when it is
// not its default, as Kafka's generated code does.
func appendTags(dst []byte, dcc int32) []byte {
	if dcc == -1 {
		return kbin.AppendUvarint(dst, 0)
	}
	dst = kbin.AppendUvarint(dst, 1)
	dst = kbin.AppendUvarint(dst, tagDeliveryCompleteCount)
	dst = kbin.AppendUvarint(dst, 4)
	return kbin.AppendInt32(dst, dcc)
}

// skipTags reads a tagged-field section; dcc, if not nil, receives
// DeliveryCompleteCount. Unknown tags are skipped.
func skipTags(r *kbin.Reader, dcc *int32) {
	n := r.Uvarint()
	for i := uint32(0); i < n && r.Ok(); i++ {
		tag, size := r.Uvarint(), r.Uvarint()
		body := r.Span(int(size))
		if tag == tagDeliveryCompleteCount && dcc != nil && r.Ok() {
			if len(body) != 4 {
				r.Span(len(r.Src) + 1)
				return
			}
			br := kbin.Reader{Src: body}
			*dcc = br.Int32()
		}
	}
}

func (v *snapshotValue) appendTo(dst []byte) []byte {
	dst = kbin.AppendInt16(dst, valueVersion)
	dst = kbin.AppendInt32(dst, v.SnapshotEpoch)
	dst = kbin.AppendInt32(dst, v.StateEpoch)
	dst = kbin.AppendInt32(dst, v.LeaderEpoch)
	dst = kbin.AppendInt64(dst, v.StartOffset)
	dst = kbin.AppendInt64(dst, v.CreateTimestamp)
	dst = kbin.AppendInt64(dst, v.WriteTimestamp)
	dst = appendBatches(dst, v.Batches)
	return appendTags(dst, v.DeliveryCompleteCount)
}

// parseSnapshotValue decodes a ShareSnapshotValue; a version above 0 is
// read as 0 with its unknown fields, as Kafka reads a newer value.
func parseSnapshotValue(b []byte) (snapshotValue, error) {
	r := kbin.Reader{Src: b}
	v := snapshotValue{DeliveryCompleteCount: -1}
	if r.Int16() < 0 {
		return v, errBadRecord
	}
	v.SnapshotEpoch = r.Int32()
	v.StateEpoch = r.Int32()
	v.LeaderEpoch = r.Int32()
	v.StartOffset = r.Int64()
	v.CreateTimestamp = r.Int64()
	v.WriteTimestamp = r.Int64()
	v.Batches = readBatches(&r)
	skipTags(&r, &v.DeliveryCompleteCount)
	if r.Complete() != nil {
		return snapshotValue{}, errBadRecord
	}
	return v, nil
}

func (v *updateValue) appendTo(dst []byte) []byte {
	dst = kbin.AppendInt16(dst, valueVersion)
	dst = kbin.AppendInt32(dst, v.SnapshotEpoch)
	dst = kbin.AppendInt32(dst, v.LeaderEpoch)
	dst = kbin.AppendInt64(dst, v.StartOffset)
	dst = appendBatches(dst, v.Batches)
	return appendTags(dst, v.DeliveryCompleteCount)
}

// parseUpdateValue decodes a ShareUpdateValue.
func parseUpdateValue(b []byte) (updateValue, error) {
	r := kbin.Reader{Src: b}
	v := updateValue{DeliveryCompleteCount: -1}
	if r.Int16() < 0 {
		return v, errBadRecord
	}
	v.SnapshotEpoch = r.Int32()
	v.LeaderEpoch = r.Int32()
	v.StartOffset = r.Int64()
	v.Batches = readBatches(&r)
	skipTags(&r, &v.DeliveryCompleteCount)
	if r.Complete() != nil {
		return updateValue{}, errBadRecord
	}
	return v, nil
}
