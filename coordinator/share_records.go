package coordinator

// The records of share groups in __consumer_offsets, in Kafka 4.3's
// schemas (group-coordinator's common/message/ShareGroup*.json). Keys are
// their type then their fields, not flexible; values their version (0)
// then their fields, flexible:
//
//	type  key                                 value v0
//	10    ShareGroupMemberMetadata            RackId?, ClientId, ClientHost,
//	        {GroupId, MemberId}               SubscribedTopicNames []
//	11    ShareGroupMetadata{GroupId}         Epoch int32, MetadataHash int64
//	12    ShareGroupTargetAssignmentMetadata  AssignmentEpoch int32,
//	        {GroupId}                         tag 0: AssignmentTimestamp int64
//	13    ShareGroupTargetAssignmentMember    TopicPartitions [{TopicId,
//	        {GroupId, MemberId}               Partitions [int32]}]
//	14    ShareGroupCurrentMemberAssignment   MemberEpoch, PreviousMemberEpoch
//	        {GroupId, MemberId}               int32, State int8,
//	                                          AssignedPartitions []
//	15    ShareGroupStatePartitionMetadata    InitializingTopics [{TopicId,
//	        {GroupId}                         TopicName, Partitions}],
//	                                          InitializedTopics [same],
//	                                          DeletingTopics [{TopicId,
//	                                          TopicName}]
//
// MetadataHash is our hash of the subscribed topics, not Kafka's (a
// change moves the epoch on both; the value is only compared with itself).
// InitializingTopics and DeletingTopics are always empty: state is
// initialized and deleted synchronously here.

