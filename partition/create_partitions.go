package partition

import "fmt"

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
	old, err := s.hostedTopic(name)
	if err != nil {
		return nil, err
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
	case total-cur > MaxPartitionsPerRequest:
		return nil, withDetail(ErrTooManyPartitions, TooManyPartitionsCreatePartitions)
	}
	if err := s.checkPartitionCount(int64(total - cur)); err != nil {
		return nil, err
	}
	parts := make([]*Log, cur, total)
	copy(parts, old.Partitions)
	t := &Topic{Name: old.Name, ID: old.ID, Config: old.Config, Overrides: old.Overrides, Internal: old.Internal, Partitions: parts}
	if validateOnly {
		return t, nil
	}
	if err := s.createLogs(t, total); err != nil {
		return nil, err
	}
	if err := s.writeCatalog(name, t); err != nil {
		s.discardLogs(t.Partitions[cur:])
		return nil, err
	}
	s.publishTopic(t)
	s.logger.Info().Str("topic", name).Int32("from", cur).Int32("to", total).Msg("partitions created")
	return t, nil
}
