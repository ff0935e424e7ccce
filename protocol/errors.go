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
	{partition.ErrMetadataTooLarge, kerr.PolicyViolation},
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
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	for _, m := range errorMapping {
		if err == m.err {
			return nil // a bare sentinel carries no detail
		}
	}
	msg := err.Error()
	return &msg
}
