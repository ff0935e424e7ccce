package partition

import "errors"

// Errors returned by the store and logs. protocol/ maps them to Kafka codes
// with errors.Is in one place.
var (
	ErrTopicExists       = errors.New("partition: topic already exists")                // TOPIC_ALREADY_EXISTS
	ErrUnknownTopic      = errors.New("partition: unknown topic or partition")          // UNKNOWN_TOPIC_OR_PARTITION
	ErrInvalidTopic      = errors.New("partition: invalid topic name")                  // INVALID_TOPIC_EXCEPTION
	ErrInvalidPartitions = errors.New("partition: invalid number of partitions")        // INVALID_PARTITIONS
	ErrInvalidConfig     = errors.New("partition: invalid config")                      // INVALID_CONFIG (wrapped with the detail)
	ErrOffsetOutOfRange  = errors.New("partition: offset out of range")                 // OFFSET_OUT_OF_RANGE
	ErrRecordTooLarge    = errors.New("partition: batch larger than max.message.bytes") // MESSAGE_TOO_LARGE
	ErrStorage           = errors.New("partition: storage error, log dir offline")      // KAFKA_STORAGE_ERROR
	ErrClosed            = errors.New("partition: store closed")
	// ErrResourceLimit is a request that ran out of file descriptors
	// (EMFILE, ENFILE): it failed alone, the data dir stays online
	// (offline.go).
	ErrResourceLimit = errors.New("partition: out of file descriptors")
	// ErrMetadataTooLarge refuses a change that would make a metadata file
	// (the topic catalog, the dynamic broker configs, the client quotas)
	// larger than start-up reads, so no request can leave a data dir the
	// next start refuses (POLICY_VIOLATION, wrapped with the detail).
	ErrMetadataTooLarge = errors.New("partition: metadata file over its size limit")
	// ErrTooManyPartitions refuses a request creating more partitions
	// than one request may (MaxPartitionsPerRequest) or the broker can
	// keep open (partition_limits.go): POLICY_VIOLATION, wrapped with
	// the detail. Nothing is created.
	ErrTooManyPartitions = errors.New("partition: too many partitions")
	// ErrCorruptBatch is returned by Append for bytes that are not one whole
	// v2 batch (CORRUPT_MESSAGE); protocol/ validates before appending, so
	// this is a last line of defence.
	ErrCorruptBatch = errors.New("partition: not one whole v2 record batch")

	// Producer state (producer_state.go), with Kafka's messages as detail.
	ErrOutOfOrderSequence           = errors.New("partition: out of order sequence number")           // OUT_OF_ORDER_SEQUENCE_NUMBER
	ErrInvalidProducerEpoch         = errors.New("partition: invalid producer epoch")                 // INVALID_PRODUCER_EPOCH
	ErrInvalidTxnState              = errors.New("partition: invalid transaction state")              // INVALID_TXN_STATE
	ErrTransactionCoordinatorFenced = errors.New("partition: transaction coordinator epoch is stale") // TRANSACTION_COORDINATOR_FENCED
)

// detailError wraps a sentinel with Kafka's wording of the problem, so that
// errors.Is matches the sentinel and Error() is the message clients see.
type detailError struct {
	sentinel error
	msg      string
}

func (e *detailError) Error() string { return e.msg }
func (e *detailError) Unwrap() error { return e.sentinel }

func withDetail(sentinel error, msg string) error { return &detailError{sentinel, msg} }
