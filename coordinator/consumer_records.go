package coordinator

// The records of KIP-848 consumer groups in __consumer_offsets, in
// Kafka's schemas (group-coordinator's common/message/ConsumerGroup*.json).
// A key is its record type (int16) then its fields, not flexible; a value
// is its version (int16, 0 for all of these) then its fields, flexible
// (compact strings and arrays, tagged fields):
//
//	type  key                                   value v0
//	3     ConsumerGroupMetadata{GroupId}         Epoch int32
//	5     ConsumerGroupMemberMetadata            InstanceId?, RackId?, ClientId,
//	        {GroupId, MemberId}                  ClientHost, SubscribedTopicNames [],
//	                                             SubscribedTopicRegex?,
//	                                             RebalanceTimeoutMs int32,
//	                                             ServerAssignor?,
//	                                             tag 0: ClassicMemberMetadata?
//	                                             {SessionTimeoutMs int32,
//	                                             SupportedProtocols [{Name,
//	                                             Metadata bytes}]} (a member
//	                                             of the classic protocol)
//	6     ConsumerGroupTargetAssignmentMetadata  AssignmentEpoch int32
//	        {GroupId}
//	7     ConsumerGroupTargetAssignmentMember    TopicPartitions [{TopicId uuid,
//	        {GroupId, MemberId}                  Partitions [int32]}]
//	8     ConsumerGroupCurrentMemberAssignment   MemberEpoch, PreviousMemberEpoch
//	        {GroupId, MemberId}                  int32, State int8,
//	                                             AssignedPartitions [],
//	                                             PartitionsPendingRevocation []
//
// Not written: ConsumerGroupPartitionMetadata (4; Kafka 4.1+ keeps a
// metadata hash instead, which we recompute from the topics on load) and
// ConsumerGroupRegularExpression (16; regexes are resolved again on load).
// Both are skipped when read. A record is written only when its value
// changed since it was last written.

