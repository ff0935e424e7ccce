package coordinator

// Producer ids: handed out in blocks of ProducerIDBlockSize, as Kafka's
// controller allocates them to brokers (AllocateProducerIds, KIP-730). The
// start of the next block is persisted before any id of the current block
// is handed out, so an id is never handed out twice, whatever the crash.
//
// File format (partition.ProducerIDsFile), big endian, 14 bytes:
//
//	+---------+-------------------+-----------+
//	| version | next block start  | CRC-32C   |
//	| int16=0 | int64             | of 0..9   |
//	+---------+-------------------+-----------+

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"sync"
)

// ProducerIDBlockSize is how many producer ids one persisted block holds
// (Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE).
const ProducerIDBlockSize = 1000

const producerIDsFileSize = 14

// errProducerIDsCorrupt marks a producer id block file that does not decode.
var errProducerIDsCorrupt = errors.New("coordinator: producer id block file corrupt")

// errProducerIDsExhausted is returned once every positive int64 was handed out.
var errProducerIDsExhausted = errors.New("coordinator: producer ids exhausted")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeProducerIDs is the file's bytes for next block start next.
func encodeProducerIDs(next int64) []byte {
	b := make([]byte, producerIDsFileSize)
	binary.BigEndian.PutUint16(b[0:], 0)
	binary.BigEndian.PutUint64(b[2:], uint64(next))
	binary.BigEndian.PutUint32(b[10:], crc32.Checksum(b[:10], castagnoli))
	return b
}

// decodeProducerIDs parses the file; nil or empty means no block was ever
// allocated (next block start 0).
func decodeProducerIDs(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if len(b) != producerIDsFileSize {
		return 0, fmt.Errorf("%w: %d bytes, want %d", errProducerIDsCorrupt, len(b), producerIDsFileSize)
	}
	if v := binary.BigEndian.Uint16(b[0:]); v != 0 {
		return 0, fmt.Errorf("%w: unknown version %d", errProducerIDsCorrupt, v)
	}
	if got, want := binary.BigEndian.Uint32(b[10:]), crc32.Checksum(b[:10], castagnoli); got != want {
		return 0, fmt.Errorf("%w: CRC mismatch", errProducerIDsCorrupt)
	}
	next := int64(binary.BigEndian.Uint64(b[2:]))
	if next < 0 {
		return 0, fmt.Errorf("%w: negative block start %d", errProducerIDsCorrupt, next)
	}
	return next, nil
}

// producerIDStore persists the next block start: the partition.Store in
// production, a fake in tests.
type producerIDStore interface {
	ReadProducerIDs() ([]byte, error)
	WriteProducerIDs([]byte) error
}

// producerIDManager hands out producer ids from durable blocks.
type producerIDManager struct {
	store producerIDStore

	mu   sync.Mutex
	next int64 // next id to hand out
	end  int64 // first id past the current block; next == end: allocate
}

func newProducerIDManager(store producerIDStore) (*producerIDManager, error) {
	b, err := store.ReadProducerIDs()
	if err != nil {
		return nil, err
	}
	start, err := decodeProducerIDs(b)
	if err != nil {
		return nil, err
	}
	// Nothing of a persisted block is known to be unused: start past it.
	return &producerIDManager{store: store, next: start, end: start}, nil
}

// generate returns a producer id never handed out before.
func (m *producerIDManager) generate() (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next == m.end {
		if m.end > math.MaxInt64-ProducerIDBlockSize {
			return -1, errProducerIDsExhausted
		}
		end := m.end + ProducerIDBlockSize
		if err := m.store.WriteProducerIDs(encodeProducerIDs(end)); err != nil {
			return -1, fmt.Errorf("coordinator: persisting producer id block: %w", err)
		}
		m.end = end
	}
	id := m.next
	m.next++
	return id, nil
}

// advancePast makes every id handed out from now on greater than highest,
// the highest producer id __transaction_state knows: if the block file
// was lost (or restored from an old backup), ids still held by
// transactional ids must not be handed out again. The new start is
// persisted before returning.
func (m *producerIDManager) advancePast(highest int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if highest < m.next {
		return nil
	}
	if highest >= math.MaxInt64-ProducerIDBlockSize {
		return errProducerIDsExhausted
	}
	start := highest + 1
	if err := m.store.WriteProducerIDs(encodeProducerIDs(start)); err != nil {
		return fmt.Errorf("coordinator: persisting producer id block: %w", err)
	}
	m.next, m.end = start, start
	return nil
}
