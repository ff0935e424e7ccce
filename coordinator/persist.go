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
	if len(recs) == 0 {
		return nil
	}
	t, err := g.c.EnsureOffsetsTopic()
	if err != nil {
		return err
	}
	p := PartitionFor(g.id, int32(len(t.Partitions)))
	log, err := g.c.store.Log(OffsetsTopic, p)
	if err != nil {
		return err
	}
	now := g.c.clock.Now().UnixMilli()
	for i := range recs {
		recs[i].OffsetDelta = int32(i)
	}
	b, err := recordbatch.Build(recordbatch.BatchSpec{
		BaseTimestamp: now,
		ProducerID:    -1,
		ProducerEpoch: -1,
		BaseSequence:  -1,
	}, recs)
	if err != nil {
		return err
	}
	_, err = log.Append(b)
	return err
}

// appendErrorCode maps a failed __consumer_offsets write of offsets to
// what Kafka answers (GroupMetadataManager's commit error mapping).
func appendErrorCode(err error) int16 {
	switch {
	case errors.Is(err, partition.ErrRecordTooLarge), errors.Is(err, recordbatch.ErrBadLength):
		return kerr.InvalidCommitOffsetSize.Code
	case errors.Is(err, partition.ErrClosed), errors.Is(err, partition.ErrUnknownTopic):
		return kerr.CoordinatorNotAvailable.Code
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
}

// load reads every partition of __consumer_offsets: the last record per
// key wins and a tombstone deletes.
func (c *Coordinator) load() ([]*group, error) {
	t := c.store.Topic(OffsetsTopic)
	if t == nil {
		return nil, nil
	}
	byID := map[string]*loadedGroup{}
	get := func(id string) *loadedGroup {
		lg := byID[id]
		if lg == nil {
			lg = &loadedGroup{offsets: map[topicPartition]offsetEntry{}}
			byID[id] = lg
		}
		return lg
	}
	for p, log := range t.Partitions {
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
				if h.Control() {
					continue
				}
				err = recordbatch.ForEachRecord(batch, maxDecompressed, func(r recordbatch.Record) error {
					c.loadRecord(r, get, byID)
					return nil
				})
				if err != nil {
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
	var out []*group
	for id, lg := range byID {
		if lg.meta == nil && len(lg.offsets) == 0 {
			continue
		}
		g := newGroup(c, id)
		g.offsets = lg.offsets
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
		g.publish()
		out = append(out, g)
	}
	return out, nil
}

// loadRecord applies one __consumer_offsets record.
func (c *Coordinator) loadRecord(r recordbatch.Record, get func(string) *loadedGroup, byID map[string]*loadedGroup) {
	if len(r.Key) < 2 {
		return
	}
	switch binary.BigEndian.Uint16(r.Key) {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(r.Key); err != nil {
			c.log.Warn().Err(err).Msg("skipping undecodable offset commit key")
			return
		}
		tp := topicPartition{k.Topic, k.Partition}
		if r.Value == nil {
			if lg := byID[k.Group]; lg != nil {
				delete(lg.offsets, tp)
			}
			return
		}
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(r.Value); err != nil {
			c.log.Warn().Err(err).Str("group", k.Group).Msg("skipping undecodable offset commit value")
			return
		}
		e := offsetEntry{offset: v.Offset, leaderEpoch: -1, metadata: v.Metadata, commitTimestamp: v.CommitTimestamp, expireTimestamp: -1}
		if v.Version >= 3 {
			e.leaderEpoch = v.LeaderEpoch
		}
		if v.Version == 1 {
			e.expireTimestamp = v.ExpireTimestamp
		}
		get(k.Group).offsets[tp] = e
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(r.Key); err != nil {
			c.log.Warn().Err(err).Msg("skipping undecodable group metadata key")
			return
		}
		if r.Value == nil {
			if lg := byID[k.Group]; lg != nil {
				lg.meta = nil
			}
			return
		}
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(r.Value); err != nil {
			c.log.Warn().Err(err).Str("group", k.Group).Msg("skipping undecodable group metadata value")
			return
		}
		get(k.Group).meta = &v
	}
}