import (
	"encoding/binary"
	"errors"
	"slices"
	"time"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// Consumer group record types (Kafka's CoordinatorRecordType).
const (
	recConsumerGroupMetadata       = 3
	recConsumerGroupPartitionMeta  = 4
	recConsumerGroupMemberMetadata = 5
	recConsumerGroupTargetMetadata = 6
	recConsumerGroupTargetMember   = 7
	recConsumerGroupCurrentMember  = 8
	recConsumerGroupRegex          = 16
)

// errBadConsumerRecord is a consumer group record that does not decode.
var errBadConsumerRecord = errors.New("coordinator: malformed consumer group record")

// recWriter appends Kafka's primitive types.
type recWriter struct{ b []byte }

func (w *recWriter) i8(v int8)   { w.b = append(w.b, byte(v)) }
func (w *recWriter) i16(v int16) { w.b = binary.BigEndian.AppendUint16(w.b, uint16(v)) }
func (w *recWriter) i32(v int32) { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *recWriter) uvarint(v uint64) {
	w.b = binary.AppendUvarint(w.b, v)
}

// str is a non-flexible (int16 length) string, as in keys.
func (w *recWriter) str(s string) { w.i16(int16(len(s))); w.b = append(w.b, s...) }

// cstr is a compact string; cnstr a compact nullable one.
func (w *recWriter) cstr(s string) { w.uvarint(uint64(len(s)) + 1); w.b = append(w.b, s...) }
func (w *recWriter) cnstr(s *string) {
	if s == nil {
		w.uvarint(0)
		return
	}
	w.cstr(*s)
}
func (w *recWriter) arrayLen(n int) { w.uvarint(uint64(n) + 1) }
func (w *recWriter) noTags()        { w.uvarint(0) }
func (w *recWriter) topicPartitions(s partSet) {
	ts := s.byTopic()
	w.arrayLen(len(ts))
	for _, t := range ts {
		w.b = append(w.b, t.id[:]...)
		w.arrayLen(len(t.partitions))
		for _, p := range t.partitions {
			w.i32(p)
		}
		w.noTags()
	}
}

// recReader reads them back; any error sticks.
type recReader struct {
	b   []byte
	err error
}

func (r *recReader) need(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.err = errBadConsumerRecord
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}
func (r *recReader) i8() int8 {
	if b := r.need(1); b != nil {
		return int8(b[0])
	}
	return 0
}
func (r *recReader) i16() int16 {
	if b := r.need(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}
func (r *recReader) i32() int32 {
	if b := r.need(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}
func (r *recReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errBadConsumerRecord
		return 0
	}
	r.b = r.b[n:]
	return v
}
func (r *recReader) str() string { return string(r.need(int(r.i16()))) }

// cnstr reads a compact nullable string.
func (r *recReader) cnstr() *string {
	n := r.uvarint()
	if n == 0 || r.err != nil {
		return nil
	}
	if n-1 > uint64(len(r.b)) {
		r.err = errBadConsumerRecord
		return nil
	}
	s := string(r.need(int(n - 1)))
	return &s
}
func (r *recReader) cstr() string {
	if s := r.cnstr(); s != nil {
		return *s
	}
	return ""
}

// arrayLen reads a compact array length, bounded by the bytes left (each
// element takes at least one byte).
func (r *recReader) arrayLen() int {
	n := r.uvarint()
	if n == 0 || r.err != nil {
		return 0
	}
	if n-1 > uint64(len(r.b)) {
		r.err = errBadConsumerRecord
		return 0
	}
	return int(n - 1)
}

// tags skips tagged fields.
func (r *recReader) tags() {
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		r.uvarint()
		r.need(int(r.uvarint()))
	}
}
func (r *recReader) topicPartitions() partSet {
	s := partSet{}
	for i, n := 0, r.arrayLen(); i < n && r.err == nil; i++ {
		var id partition.TopicID
		copy(id[:], r.need(16))
		for j, m := 0, r.arrayLen(); j < m && r.err == nil; j++ {
			s[topicIDPartition{id, r.i32()}] = struct{}{}
		}
		r.tags()
	}
	return s
}

func consumerKey(typ int16, groupID string, memberID *string) []byte {
	w := recWriter{}
	w.i16(typ)
	w.str(groupID)
	if memberID != nil {
		w.str(*memberID)
	}
	return w.b
}

func valueWriter() *recWriter {
	w := &recWriter{}
	w.i16(0)
	return w
}

func (g *group) cgMetadataRecord() recordbatch.Record {
	w := valueWriter()
	w.i32(g.cg.epoch)
	w.noTags()
	return recordbatch.Record{Key: consumerKey(recConsumerGroupMetadata, g.id, nil), Value: w.b}
}

func (g *group) cgMemberRecords(m *cgMember) []recordbatch.Record {
	id := m.id
	meta := valueWriter()
	meta.cnstr(m.instanceID)
	meta.cnstr(m.rackID)
	meta.cstr(m.clientID)
	meta.cstr(m.clientHost)
	meta.arrayLen(len(m.subscribedNames))
	for _, n := range m.subscribedNames {
		meta.cstr(n)
	}
	var regex, assignor *string
	if m.regex != "" {
		regex = &m.regex
	}
	if m.serverAssignor != "" {
		assignor = &m.serverAssignor
	}
	meta.cnstr(regex)
	meta.i32(int32(m.rebalanceTimeout / time.Millisecond))
	meta.cnstr(assignor)
	if m.classic == nil {
		meta.noTags()
	} else {
		// ClassicMemberMetadata, tagged field 0.
		c := recWriter{}
		c.i32(int32(m.classic.sessionTimeout / time.Millisecond))
		c.arrayLen(len(m.classic.protocols))
		for _, p := range m.classic.protocols {
			c.cstr(p.name)
			c.uvarint(uint64(len(p.metadata)) + 1)
			c.b = append(c.b, p.metadata...)
			c.noTags()
		}
		c.noTags()
		meta.uvarint(1)
		meta.uvarint(0)
		meta.uvarint(uint64(len(c.b)))
		meta.b = append(meta.b, c.b...)
	}
	cur := valueWriter()
	cur.i32(m.epoch)
	cur.i32(m.previousEpoch)
	cur.i8(int8(m.state))
	cur.topicPartitions(m.assigned)
	cur.topicPartitions(m.pendingRevocation)
	cur.noTags()
	return []recordbatch.Record{
		{Key: consumerKey(recConsumerGroupMemberMetadata, g.id, &id), Value: meta.b},
		{Key: consumerKey(recConsumerGroupCurrentMember, g.id, &id), Value: cur.b},
	}
}

func (g *group) cgTargetRecords() []recordbatch.Record {
	var recs []recordbatch.Record
	ids := make([]string, 0, len(g.cg.target))
	for id := range g.cg.target {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		recs = append(recs, g.cgTargetMemberRecord(id))
	}
	w := valueWriter()
	w.i32(g.cg.assignmentEpoch)
	w.noTags()
	return append(recs, recordbatch.Record{Key: consumerKey(recConsumerGroupTargetMetadata, g.id, nil), Value: w.b})
}

// cgTargetMemberRecord is one member's target assignment.
func (g *group) cgTargetMemberRecord(memberID string) recordbatch.Record {
	w := valueWriter()
	w.topicPartitions(g.cg.target[memberID])
	w.noTags()
	return recordbatch.Record{Key: consumerKey(recConsumerGroupTargetMember, g.id, &memberID), Value: w.b}
}

// cgMemberTombstones are the member's records' tombstones, in Kafka's
// order (current assignment, target assignment, subscription).
func (g *group) cgMemberTombstones(memberID string) []recordbatch.Record {
	return []recordbatch.Record{
		{Key: consumerKey(recConsumerGroupCurrentMember, g.id, &memberID)},
		{Key: consumerKey(recConsumerGroupTargetMember, g.id, &memberID)},
		{Key: consumerKey(recConsumerGroupMemberMetadata, g.id, &memberID)},
	}
}

// writeConsumer appends the records whose value differs from what was
// last written for their key (a tombstone only for a key written).
func (g *group) writeConsumer(recs []recordbatch.Record) error {
	return g.writeChanged(&g.cg.written, recs)
}

// consumerMemberRecords are a member's records and the group epoch;
// replaced is a static member it took over from. As Kafka's
// replaceStaticMember: the old member's tombstones, then the new
// member's subscription, its target assignment (the old member's,
// inherited: the target epoch does not move, so no target is computed
// that would write it) and its current assignment.
func (g *group) consumerMemberRecords(m, replaced *cgMember) []recordbatch.Record {
	var recs []recordbatch.Record
	member := g.cgMemberRecords(m)
	if replaced != nil && replaced.id != m.id {
		recs = append(recs, g.cgMemberTombstones(replaced.id)...)
		recs = append(recs, member[0], g.cgTargetMemberRecord(m.id), member[1])
	} else {
		recs = append(recs, member...)
	}
	return append(recs, g.cgMetadataRecord())
}

// storeConsumerRemoval writes a removed member's tombstones and the group
// epoch.
func (g *group) storeConsumerRemoval(m *cgMember) error {
	return g.writeConsumer(append(g.cgMemberTombstones(m.id), g.cgMetadataRecord()))
}

// targetAssignmentRecords are the target assignment, then its epoch.
func (g *group) targetAssignmentRecords() []recordbatch.Record {
	recs := append([]recordbatch.Record{g.cgMetadataRecord()}, g.cgTargetRecords()...)
	// Members that left the target since the last write.
	for k := range g.cg.written {
		kb := []byte(k)
		if len(kb) > 2 && binary.BigEndian.Uint16(kb) == recConsumerGroupTargetMember {
			r := recReader{b: kb[2:]}
			r.str()
			if id := r.str(); r.err == nil {
				if _, ok := g.cg.target[id]; !ok {
					recs = append(recs, recordbatch.Record{Key: kb})
				}
			}
		}
	}
	return recs
}

// cgTombstones are the tombstones of every consumer group record written,
// the group metadata last.
func (g *group) cgTombstones() []recordbatch.Record {
	return tombstonesOf(g.cg.written, recConsumerGroupMetadata)
}

// leaveConsumerGroup turns an empty consumer group back into a classic
// one for a JoinGroup (Kafka replaces an empty consumer group); false if
// it has members.
func (g *group) leaveConsumerGroup() bool {
	if len(g.cg.members) > 0 {
		return false
	}
	if err := g.writeConsumer(g.cgTombstones()); err != nil {
		g.log.Error().Err(err).Msg("writing consumer group tombstones failed")
		return false
	}
	g.cg = nil
	g.log.Info().Msg("empty consumer group replaced by a classic group")
	return true
}

// loadedConsumer accumulates a consumer group's records while loading.
type loadedConsumer struct {
	hasMeta     bool
	epoch       int32
	targetEpoch int32
	members     map[string]*cgMember // from member metadata records
	current     map[string]*cgMember // from current assignment records
	target      map[string]partSet
}

func newLoadedConsumer() *loadedConsumer {
	return &loadedConsumer{members: map[string]*cgMember{}, current: map[string]*cgMember{}, target: map[string]partSet{}}
}

// parseConsumerKey decodes a consumer group record key of type typ.
func parseConsumerKey(typ uint16, key []byte) (groupID, memberID string, err error) {
	r := recReader{b: key[2:]}
	groupID = r.str()
	switch typ {
	case recConsumerGroupMemberMetadata, recConsumerGroupTargetMember, recConsumerGroupCurrentMember:
		memberID = r.str()
	}
	return groupID, memberID, r.err
}

// consumerRecord applies one consumer group record (value nil: a
// tombstone) to lc.
func (lc *loadedConsumer) apply(typ uint16, memberID string, value []byte) error {
	if value == nil {
		switch typ {
		case recConsumerGroupMetadata:
			*lc = *newLoadedConsumer()
		case recConsumerGroupMemberMetadata:
			delete(lc.members, memberID)
		case recConsumerGroupCurrentMember:
			delete(lc.current, memberID)
		case recConsumerGroupTargetMember:
			delete(lc.target, memberID)
		}
		return nil
	}
	r := recReader{b: value}
	if v := r.i16(); r.err == nil && v != 0 {
		return errBadConsumerRecord
	}
	switch typ {
	case recConsumerGroupMetadata:
		lc.epoch = r.i32()
		lc.hasMeta = true
	case recConsumerGroupTargetMetadata:
		lc.targetEpoch = r.i32()
	case recConsumerGroupTargetMember:
		lc.target[memberID] = r.topicPartitions()
	case recConsumerGroupMemberMetadata:
		m := &cgMember{id: memberID}
		m.instanceID = r.cnstr()
		m.rackID = r.cnstr()
		m.clientID = r.cstr()
		m.clientHost = r.cstr()
		for i, n := 0, r.arrayLen(); i < n && r.err == nil; i++ {
			m.subscribedNames = append(m.subscribedNames, r.cstr())
		}
		if s := r.cnstr(); s != nil {
			m.regex = *s
		}
		m.rebalanceTimeout = time.Duration(r.i32()) * time.Millisecond
		if s := r.cnstr(); s != nil {
			m.serverAssignor = *s
		}
		for i, n := uint64(0), r.uvarint(); i < n && r.err == nil; i++ {
			tag, field := r.uvarint(), r.need(int(r.uvarint()))
			if tag == 0 && r.err == nil {
				m.classic = readClassicMemberMetadata(field)
				if m.classic == nil {
					return errBadConsumerRecord
				}
			}
		}
		if r.err == nil {
			lc.members[memberID] = m
		}
	case recConsumerGroupCurrentMember:
		m := &cgMember{id: memberID}
		m.epoch = r.i32()
		m.previousEpoch = r.i32()
		m.state = memberState(r.i8())
		m.assigned = r.topicPartitions()
		m.pendingRevocation = r.topicPartitions()
		if r.err == nil {
			lc.current[memberID] = m
		}
	}
	return r.err
}

// readClassicMemberMetadata decodes ClassicMemberMetadata; nil if it
// does not decode.
func readClassicMemberMetadata(b []byte) *classicMember {
	r := recReader{b: b}
	c := &classicMember{sessionTimeout: time.Duration(r.i32()) * time.Millisecond}
	for i, n := 0, r.arrayLen(); i < n && r.err == nil; i++ {
		name := r.cstr()
		var meta []byte
		if l := r.uvarint(); l > 0 {
			meta = slices.Clone(r.need(int(l - 1)))
		}
		r.tags()
		c.protocols = append(c.protocols, protocol{name: name, metadata: meta})
	}
	r.tags()
	if r.err != nil {
		return nil
	}
	return c
}

// consumerGroupLoaded builds the consumer group of g from what was
// loaded. Sessions start over; a member still revoking gets its
// rebalance timeout again.
func (g *group) consumerGroupLoaded(lc *loadedConsumer) {
	now := g.c.clock.Now()
	cg := newConsumerGroup(now)
	g.cg = cg
	cg.epoch, cg.assignmentEpoch = lc.epoch, lc.targetEpoch
	for id, m := range lc.members {
		if cur := lc.current[id]; cur != nil {
			m.epoch, m.previousEpoch, m.state = cur.epoch, cur.previousEpoch, cur.state
			m.assigned, m.pendingRevocation = cur.assigned, cur.pendingRevocation
		}
		if m.assigned == nil {
			m.assigned = partSet{}
		}
		if m.pendingRevocation == nil {
			m.pendingRevocation = partSet{}
		}
		m.assignedAt = map[topicIDPartition]int32{}
		for tp := range m.assigned {
			m.assignedAt[tp] = m.epoch
			cg.owner[tp] = id
		}
		for tp := range m.pendingRevocation {
			cg.owner[tp] = id
		}
		m.sessionDeadline = now.Add(g.consumerSessionTimeout())
		if m.classic != nil {
			m.sessionDeadline = now.Add(m.classic.sessionTimeout)
		} else if m.state == memberUnrevokedPartitions {
			m.revocationDeadline = now.Add(m.rebalanceTimeout)
		}
		cg.members[id] = m
		if m.instanceID != nil {
			cg.static[*m.instanceID] = id
		}
		if m.regex != "" {
			g.refreshRegex(m.regex, nil, nil, time.Time{})
		}
	}
	for id, t := range lc.target {
		if cg.members[id] != nil {
			cg.target[id] = t
		}
	}
	cg.subscriptionHash = g.subscriptionHash()
	// What the log holds now, so that only changes are written.
	cg.written = map[string][]byte{}
	recs := []recordbatch.Record{g.cgMetadataRecord()}
	for _, m := range cg.members {
		recs = append(recs, g.cgMemberRecords(m)...)
	}
	for _, r := range append(recs, g.cgTargetRecords()...) {
		cg.written[string(r.Key)] = r.Value
	}
}
