package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// Record versions written, as Kafka 3.9 writes them: OffsetCommitKey v1,
// OffsetCommitValue v3 (v1 when the commit carries an expire timestamp,
// OffsetCommit v2-v4 retention), GroupMetadataKey v2, GroupMetadataValue v3.
const (
	offsetKeyVersion         = 1
	offsetValueVersion       = 3
	offsetValueExpireVersion = 1
	groupKeyVersion          = 2
	groupValueVersion        = 3
)

// loadChunk is how many bytes one read of __consumer_offsets returns at
// load time, bounding the memory loading takes beyond the state itself.
const loadChunk = 1 << 20

// maxDecompressed bounds one batch's inflated records when loading.
const maxDecompressed = 64 << 20

type topicPartition struct {
	topic     string
	partition int32
}

// offsetEntry is one committed offset.
type offsetEntry struct {
	offset          int64
	leaderEpoch     int32
	metadata        string
	commitTimestamp int64 // ms
	expireTimestamp int64 // ms; -1: none (KIP-211 expiry applies)
	// recordOffset is the offset of the commit's record in
	// __consumer_offsets. When a transaction commits, its offsets replace
	// committed ones only if written after them (Kafka's
	// replayEndTransactionMarker), so a regular commit made while the
	// transaction was open is kept.
	recordOffset int64
}

// offsetRecord is the key/value record of one committed offset (value nil:
// a tombstone).
func (g *group) offsetRecord(tp topicPartition, e *offsetEntry) recordbatch.Record {
	k := kmsg.OffsetCommitKey{Version: offsetKeyVersion, Group: g.id, Topic: tp.topic, Partition: tp.partition}
	r := recordbatch.Record{Key: k.AppendTo(nil)}
	if e != nil {
		v := kmsg.OffsetCommitValue{
			Version:         offsetValueVersion,
			Offset:          e.offset,
			LeaderEpoch:     e.leaderEpoch,
			Metadata:        e.metadata,
			CommitTimestamp: e.commitTimestamp,
		}
		if e.expireTimestamp >= 0 {
			v.Version = offsetValueExpireVersion
			v.ExpireTimestamp = e.expireTimestamp
		}
		r.Value = v.AppendTo(nil)
	}
	return r
}