import (
	"encoding/binary"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// Share group record types (Kafka's CoordinatorRecordType).
const (
	recShareGroupMemberMetadata = 10
	recShareGroupMetadata       = 11
	recShareGroupTargetMetadata = 12
	recShareGroupTargetMember   = 13
	recShareGroupCurrentMember  = 14
	recShareGroupStatePartition = 15
)

func shareMemberKeyed(typ uint16) bool {
	return typ == recShareGroupMemberMetadata || typ == recShareGroupTargetMember || typ == recShareGroupCurrentMember
}

func (g *group) sgMetadataRecord() recordbatch.Record {
	w := valueWriter()
	w.i32(g.sg.epoch)
	w.b = binary.BigEndian.AppendUint64(w.b, g.sg.subscriptionHash)
	w.noTags()
	return recordbatch.Record{Key: consumerKey(recShareGroupMetadata, g.id, nil), Value: w.b}
}

func (g *group) sgMemberRecords(m *sgMember) []recordbatch.Record {
	id := m.id
	meta := valueWriter()
	meta.cnstr(m.rackID)
	meta.cstr(m.clientID)
	meta.cstr(m.clientHost)
	meta.arrayLen(len(m.subscribedNames))
	for _, n := range m.subscribedNames {
		meta.cstr(n)
	}
	meta.noTags()
	cur := valueWriter()
	cur.i32(m.epoch)
	cur.i32(m.previous)
	cur.i8(m.state)
	cur.topicPartitions(m.assigned)
	cur.noTags()
	return []recordbatch.Record{
		{Key: consumerKey(recShareGroupMemberMetadata, g.id, &id), Value: meta.b},
		{Key: consumerKey(recShareGroupCurrentMember, g.id, &id), Value: cur.b},
	}
}

func (g *group) sgTargetRecords() []recordbatch.Record {
	var recs []recordbatch.Record
	ids := make([]string, 0, len(g.sg.target))
	for id := range g.sg.target {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		w := valueWriter()
		w.topicPartitions(g.sg.target[id])
		w.noTags()
		recs = append(recs, recordbatch.Record{Key: consumerKey(recShareGroupTargetMember, g.id, &id), Value: w.b})
	}
	w := valueWriter()
	w.i32(g.sg.assignmentEpoch)
	w.noTags()
	return append(recs, recordbatch.Record{Key: consumerKey(recShareGroupTargetMetadata, g.id, nil), Value: w.b})
}

// sgStatePartitionRecord lists the initialized share-partitions.
func (g *group) sgStatePartitionRecord() recordbatch.Record {
	name := func(id partition.TopicID) string {
		if tt := g.c.store.TopicByID(id); tt != nil {
			return tt.Name
		}
		return ""
	}
	return recordbatch.Record{Key: consumerKey(recShareGroupStatePartition, g.id, nil), Value: statePartitionValue(g.sg.initialized, name)}
}

// statePartitionValue is ShareGroupStatePartitionMetadataValue listing
// init as InitializedTopics.
func statePartitionValue(init partSet, topicName func(partition.TopicID) string) []byte {
	w := valueWriter()
	w.arrayLen(0) // InitializingTopics
	ts := init.byTopic()
	w.arrayLen(len(ts))
	for _, t := range ts {
		w.b = append(w.b, t.id[:]...)
		w.cstr(topicName(t.id))
		w.arrayLen(len(t.partitions))
		for _, p := range t.partitions {
			w.i32(p)
		}
		w.noTags()
	}
	w.arrayLen(0) // DeletingTopics
	w.noTags()
	return w.b
}

// shareRecords are every record of the share group as it is now, plus
// tombstones for member records written before whose member is gone.
func (g *group) shareRecords() []recordbatch.Record {
	sg := g.sg
	var recs []recordbatch.Record
	for _, id := range sg.memberIDs() {
		recs = append(recs, g.sgMemberRecords(sg.members[id])...)
	}
	recs = append(recs, g.sgTargetRecords()...)
	recs = append(recs, g.sgStatePartitionRecord(), g.sgMetadataRecord())
	live := map[string]bool{}
	for _, r := range recs {
		live[string(r.Key)] = true
	}
	var gone []recordbatch.Record
	for k := range sg.written {
		if !live[k] {
			gone = append(gone, recordbatch.Record{Key: []byte(k)})
		}
	}
	slices.SortFunc(gone, func(a, b recordbatch.Record) int { return slices.Compare(a.Key, b.Key) })
	return append(gone, recs...)
}

// shareTombstones are the tombstones of every share group record written,
// the group metadata last.
func (g *group) shareTombstones() []recordbatch.Record {
	return tombstonesOf(g.sg.written, recShareGroupMetadata)
}

// tombstonesOf are tombstones of the keys written, sorted, with the key
// of record type last (a group's metadata record) at the end.
func tombstonesOf(written map[string][]byte, last uint16) []recordbatch.Record {
	var recs []recordbatch.Record
	var meta []byte
	for k := range written {
		if binary.BigEndian.Uint16([]byte(k)) == last {
			meta = []byte(k)
			continue
		}
		recs = append(recs, recordbatch.Record{Key: []byte(k)})
	}
	slices.SortFunc(recs, func(a, b recordbatch.Record) int { return slices.Compare(a.Key, b.Key) })
	if meta != nil {
		recs = append(recs, recordbatch.Record{Key: meta})
	}
	return recs
}

// writeShare appends the records whose value changed since last written.
func (g *group) writeShare(recs []recordbatch.Record) error {
	return g.writeChanged(&g.sg.written, recs)
}

// writeChanged appends the records whose value differs from what was last
// written for their key (a tombstone only for a key written), and then
// notes them in *written.
func (g *group) writeChanged(written *map[string][]byte, recs []recordbatch.Record) error {
	if *written == nil {
		*written = map[string][]byte{}
	}
	w := *written
	var out []recordbatch.Record
	for _, r := range recs {
		last, ok := w[string(r.Key)]
		if r.Value == nil && !ok || r.Value != nil && ok && string(last) == string(r.Value) {
			continue
		}
		out = append(out, r)
	}
	if err := g.append(out); err != nil {
		return err
	}
	for _, r := range out {
		if r.Value == nil {
			delete(w, string(r.Key))
		} else {
			w[string(r.Key)] = r.Value
		}
	}
	return nil
}

// loadedShare accumulates a share group's records while loading.
type loadedShare struct {
	hasMeta     bool
	epoch       int32
	hash        uint64
	targetEpoch int32
	members     map[string]*sgMember
	current     map[string]*sgMember
	target      map[string]partSet
	initialized partSet
}

func newLoadedShare() *loadedShare {
	return &loadedShare{members: map[string]*sgMember{}, current: map[string]*sgMember{}, target: map[string]partSet{}, initialized: partSet{}}
}

// parseShareKey decodes a share group record key of type typ.
func parseShareKey(typ uint16, key []byte) (groupID, memberID string, err error) {
	r := recReader{b: key[2:]}
	groupID = r.str()
	if shareMemberKeyed(typ) {
		memberID = r.str()
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = errBadConsumerRecord
	}
	return groupID, memberID, r.err
}

// apply applies one share group record (value nil: a tombstone).
func (ls *loadedShare) apply(typ uint16, memberID string, value []byte) error {
	if value == nil {
		switch typ {
		case recShareGroupMetadata:
			*ls = *newLoadedShare()
		case recShareGroupMemberMetadata:
			delete(ls.members, memberID)
		case recShareGroupCurrentMember:
			delete(ls.current, memberID)
		case recShareGroupTargetMember:
			delete(ls.target, memberID)
		case recShareGroupStatePartition:
			ls.initialized = partSet{}
		}
		return nil
	}
	r := recReader{b: value}
	if v := r.i16(); r.err == nil && v != 0 {
		return errBadConsumerRecord
	}
	switch typ {
	case recShareGroupMetadata:
		ls.epoch = r.i32()
		if b := r.need(8); b != nil {
			ls.hash = binary.BigEndian.Uint64(b)
		}
		ls.hasMeta = r.err == nil
	case recShareGroupTargetMetadata:
		ls.targetEpoch = r.i32()
	case recShareGroupTargetMember:
		if ps := r.topicPartitions(); r.err == nil {
			ls.target[memberID] = ps
		}
	case recShareGroupMemberMetadata:
		m := &sgMember{id: memberID}
		m.rackID = r.cnstr()
		m.clientID = r.cstr()
		m.clientHost = r.cstr()
		for i, n := 0, r.arrayLen(); i < n && r.err == nil; i++ {
			m.subscribedNames = append(m.subscribedNames, r.cstr())
		}
		if r.err == nil {
			ls.members[memberID] = m
		}
	case recShareGroupCurrentMember:
		m := &sgMember{id: memberID}
		m.epoch = r.i32()
		m.previous = r.i32()
		m.state = r.i8()
		m.assigned = r.topicPartitions()
		if r.err == nil {
			ls.current[memberID] = m
		}
	case recShareGroupStatePartition:
		init := partSet{}
		for list := 0; list < 2 && r.err == nil; list++ {
			for i, n := 0, r.arrayLen(); i < n && r.err == nil; i++ {
				var id partition.TopicID
				copy(id[:], r.need(16))
				r.cstr()
				for j, k := 0, r.arrayLen(); j < k && r.err == nil; j++ {
					p := r.i32()
					if list == 1 {
						init[topicIDPartition{id, p}] = struct{}{}
					}
				}
				r.tags()
			}
		}
		for i, n := 0, r.arrayLen(); i < n && r.err == nil; i++ {
			r.need(16)
			r.cstr()
			r.tags()
		}
		if r.err == nil {
			ls.initialized = init
		}
	}
	if r.err == nil {
		r.tags()
	}
	return r.err
}

// shareGroupLoaded builds the share group of g from what was loaded;
// sessions start over.
func (g *group) shareGroupLoaded(ls *loadedShare) {
	now := g.c.clock.Now()
	sg := newShareGroup()
	g.sg = sg
	sg.epoch, sg.assignmentEpoch, sg.subscriptionHash = ls.epoch, ls.targetEpoch, ls.hash
	sg.initialized = ls.initialized
	for id, m := range ls.members {
		if cur := ls.current[id]; cur != nil {
			m.epoch, m.previous, m.state, m.assigned = cur.epoch, cur.previous, cur.state, cur.assigned
		}
		if m.assigned == nil {
			m.assigned = partSet{}
		}
		m.sessionDeadline = now.Add(g.shareSessionTimeout())
		sg.members[id] = m
	}
	for id, t := range ls.target {
		if sg.members[id] != nil {
			sg.target[id] = t
		}
	}
	sg.written = map[string][]byte{}
	for _, r := range g.shareRecords() {
		if r.Value != nil {
			sg.written[string(r.Key)] = r.Value
		}
	}
}

// shareFromWritten rebuilds g's share group from the records last written
// for it (replaceGroup); none written leaves g without one.
func (g *group) shareFromWritten(written map[string][]byte) {
	ls := newLoadedShare()
	for k, v := range written {
		typ := binary.BigEndian.Uint16([]byte(k))
		_, memberID, err := parseShareKey(typ, []byte(k))
		if err == nil {
			err = ls.apply(typ, memberID, v)
		}
		if err != nil {
			g.log.Warn().Err(err).Uint16("type", typ).Msg("skipping undecodable share group record")
		}
	}
	if ls.hasMeta {
		g.shareGroupLoaded(ls)
	}
}

// shareRecord replays one share group record while loading.
func (l *loader) shareRecord(r recordbatch.Record) {
	typ := binary.BigEndian.Uint16(r.Key)
	groupID, memberID, err := parseShareKey(typ, r.Key)
	if err != nil {
		l.c.log.Warn().Err(err).Msg("skipping undecodable share group record key")
		return
	}
	lg := l.get(groupID)
	if lg.share == nil {
		lg.share = newLoadedShare()
	}
	if err := lg.share.apply(typ, memberID, r.Value); err != nil {
		l.c.log.Warn().Err(err).Str("group", groupID).Uint16("type", typ).Msg("skipping undecodable share group record")
	}
}

// describeShareClassic is DescribeGroups' answer for a share group, as
// Kafka 4.3's: the group is not a classic group.
func (g *group) describeShareClassic(version int16) kmsg.DescribeGroupsResponseGroup {
	d := kmsg.DescribeGroupsResponseGroup{Group: g.id, State: "Dead", AuthorizedOperations: -2147483648, Members: []kmsg.DescribeGroupsResponseGroupMember{}}
	d.ErrorCode = kerr.GroupIDNotFound.Code
	if version >= 6 {
		msg := "Group " + g.id + " is not a classic group."
		d.ErrorMessage = &msg
	}
	return d
}
