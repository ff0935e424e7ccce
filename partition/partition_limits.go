package partition

import (
	"fmt"
	"math"
	"syscall"
)

// Limits on partition counts, checked before anything is created, so a
// request that asks for more than the broker can hold is refused whole
// instead of failing half way (out of descriptors, say) with some
// partitions created.

// MaxPartitionsPerRequest is Kafka's bound on the partitions one request
// creates (ReplicationControlManager.MAX_PARTITIONS_PER_BATCH, and
// QuorumController.MAX_RECORDS_PER_USER_OP for CreatePartitions: one
// PartitionRecord per new partition). Past it Kafka 4.x refuses the whole
// request with POLICY_VIOLATION.
const MaxPartitionsPerRequest = 10_000

// Kafka's messages for a request over MaxPartitionsPerRequest:
// CreateTopics' validateTotalNumberOfPartitions, and the
// BoundedListTooLongException a CreatePartitions of as many records hits.
const (
	TooManyPartitionsCreateTopics     = "Excessively large number of partitions per request."
	TooManyPartitionsCreatePartitions = "Unable to perform excessively large batch operation."
)

// descriptorsPerPartition is what a busy partition keeps open: its
// active segment's .log, .index, .timeindex and .txnindex while it is
// appended to (segment_files.go).
const descriptorsPerPartition = 4

// idlePerBusyPartition is how many partitions the budget allows per busy
// partition the descriptors could hold at once.
const idlePerBusyPartition = 8

// partitionBudget is how many partitions the store may hold. An idle
// partition keeps no descriptor (its active segment is closed like an
// inactive one once a sweep finds it not appended to, and start-up opens
// each log's files only through the bounded cache), so start-up needs
// the cache's descriptors, not some per partition, and the broker can
// always start again. The bound left is on how many partitions could be
// busy at once: half the descriptor limit, less the idle segments'
// cache, at descriptorsPerPartition each (the other half is for
// connections, rolls and the metadata files), and idlePerBusyPartition
// partitions per busy one: (limit/2 - 3 x openSegments) x 8 / 4, 19,232
// at a limit of 20,000. Past the busy share appends fail with
// ErrResourceLimit, never the data dir. Kafka has no such bound (a broker
// past its limit takes its log dir offline).
func partitionBudget(fdLimit int64, openSegments int) int64 {
	if fdLimit <= 0 || fdLimit == math.MaxInt64 {
		return math.MaxInt64
	}
	half := max(0, fdLimit/2-3*int64(openSegments))
	if half > math.MaxInt64/idlePerBusyPartition {
		return math.MaxInt64 // no limit this large binds
	}
	return half * idlePerBusyPartition / descriptorsPerPartition
}

// openFileLimit is the process's soft RLIMIT_NOFILE (Go raises it to the
// hard limit at start-up), or unlimited if it cannot be read.
func openFileLimit() int64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(r.Cur)
}

// checkPartitionCount refuses adding partitions past the store's budget
// (POLICY_VIOLATION); the internal topics' partitions are outside it.
// REQUIRES: catalogMu held, so the count is current.
func (s *Store) checkPartitionCount(adding int64) error {
	s.mu.RLock()
	have := int64(0)
	for _, t := range s.topics {
		if !t.Internal { // exempt (CreateTopic), and not counted
			have += int64(len(t.Partitions))
		}
	}
	s.mu.RUnlock()
	if budget := partitionBudget(s.cfg.MaxOpenFiles, s.cfg.OpenSegments); have+adding > budget {
		return withDetail(ErrTooManyPartitions, fmt.Sprintf(
			"Unable to create %d partition(s): this broker would hold %d, more than the %d its open file limit of %d allows.",
			adding, have+adding, budget, s.cfg.MaxOpenFiles))
	}
	return nil
}
