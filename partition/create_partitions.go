package partition

import (
	"fmt"
	"path/filepath"
)

// CreatePartitions grows topic name to total partitions (CreatePartitions,
// KIP-195): the new partitions' logs are created empty, then the catalog is
// rewritten, and only then does the topic show them. Partitions never
// shrink: a total equal to or below the current count is
// ErrInvalidPartitions with Kafka's message. With validateOnly every check
// runs and nothing is written.
//
// A crash after some new directories exist but before the catalog names
// them leaves directories the next Open sets aside as stray, as Kafka does
// with logs its metadata does not know.
func (s *Store) CreatePartitions(name string, total int32, validateOnly bool) (*Topic, error) {
	s.catalogMu.Lock()
	defer s.catalogMu.Unlock()
	s.mu.RLock()
	old, ok := s.topics[name]
	closed := s.closed
	s.mu.RUnlock()
	switch {
	case closed:
		return nil, ErrClosed
	case !ok:
		return nil, withDetail(ErrUnknownTopic, "This server does not host this topic-partition.")
	}
	cur := int32(len(old.Partitions))
	switch {
	case total == cur:
		return nil, withDetail(ErrInvalidPartitions, fmt.Sprintf("Topic already has %d partition(s).", cur))
	case total < cur:
		return nil, withDetail(ErrInvalidPartitions, fmt.Sprintf(
			"The topic %s currently has %d partition(s); %d would not be an increase.", name, cur, total))
	case total > maxPartitions:
		return nil, withDetail(ErrInvalidPartitions, fmt.Sprintf(
			"Number of partitions %d is larger than the maximum of %d.", total, maxPartitions))
	}
	parts := make([]*Log, cur, total)
	copy(parts, old.Partitions)
	t := &Topic{Name: old.Name, ID: old.ID, Config: old.Config, Overrides: old.Overrides, Internal: old.Internal, Partitions: parts}
	if validateOnly {
		return t, nil
	}
	discard := func() {
		// Only the directories this call created: a failed open may
		// have found one it must not touch.
		for _, l := range t.Partitions[cur:] {
			l.close(true)
			s.fs.RemoveAll(l.dir)
		}
	}
	for p := cur; p < total; p++ {
		// Open set aside any directory of that name left by a crash
		// before the catalog was written, so create finds none.
		l, err := s.openLog(logParams{topic: name, partition: p, id: t.ID, cfg: t.Config, recoveryPoint: -1, logStart: -1, create: true})
		if err != nil {
			discard()
			return nil, fmt.Errorf("%w: creating %s-%d: %v", ErrStorage, name, p, err)
		}
		t.Partitions = append(t.Partitions, l)
	}
	if err := s.fs.SyncDir(s.cfg.Dir); err != nil {
		discard()
		return nil, fmt.Errorf("%w: %v", ErrStorage, err)
	}
	s.mu.RLock()
	next := make(map[string]*Topic, len(s.topics))
	for k, v := range s.topics {
		next[k] = v
	}
	s.mu.RUnlock()
	next[name] = t
	if err := writeFileAtomic(s.fs, filepath.Join(s.cfg.Dir, catalogFile), encodeCatalog(next)); err != nil {
		discard()
		return nil, fmt.Errorf("%w: writing catalog: %v", ErrStorage, err)
	}
	s.mu.Lock()
	s.topics[name] = t
	s.byID[t.ID] = t
	s.mu.Unlock()
	s.logger.Info().Str("topic", name).Int32("from", cur).Int32("to", total).Msg("partitions created")
	return t, nil
}
