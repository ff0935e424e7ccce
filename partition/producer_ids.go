package partition

import "path/filepath"

// ProducerIDsFile is the file in the data dir holding the start of the next
// block of producer ids the transaction coordinator may hand out. Kafka
// keeps this in its metadata log (the controller's ProducerIdsRecord); a
// single broker without one keeps it here, written atomically (temp file,
// fsync, rename, fsync dir) before any id of a new block is used, so ids
// never repeat across restarts, even after kill -9.
const ProducerIDsFile = "producer-id-block"

// ReadProducerIDs returns the contents of the producer id block file, or
// nil with no error if it does not exist yet. The coordinator owns the
// format.
func (s *Store) ReadProducerIDs() ([]byte, error) {
	return s.readSmallFile(ProducerIDsFile)
}

// WriteProducerIDs replaces the producer id block file atomically and
// durably.
func (s *Store) WriteProducerIDs(data []byte) error {
	return writeFileAtomic(s.fs, filepath.Join(s.cfg.Dir, ProducerIDsFile), data)
}
