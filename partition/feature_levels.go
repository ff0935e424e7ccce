package partition

import (
	"errors"
	"io/fs"
	"path/filepath"
)

// FeatureLevelsFile is the file in the data dir holding the finalized
// feature levels UpdateFeatures set (Kafka keeps them as FeatureLevelRecords
// in its metadata log). The protocol package owns the format.
const FeatureLevelsFile = "finalized-feature-levels"

// ReadFeatureLevels returns the feature levels file, or nil with no error
// if none was written.
func (s *Store) ReadFeatureLevels() ([]byte, error) {
	return s.readSmallFile(FeatureLevelsFile)
}

// WriteFeatureLevels replaces the feature levels file atomically and
// durably.
func (s *Store) WriteFeatureLevels(data []byte) error {
	if err := s.Offline(); err != nil {
		return err
	}
	if err := writeFileAtomic(s.fs, filepath.Join(s.cfg.Dir, FeatureLevelsFile), data); err != nil {
		return storageError(err)
	}
	return nil
}

// smallFileLimit bounds the small files of the data dir a coordinator owns
// (the producer id block, the feature levels): a few bytes each; anything
// larger is not ours.
const smallFileLimit = 4096

// readSmallFile returns the data dir's file name, or nil with no error if
// it does not exist.
func (s *Store) readSmallFile(name string) ([]byte, error) {
	b, err := readFile(s.fs, filepath.Join(s.cfg.Dir, name), smallFileLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}
