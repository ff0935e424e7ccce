package recordbatch

import "errors"

// Errors beyond the header's (ErrTruncated, ErrBadLength, ErrBadMagic,
// ErrCRC, declared in header.go). Callers match them with errors.Is; the
// returned errors wrap them with details.
//
// Mapping to Kafka error codes (done in protocol/, which owns kerr; checked
// against Apache Kafka's ProduceRequest.validateRecords,
// ByteBufferLogInputStream, UnifiedLog.analyzeAndValidateRecords,
// LogValidator and DefaultRecordBatch/DefaultRecord):
//
//	ErrTruncated        CORRUPT_MESSAGE (2)   Kafka: batch size / isValid() -> CorruptRecordException
//	ErrBadLength        CORRUPT_MESSAGE (2)   Kafka: size < overhead or > max -> CorruptRecordException
//	ErrBadMagic         CORRUPT_MESSAGE (2)   magic outside 0..2 ("Invalid magic found in record");
//	                    INVALID_RECORD (87)   magic 0 or 1 on Produce v3+ ("only allowed to contain
//	                                          record batches with magic version 2"): the caller can
//	                                          tell them apart by the byte at offset 16
//	ErrCRC              CORRUPT_MESSAGE (2)   Kafka: "Record is corrupt (stored crc = ...)"
//	ErrUnknownCodec     CORRUPT_MESSAGE (2)   Kafka throws IllegalArgumentException("Unknown
//	                                          compression type id"), which surfaces as
//	                                          UNKNOWN_SERVER_ERROR; CORRUPT_MESSAGE is what it means
//	ErrCorruptCompressed CORRUPT_MESSAGE (2)  Kafka wraps the IOException in a KafkaException
//	                                          (UNKNOWN_SERVER_ERROR); again we answer what it means
//	ErrTooLarge         MESSAGE_TOO_LARGE (10) no Kafka twin (Kafka inflates as a stream); this
//	                                          code makes Java and franz-go producers split the batch
//	ErrCorruptRecords   INVALID_RECORD (87)   Kafka: DefaultRecord.readFrom and the batch iterator
//	                                          throw InvalidRecordException for bad framing, count
//	                                          mismatch ("Incorrect declared batch size") and
//	                                          non-incremental offsets
//	ErrInvalidBatch     INVALID_RECORD (87)   LogValidator.validateBatch for AppendOrigin.CLIENT:
//	                                          offset range vs count, control batch from a client,
//	                                          producer id with a negative base sequence; and
//	                                          UnifiedLog's "baseOffset ... should be 0"
var (
	// ErrUnknownCodec means attributes name a codec other than 0-4.
	ErrUnknownCodec = errors.New("recordbatch: unknown compression codec")
	// ErrCorruptCompressed means the compressed records do not decompress.
	ErrCorruptCompressed = errors.New("recordbatch: corrupt compressed records")
	// ErrTooLarge means the records would decompress past the caller's bound.
	ErrTooLarge = errors.New("recordbatch: decompressed records exceed limit")
	// ErrCorruptRecords means the records do not parse or do not agree with
	// the header: framing, varints, lengths, count, offset deltas.
	ErrCorruptRecords = errors.New("recordbatch: corrupt records")
	// ErrInvalidBatch means a well-formed batch breaks a rule Kafka applies
	// to batches from producers (see Origin).
	ErrInvalidBatch = errors.New("recordbatch: invalid batch")
)

// IsCorruption reports whether err says the bytes themselves are damaged
// (as opposed to well-formed but refused): what log recovery truncates at.
func IsCorruption(err error) bool {
	for _, e := range []error{ErrTruncated, ErrBadLength, ErrBadMagic, ErrCRC,
		ErrUnknownCodec, ErrCorruptCompressed, ErrCorruptRecords} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
