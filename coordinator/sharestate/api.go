// Package sharestate is the share coordinator: the durable state of every
// share-partition (KIP-932), kept in __share_group_state as Kafka's
// ShareSnapshot and ShareUpdate records, and the Persister the share-fetch
// path and the group coordinator call, as Kafka's Persister
// (initialize/read/write/delete/readSummary of share group state).
package sharestate

// Key names one share-partition: a share group's view of one topic
// partition (Kafka's SharePartitionKey).
type Key struct {
	GroupID   string
	TopicID   [16]byte
	Partition int32
}

// StateBatch is a range of in-flight offsets in one delivery state, as
// WriteShareGroupState and ReadShareGroupState carry them.
type StateBatch struct {
	FirstOffset   int64
	LastOffset    int64
	DeliveryState int8 // 0 available, 2 acknowledged, 4 archived (Kafka's RecordState ids)
	DeliveryCount int16
}

// State is a share-partition's persisted state, as ReadShareGroupState
// answers it.
type State struct {
	StateEpoch  int32
	LeaderEpoch int32
	// StartOffset is the share-partition start offset; -1 when the state
	// exists but no start offset was written yet.
	StartOffset int64
	// DeliveryCompleteCount is the number of offsets at or above
	// StartOffset whose delivery is complete (-1 if not known).
	DeliveryCompleteCount int32
	Batches               []StateBatch
}

// Summary is what ReadShareGroupStateSummary answers: enough for
// DescribeShareGroupOffsets and its lag.
type Summary struct {
	StateEpoch            int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32
}

// Persister is the share-partition state store. Errors are Kafka error
// codes where Kafka's share coordinator answers one (a *kerr.Error), else a
// storage failure. Found is false when the share-partition has no state
// (never initialized, or deleted).
type Persister interface {
	// Initialize creates or resets the state (InitializeShareGroupState):
	// StartOffset and StateEpoch set, in-flight batches dropped. The group
	// coordinator calls it when a partition is first assigned in a share
	// group and for AlterShareGroupOffsets.
	Initialize(k Key, stateEpoch int32, startOffset int64) error
	// Read answers ReadShareGroupState; leaderEpoch is the reader's, and a
	// lower one than stored is FENCED_LEADER_EPOCH.
	Read(k Key, leaderEpoch int32) (st State, found bool, err error)
	// Write merges an update (WriteShareGroupState) into the state:
	// batches override what they overlap, offsets below a new StartOffset
	// (-1: unchanged) are dropped; a stale state or leader epoch is
	// FENCED_STATE_EPOCH / FENCED_LEADER_EPOCH. The write is durable when
	// it returns nil.
	Write(k Key, stateEpoch, leaderEpoch int32, startOffset int64, deliveryCompleteCount int32, batches []StateBatch) error
	// ReadSummary answers ReadShareGroupStateSummary.
	ReadSummary(k Key) (s Summary, found bool, err error)
	// Delete removes the state (DeleteShareGroupState; DeleteGroups and
	// DeleteShareGroupOffsets).
	Delete(k Key) error
}