// groupRecord is the group's metadata record (tombstone: a Dead group).
func (g *group) groupRecord(tombstone bool) recordbatch.Record {
	k := kmsg.GroupMetadataKey{Version: groupKeyVersion, Group: g.id}
	r := recordbatch.Record{Key: k.AppendTo(nil)}
	if tombstone {
		return r
	}
	v := kmsg.GroupMetadataValue{
		Version:               groupValueVersion,
		ProtocolType:          g.protocolType,
		Generation:            g.generation,
		Leader:                nil,
		CurrentStateTimestamp: g.stateSince.UnixMilli(),
	}
	if g.protocol != "" || len(g.members) > 0 {
		p := g.protocol
		v.Protocol = &p
	}
	if g.leader != "" {
		l := g.leader
		v.Leader = &l
	}
	for _, m := range g.members {
		v.Members = append(v.Members, kmsg.GroupMetadataValueMember{
			MemberID:               m.id,
			InstanceID:             m.instanceID,
			ClientID:               m.clientID,
			ClientHost:             m.clientHost,
			RebalanceTimeoutMillis: int32(m.rebalanceTimeout / time.Millisecond),
			SessionTimeoutMillis:   int32(m.sessionTimeout / time.Millisecond),
			Subscription:           m.metadataFor(g.protocol),
			Assignment:             nonNil(m.assignment),
		})
	}
	r.Value = v.AppendTo(nil)
	return r
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// storeGroup writes the group's metadata record.
func (g *group) storeGroup() error {
	return g.append([]recordbatch.Record{g.groupRecord(false)})
}

// append writes records as one batch to the group's partition of
// __consumer_offsets, creating the topic if needed.
func (g *group) append(recs []recordbatch.Record) error {
	_, err := g.appendBatch(recs, nil)
	return err
}

// appendBatch is append returning the batch's base offset (-1 when recs
// is empty); with txn set the batch is transactional, carrying the
// producer id and epoch, and goes through AppendWithOrigin so the
// partition checks the epoch and opens the producer's transaction.
func (g *group) appendBatch(recs []recordbatch.Record, txn *txnProducer) (int64, error) {
	if len(recs) == 0 {
		return -1, nil
	}
	t, err := g.c.EnsureOffsetsTopic()
	if err != nil {
		return -1, err
	}
	p := g.c.OffsetsPartition(g.id, int32(len(t.Partitions)))
	log, err := g.c.store.Log(OffsetsTopic, p)
	if err != nil {
		return -1, err
	}
	now := g.c.clock.Now().UnixMilli()
	for i := range recs {
		recs[i].OffsetDelta = int32(i)
	}
	spec := recordbatch.BatchSpec{
		BaseTimestamp: now,
		ProducerID:    -1,
		ProducerEpoch: -1,
		BaseSequence:  -1,
	}
	if txn != nil {
		// As Kafka's coordinator builds it: base sequence 0, the
		// transactional bit, the producer's id and epoch.
		spec.Transactional = true
		spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = txn.id, txn.epoch, 0
	}
	b, err := recordbatch.Build(spec, recs)
	if err != nil {
		return -1, err
	}
	var res partition.AppendResult
	switch {
	case txn != nil && txn.guard != nil:
		res, err = log.AppendVerified(b, recordbatch.OriginInternal, *txn.guard)
	case txn != nil:
		res, err = log.AppendWithOrigin(b, recordbatch.OriginInternal)
	default:
		res, err = log.Append(b)
	}
	if err != nil {
		return -1, err
	}
	return res.BaseOffset, nil
}

// appendErrorCode maps a failed __consumer_offsets write of offsets to
// what Kafka answers (GroupMetadataManager's commit error mapping).
func appendErrorCode(err error) int16 {
	switch {
	case errors.Is(err, partition.ErrRecordTooLarge), errors.Is(err, recordbatch.ErrBadLength):
		return kerr.InvalidCommitOffsetSize.Code
	case errors.Is(err, partition.ErrClosed), errors.Is(err, partition.ErrUnknownTopic):
		return kerr.CoordinatorNotAvailable.Code
	case errors.Is(err, partition.ErrStorage):
		// Kafka: KAFKA_STORAGE_ERROR -> NOT_COORDINATOR, so the client
		// looks the coordinator up again.
		return kerr.NotCoordinator.Code
	default:
		return kerr.UnknownServerError.Code
	}
}

// storeErrorCode is appendErrorCode for a group metadata write (Kafka's
// storeGroup mapping: a record too large is UNKNOWN_SERVER_ERROR there).
func storeErrorCode(err error) int16 {
	if code := appendErrorCode(err); code != kerr.InvalidCommitOffsetSize.Code {
		return code
	}
	return kerr.UnknownServerError.Code
}

// loadedGroup accumulates one group's records while loading.
type loadedGroup struct {
	meta    *kmsg.GroupMetadataValue
	offsets map[topicPartition]offsetEntry
	// txn holds the offsets of transactions not yet ended by a marker,
	// by producer id (an empty map: an open transaction whose offsets a
	// tombstone removed).
	txn map[int64]map[topicPartition]offsetEntry
	// consumer holds a KIP-848 group's records (consumer_records.go).
	consumer *loadedConsumer
	share    *loadedShare
	// streams holds a KIP-1071 group's records (streams_records.go).
	streams loadedStreams
}

// loader replays __consumer_offsets records, as Kafka's coordinator
// replays them: regular records in order, the last per key winning;
// transactional ones pending on their producer until its marker.
type loader struct {
	c    *Coordinator
	byID map[string]*loadedGroup
	// open is, per producer id, the groups its open transactions wrote
	// to in the partition being read (markers are per partition).
	open map[int64]map[string]struct{}
	// part is the partition being read; found is, per group id, the
	// partition its records were read from (one not PartitionFor's wins,
	// should there be two).
	part, n int32
	found   map[string]int32
}

func newLoader(c *Coordinator) *loader {
	return &loader{c: c, byID: map[string]*loadedGroup{}, open: map[int64]map[string]struct{}{}, found: map[string]int32{}}
}

// keyGroup is the group id every __consumer_offsets key starts with
// (after its int16 version; key versions are not flexible).
func keyGroup(key []byte) (string, bool) {
	if len(key) < 4 {
		return "", false
	}
	n := int(int16(binary.BigEndian.Uint16(key[2:4])))
	if n < 0 || 4+n > len(key) {
		return "", false
	}
	return string(key[4 : 4+n]), true
}

// noteFound records that group id has records in the partition being read.
func (l *loader) noteFound(key []byte) {
	id, ok := keyGroup(key)
	if !ok || l.n <= 0 {
		return
	}
	if p, seen := l.found[id]; seen && p != PartitionFor(id, l.n) {
		return // an earlier, unhashed partition stays the group's
	}
	l.found[id] = l.part
}

func (l *loader) get(id string) *loadedGroup {
	lg := l.byID[id]
	if lg == nil {
		lg = &loadedGroup{offsets: map[topicPartition]offsetEntry{}, txn: map[int64]map[topicPartition]offsetEntry{}}
		l.byID[id] = lg
	}
	return lg
}

// load reads every partition of __consumer_offsets: the last record per
// key wins and a tombstone deletes; transactional offsets are pending
// until their producer's marker in the same partition (commit: they
// replace committed offsets written before them; abort: dropped), and
// stay pending when no marker follows (the transaction coordinator
// completes them with CompleteTxnOffsets).
func (c *Coordinator) load() ([]*group, error) {
	t := c.store.Topic(OffsetsTopic)
	if t == nil {
		return nil, nil
	}
	l := newLoader(c)
	l.n = int32(len(t.Partitions))
	byID := l.byID
	for p, log := range t.Partitions {
		clear(l.open)
		l.part = int32(p)
		off := log.Offsets().LogStartOffset
		for {
			res, err := log.Read(off, loadChunk, true)
			if err != nil {
				return nil, fmt.Errorf("coordinator: loading %s-%d at offset %d: %w", OffsetsTopic, p, off, err)
			}
			if len(res.Records) == 0 {
				break
			}
			next := off
			for b := res.Records; len(b) > 0; {
				h, err := recordbatch.ParseHeader(b)
				if err != nil || h.Size() > len(b) {
					return nil, fmt.Errorf("coordinator: loading %s-%d at offset %d: %w", OffsetsTopic, p, off, recordbatch.ErrTruncated)
				}
				batch := b[:h.Size()]
				b = b[h.Size():]
				next = h.LastOffset() + 1
				if err := l.batch(h, batch); err != nil {
					// Recovery already dropped torn tails; a batch that
					// still does not decode is skipped rather than
					// keeping the broker from starting.
					c.log.Error().Err(err).Int("partition", p).Int64("offset", h.BaseOffset()).Msg("skipping undecodable __consumer_offsets batch")
				}
			}
			if next <= off {
				break
			}
			off = next
		}
	}
	for id, p := range l.found {
		if p != PartitionFor(id, l.n) {
			if c.loadedPartitions == nil {
				c.loadedPartitions = map[string]int32{}
			}
			c.loadedPartitions[id] = p
		}
	}
	if len(c.loadedPartitions) > 0 {
		c.log.Info().Int("groups", len(c.loadedPartitions)).Msg("groups found outside their hashed __consumer_offsets partition stay in theirs")
	}
	var out []*group
	for id, lg := range byID {
		consumer := lg.consumer != nil && lg.consumer.hasMeta
		share := lg.share != nil && lg.share.hasMeta
		streams := lg.streams.hasMetadata()
		if lg.meta == nil && len(lg.offsets) == 0 && len(lg.txn) == 0 && !consumer && !share && !streams {
			continue
		}
		g := newGroup(c, id)
		g.offsets = lg.offsets
		g.txnOffsets = lg.txn
		for pid := range lg.txn {
			c.txnIdx.add(pid, g)
		}
		if m := lg.meta; m != nil {
			g.protocolType = m.ProtocolType
			g.generation = m.Generation
			if m.Protocol != nil {
				g.protocol = *m.Protocol
			}
			if m.Leader != nil {
				g.leader = *m.Leader
			}
			if m.CurrentStateTimestamp > 0 {
				g.stateSince = time.UnixMilli(m.CurrentStateTimestamp)
			}
			now := c.clock.Now()
			for _, mm := range m.Members {
				mem := &member{
					id:               mm.MemberID,
					instanceID:       mm.InstanceID,
					clientID:         mm.ClientID,
					clientHost:       mm.ClientHost,
					rebalanceTimeout: time.Duration(mm.RebalanceTimeoutMillis) * time.Millisecond,
					sessionTimeout:   time.Duration(mm.SessionTimeoutMillis) * time.Millisecond,
					protocolType:     m.ProtocolType,
					protocols:        []protocol{{name: g.protocol, metadata: mm.Subscription}},
					assignment:       mm.Assignment,
				}
				if m.Version < 1 || mem.rebalanceTimeout <= 0 {
					mem.rebalanceTimeout = mem.sessionTimeout
				}
				mem.deadline = now.Add(mem.sessionTimeout)
				g.members[mem.id] = mem
				if mem.instanceID != nil {
					g.static[*mem.instanceID] = mem.id
				}
			}
			if len(g.members) > 0 {
				g.state = stateStable
			}
		}
		if consumer {
			g.consumerGroupLoaded(lg.consumer)
		} else if streams {
			g.streamsGroupLoaded(lg.streams)
		}
		if share {
			g.shareGroupLoaded(lg.share)
		}
		g.publish()
		out = append(out, g)
	}
	return out, nil
}

// batch replays one batch read back from the log.
func (l *loader) batch(h recordbatch.Header, batch []byte) error {
	if h.Control() {
		// A transaction marker: one control record.
		done := false
		return recordbatch.ForEachRecord(batch, maxDecompressed, func(r recordbatch.Record) error {
			if done {
				return nil
			}
			done = true
			m, err := recordbatch.ParseEndTxnMarker(r)
			if err != nil {
				return err
			}
			l.marker(h.ProducerID(), m.Commit)
			return nil
		})
	}
	pid := recordbatch.NoProducerID
	if h.Transactional() {
		pid = h.ProducerID()
	}
	base := h.BaseOffset()
	return recordbatch.ForEachRecord(batch, maxDecompressed, func(r recordbatch.Record) error {
		l.record(r, base+int64(r.OffsetDelta), pid)
		return nil
	})
}

// marker ends producerID's transaction in the partition being read.
func (l *loader) marker(producerID int64, commit bool) {
	for id := range l.open[producerID] {
		lg := l.byID[id]
		if lg == nil {
			continue
		}
		pending, ok := lg.txn[producerID]
		if !ok {
			continue
		}
		delete(lg.txn, producerID)
		if !commit {
			continue
		}
		for tp, e := range pending {
			if cur, ok := lg.offsets[tp]; !ok || e.recordOffset > cur.recordOffset {
				lg.offsets[tp] = e
			}
		}
	}
	delete(l.open, producerID)
}

// record applies one __consumer_offsets record at offset recordOffset;
// producerID is that of its batch if transactional, else -1.
func (l *loader) record(r recordbatch.Record, recordOffset, producerID int64) {
	c := l.c
	if len(r.Key) < 2 {
		return
	}
	l.noteFound(r.Key)
	switch binary.BigEndian.Uint16(r.Key) {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(r.Key); err != nil {
			c.log.Warn().Err(err).Msg("skipping undecodable offset commit key")
			return
		}
		tp := topicPartition{k.Topic, k.Partition}
		if r.Value == nil {
			// As Kafka 4.x replays a tombstone: the committed offset
			// and any pending in the group's open transactions go.
			if lg := l.byID[k.Group]; lg != nil {
				delete(lg.offsets, tp)
				for _, p := range lg.txn {
					delete(p, tp)
				}
			}
			return
		}
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(r.Value); err != nil {
			c.log.Warn().Err(err).Str("group", k.Group).Msg("skipping undecodable offset commit value")
			return
		}
		e := offsetEntry{offset: v.Offset, leaderEpoch: -1, metadata: v.Metadata, commitTimestamp: v.CommitTimestamp, expireTimestamp: -1, recordOffset: recordOffset}
		if v.Version >= 3 {
			e.leaderEpoch = v.LeaderEpoch
		}
		if v.Version == 1 && v.ExpireTimestamp >= 0 {
			// Negative: none, as offsetRecord writes it back.
			e.expireTimestamp = v.ExpireTimestamp
		}
		lg := l.get(k.Group)
		if producerID == recordbatch.NoProducerID {
			lg.offsets[tp] = e
			return
		}
		p := lg.txn[producerID]
		if p == nil {
			p = map[topicPartition]offsetEntry{}
			lg.txn[producerID] = p
		}
		p[tp] = e
		groups := l.open[producerID]
		if groups == nil {
			groups = map[string]struct{}{}
			l.open[producerID] = groups
		}
		groups[k.Group] = struct{}{}
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(r.Key); err != nil {
			c.log.Warn().Err(err).Msg("skipping undecodable group metadata key")
			return
		}
		if r.Value == nil {
			if lg := l.byID[k.Group]; lg != nil {
				lg.meta = nil
			}
			return
		}
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(r.Value); err != nil {
			c.log.Warn().Err(err).Str("group", k.Group).Msg("skipping undecodable group metadata value")
			return
		}
		l.get(k.Group).meta = &v
	case recShareGroupMemberMetadata, recShareGroupMetadata, recShareGroupTargetMetadata,
		recShareGroupTargetMember, recShareGroupCurrentMember, recShareGroupStatePartition:
		l.shareRecord(r)
	case recStreamsGroupMetadata, recStreamsGroupPartitionMeta, recStreamsGroupMemberMetadata, recStreamsGroupTargetMetadata,
		recStreamsGroupTargetMember, recStreamsGroupCurrentMember, recStreamsGroupTopology:
		groupID, _, err := parseStreamsKey(binary.BigEndian.Uint16(r.Key), r.Key)
		if err != nil {
			c.log.Warn().Err(err).Msg("skipping undecodable streams group record key")
			return
		}
		lg := l.get(groupID)
		if lg.streams == nil {
			lg.streams = loadedStreams{}
		}
		lg.streams.apply(r.Key, r.Value)
	case recConsumerGroupMetadata, recConsumerGroupMemberMetadata, recConsumerGroupTargetMetadata,
		recConsumerGroupTargetMember, recConsumerGroupCurrentMember:
		typ := binary.BigEndian.Uint16(r.Key)
		groupID, memberID, err := parseConsumerKey(typ, r.Key)
		if err != nil {
			c.log.Warn().Err(err).Msg("skipping undecodable consumer group record key")
			return
		}
		lg := l.get(groupID)
		if lg.consumer == nil {
			lg.consumer = newLoadedConsumer()
		}
		if err := lg.consumer.apply(typ, memberID, r.Value); err != nil {
			c.log.Warn().Err(err).Str("group", groupID).Uint16("type", typ).Msg("skipping undecodable consumer group record")
		}
	}
}
