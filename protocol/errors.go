package protocol

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// errorMapping is the one table from Go errors to Kafka error codes,
// matched with errors.Is in order. The recordbatch rows follow the mapping
// documented in recordbatch/errors.go, checked against Kafka's
// ProduceRequest.validateRecords, UnifiedLog.analyzeAndValidateRecords and
// LogValidator.
var errorMapping = []struct {
	err  error
	code *kerr.Error
}{
	{partition.ErrTopicExists, kerr.TopicAlreadyExists},
	{partition.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{partition.ErrInvalidTopic, kerr.InvalidTopicException},
	{partition.ErrInvalidPartitions, kerr.InvalidPartitions},
	{partition.ErrInvalidConfig, kerr.InvalidConfig},
	{partition.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{partition.ErrRecordTooLarge, kerr.MessageTooLarge},
	{partition.ErrStorage, kerr.KafkaStorageError},
	// Out of file descriptors: Kafka takes the log dir offline and
	// answers KAFKA_STORAGE_ERROR from then on; kcompatd fails only this
	// request (partition/offline.go) with a code every client retries.
	// NOT_LEADER_OR_FOLLOWER, not REQUEST_TIMED_OUT: the Java consumer
	// retries it in a Fetch partition after a metadata refresh but throws
	// IllegalStateException on REQUEST_TIMED_OUT there ("Unexpected error
	// code"), while producers retry both.
	{partition.ErrResourceLimit, kerr.NotLeaderForPartition},
	{partition.ErrMetadataTooLarge, kerr.PolicyViolation},
	{partition.ErrTooManyPartitions, kerr.PolicyViolation},
	// A store closing under us is a broker going away: retriable, and it
	// makes clients refresh metadata.
	{partition.ErrClosed, kerr.NotLeaderForPartition},
	{partition.ErrCorruptBatch, kerr.CorruptMessage},
	{partition.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{partition.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{partition.ErrInvalidTxnState, kerr.InvalidTxnState},
	{partition.ErrTransactionCoordinatorFenced, kerr.TransactionCoordinatorFenced},

	{recordbatch.ErrTruncated, kerr.CorruptMessage},
	{recordbatch.ErrBadLength, kerr.CorruptMessage},
	{recordbatch.ErrBadMagic, kerr.CorruptMessage},
	{recordbatch.ErrCRC, kerr.CorruptMessage},
	{recordbatch.ErrUnknownCodec, kerr.CorruptMessage},
	{recordbatch.ErrCorruptCompressed, kerr.CorruptMessage},
	{recordbatch.ErrTooLarge, kerr.MessageTooLarge},
	{recordbatch.ErrCorruptRecords, kerr.InvalidRecord},
	{recordbatch.ErrInvalidBatch, kerr.InvalidRecord},
}

// errorCode maps a Go error to the Kafka error code a client sees. A
// *kerr.Error maps to itself; anything unmapped is UNKNOWN_SERVER_ERROR and
// is logged, since it means a bug or a failure nobody anticipated.
func (s *Server) errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	for _, m := range errorMapping {
		if errors.Is(err, m.err) {
			return m.code.Code
		}
	}
	s.log.Error().Err(err).Msg("unmapped error answered as UNKNOWN_SERVER_ERROR")
	return kerr.UnknownServerError.Code
}

// errorMessage is the message Kafka would send next to code for err: the
// error's own text when it carries Kafka's wording (partition's detail
// errors), else nil and the client falls back on the code's description.
// A storage error is always nil: its text is the OS error, for our log.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	for _, m := range errorMapping {
		if err == m.err {
			return nil // a bare sentinel carries no detail
		}
	}
	if errors.Is(err, partition.ErrStorage) || errors.Is(err, partition.ErrResourceLimit) {
		// Kafka sends no message with KAFKA_STORAGE_ERROR: its
		// ReplicaManager.appendToLocalLog answers a KafkaStorageException
		// with hasCustomErrorMessage = false, so LogAppendResult.errorMessage
		// is null and the client shows the code's default text. The OS
		// error stays in our log (Request.logStorageError).
		return nil
	}
	msg := err.Error()
	return &msg
}

// errorAnswer is errorCode and errorMessage for a failure of the request
// r on topic and partition part (-1: none; topic "": none), logging a
// storage failure's detail first.
func (s *Server) errorAnswer(r *Request, err error, topic string, part int32) (int16, *string) {
	r.logStorageError(err, topic, part)
	return s.errorCode(err), errorMessage(err)
}

// logStorageError logs, at Warn with the request's fields, the detail of a
// storage failure that r answers as KAFKA_STORAGE_ERROR with Kafka's
// message only. Other errors log nothing.
func (r *Request) logStorageError(err error, topic string, part int32) {
	if r.log == nil || !errors.Is(err, partition.ErrStorage) && !errors.Is(err, partition.ErrResourceLimit) {
		return
	}
	cid := ""
	if r.ClientID != nil {
		cid = *r.ClientID
	}
	ev := r.log.Warn().Err(err).Int16("api_key", r.Body.Key()).Int16("api_version", r.Version).
		Int32("correlation_id", r.CorrelationID).Str("client_id", cid)
	if topic != "" {
		ev = ev.Str("topic", topic)
	}
	if part >= 0 {
		ev = ev.Int32("partition", part)
	}
	ev.Msg("storage error answered with its Kafka code")
}
