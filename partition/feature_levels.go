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

// featureLevelsFileLimit bounds the file read at start (a few short lines).
const featureLevelsFileLimit = 4096

// ReadFeatureLevels returns the feature levels file, or nil with no error
// if none was written.
func (s *Store) ReadFeatureLevels() ([]byte, error) {
	b, err := readFile(s.fs, filepath.Join(s.cfg.Dir, FeatureLevelsFile), featureLevelsFileLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
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
