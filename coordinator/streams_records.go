package coordinator

// The records of KIP-1071 streams groups in __consumer_offsets, in Kafka
// 4.3's schemas (group-coordinator's common/message/StreamsGroup*.json).
// A key is its record type (int16) then its fields, not flexible; a value
// is its version (int16, 0 for all of these) then its fields, flexible:
//
//	type  key                                  value v0
//	17    StreamsGroupMetadata{GroupId}         Epoch int32, MetadataHash int64,
//	                                            tag 0 ValidatedTopologyEpoch int32,
//	                                            tag 1 LastAssignmentConfigs [{Key, Value}]
//	19    StreamsGroupMemberMetadata            InstanceId?, RackId?, ClientId,
//	        {GroupId, MemberId}                 ClientHost, RebalanceTimeoutMs,
//	                                            TopologyEpoch, ProcessId,
//	                                            UserEndpoint? {Host, Port uint16},
//	                                            ClientTags [{Key, Value}]
//	20    StreamsGroupTargetAssignmentMetadata  AssignmentEpoch int32,
//	        {GroupId}                           tag 0 AssignmentTimestamp int64
//	21    StreamsGroupTargetAssignmentMember    Active/Standby/WarmupTasks
//	        {GroupId, MemberId}                 [{SubtopologyId, Partitions}]
//	22    StreamsGroupCurrentMemberAssignment   MemberEpoch, PreviousMemberEpoch,
//	        {GroupId, MemberId}                 State int8, Active/Standby/Warmup
//	                                            tasks and the three pending
//	                                            revocation; active tasks carry
//	                                            tag 0 AssignmentEpochs [int32]
//	23    StreamsGroupTopology{GroupId}         Epoch, Subtopologies [...]
//
// Kafka 4.3 has no StreamsGroupPartitionMetadata (18): the metadata hash
// replaced it; it is skipped when read. The group's whole record set is
// derived from its state after each change and only the records whose
// value changed are written, with tombstones for keys no longer there.

import (
	"encoding/binary"
	"maps"
	"slices"
	"time"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// Streams group record types (Kafka's CoordinatorRecordType).
const (
	recStreamsGroupMetadata       = 17
	recStreamsGroupPartitionMeta  = 18
	recStreamsGroupMemberMetadata = 19
	recStreamsGroupTargetMetadata = 20
	recStreamsGroupTargetMember   = 21
	recStreamsGroupCurrentMember  = 22
	recStreamsGroupTopology       = 23
)

func (w *recWriter) i64(v int64) { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }

// tagged appends tagged fields in tag order; nil bodies are left out.
func (w *recWriter) tagged(bodies ...[]byte) {
	n := 0
	for _, b := range bodies {
		if b != nil {
			n++
		}
	}
	w.uvarint(uint64(n))
	for tag, b := range bodies {
		if b != nil {
			w.uvarint(uint64(tag))
			w.uvarint(uint64(len(b)))
			w.b = append(w.b, b...)
		}
	}
}

func (w *recWriter) kvs(kvs []stKV) {
	w.arrayLen(len(kvs))
	for _, kv := range kvs {
		w.cstr(kv.key)
		w.cstr(kv.value)
		w.noTags()
	}
}

func (w *recWriter) strs(ss []string) {
	w.arrayLen(len(ss))
	for _, s := range ss {
		w.cstr(s)
	}
}

// taskIDs writes TaskIds; with epochs, each carries its AssignmentEpochs.
func (w *recWriter) taskIDs(s taskSet, epochs map[taskID]int32) {
	ts := taskIDsOf(s)
	w.arrayLen(len(ts))
	for _, t := range ts {
		w.cstr(t.SubtopologyID)
		w.arrayLen(len(t.Partitions))
		for _, p := range t.Partitions {
			w.i32(p)
		}
		if epochs == nil {
			w.noTags()
			continue
		}
		e := recWriter{}
		e.arrayLen(len(t.Partitions))
		for _, p := range t.Partitions {
			e.i32(epochs[taskID{t.SubtopologyID, p}])
		}
		w.tagged(e.b)
	}
}

func streamsMetadataValue(sg *streamsGroup) []byte {
	w := valueWriter()
	w.i32(sg.epoch)
	w.i64(sg.metadataHash)
	var validated, configs []byte
	if sg.validatedTopologyEpoch != -1 {
		v := recWriter{}
		v.i32(sg.validatedTopologyEpoch)
		validated = v.b
	}
	if sg.assignmentConfigs != nil {
		var kvs []stKV
		for _, k := range slices.Sorted(maps.Keys(sg.assignmentConfigs)) {
			kvs = append(kvs, stKV{k, sg.assignmentConfigs[k]})
		}
		v := recWriter{}
		v.kvs(kvs)
		configs = v.b
	}
	w.tagged(validated, configs)
	return w.b
}

func streamsMemberValue(m *stgMember) []byte {
	w := valueWriter()
	w.cnstr(m.instanceID)
	w.cnstr(m.rackID)
	w.cstr(m.clientID)
	w.cstr(m.clientHost)
	w.i32(int32(m.rebalanceTimeout / time.Millisecond))
	w.i32(m.topologyEpoch)
	w.cstr(m.processID)
	if m.endpoint == nil {
		w.i8(-1)
	} else {
		w.i8(1)
		w.cstr(m.endpoint.host)
		w.b = binary.BigEndian.AppendUint16(w.b, m.endpoint.port)
		w.noTags()
	}
	w.kvs(m.clientTags)
	w.noTags()
	return w.b
}

func streamsTargetMetadataValue(epoch int32, at time.Time) []byte {
	w := valueWriter()
	w.i32(epoch)
	var ts []byte
	if ms := at.UnixMilli(); ms != 0 {
		v := recWriter{}
		v.i64(ms)
		ts = v.b
	}
	w.tagged(ts)
	return w.b
}

func streamsTargetMemberValue(t tasksTuple) []byte {
	w := valueWriter()
	w.taskIDs(t.active, nil)
	w.taskIDs(t.standby, nil)
	w.taskIDs(t.warmup, nil)
	w.noTags()
	return w.b
}

func streamsCurrentValue(m *stgMember) []byte {
	w := valueWriter()
	w.i32(m.epoch)
	w.i32(m.previousEpoch)
	w.i8(int8(m.state))
	w.taskIDs(m.assigned.active, m.activeAt)
	w.taskIDs(m.assigned.standby, nil)
	w.taskIDs(m.assigned.warmup, nil)
	w.taskIDs(m.pendingRevocation.active, nil)
	w.taskIDs(m.pendingRevocation.standby, nil)
	w.taskIDs(m.pendingRevocation.warmup, nil)
	w.noTags()
	return w.b
}

func (w *recWriter) topicInfos(ts []stTopicInfo) {
	w.arrayLen(len(ts))
	for _, t := range ts {
		w.cstr(t.name)
		w.i32(t.partitions)
		w.i16(t.replicationFactor)
		w.kvs(t.configs)
		w.noTags()
	}
}

func (w *recWriter) int16s(is []int16) {
	w.arrayLen(len(is))
	for _, i := range is {
		w.i16(i)
	}
}

func streamsTopologyValue(t *streamsTopology) []byte {
	w := valueWriter()
	w.i32(t.epoch)
	w.arrayLen(len(t.subs))
	for _, s := range t.subs {
		w.cstr(s.id)
		w.strs(s.sources)
		w.strs(s.regexes)
		w.topicInfos(s.changelogs)
		w.strs(s.repartitionSinks)
		w.topicInfos(s.repartitionSources)
		w.arrayLen(len(s.copartitions))
		for _, c := range s.copartitions {
			w.int16s(c.sources)
			w.int16s(c.regexes)
			w.int16s(c.repartitionSources)
			w.noTags()
		}
		w.noTags()
	}
	w.noTags()
	return w.b
}

// streamsRecordSet is every record the group's state is made of, by key.
// targetAt is the timestamp of a target assignment written now.
func (g *group) streamsRecordSet(targetAt time.Time) map[string][]byte {
	sg := g.stg
	out := map[string][]byte{}
	key := func(typ int16, member *string) string { return string(consumerKey(typ, g.id, member)) }
	out[key(recStreamsGroupMetadata, nil)] = streamsMetadataValue(sg)
	if sg.topology != nil {
		out[key(recStreamsGroupTopology, nil)] = streamsTopologyValue(sg.topology)
	}
	for id, m := range sg.members {
		out[key(recStreamsGroupMemberMetadata, &id)] = streamsMemberValue(m)
		out[key(recStreamsGroupCurrentMember, &id)] = streamsCurrentValue(m)
	}
	for id, t := range sg.target {
		out[key(recStreamsGroupTargetMember, &id)] = streamsTargetMemberValue(t)
	}
	tk := key(recStreamsGroupTargetMetadata, nil)
	if last, ok := sg.written[tk]; ok && sg.assignmentEpoch == targetEpochOf(last) {
		out[tk] = last // the same target: its timestamp stays
	} else {
		out[tk] = streamsTargetMetadataValue(sg.assignmentEpoch, targetAt)
	}
	return out
}

func targetEpochOf(v []byte) int32 {
	if len(v) < 6 {
		return -1
	}
	return int32(binary.BigEndian.Uint32(v[2:]))
}

// streamsRecordOrder is the order records are written in: the group
// metadata first and the target metadata after the target members, as
// Kafka writes them; tombstones of members before anything else.
func streamsRecordOrder(typ uint16) int {
	switch typ {
	case recStreamsGroupTopology:
		return 0
	case recStreamsGroupMemberMetadata:
		return 1
	case recStreamsGroupMetadata:
		return 2
	case recStreamsGroupTargetMember:
		return 3
	case recStreamsGroupTargetMetadata:
		return 4
	default:
		return 5
	}
}

// writeStreams writes what changed in the group's records since the
// last write: changed values, and tombstones for keys gone.
func (g *group) writeStreams() error {
	sg := g.stg
	want := g.streamsRecordSet(g.c.clock.Now())
	var tomb, recs []recordbatch.Record
	for k, v := range want {
		if last, ok := sg.written[k]; !ok || string(last) != string(v) {
			recs = append(recs, recordbatch.Record{Key: []byte(k), Value: v})
		}
	}
	for k := range sg.written {
		if _, ok := want[k]; !ok {
			tomb = append(tomb, recordbatch.Record{Key: []byte(k)})
		}
	}
	order := func(a, b recordbatch.Record) int {
		ta, tb := binary.BigEndian.Uint16(a.Key), binary.BigEndian.Uint16(b.Key)
		if c := streamsRecordOrder(ta) - streamsRecordOrder(tb); c != 0 {
			return c
		}
		return slices.Compare(a.Key, b.Key)
	}
	slices.SortFunc(tomb, order)
	slices.SortFunc(recs, order)
	all := append(tomb, recs...)
	if len(all) == 0 {
		return nil
	}
	if err := g.append(all); err != nil {
		return err
	}
	sg.written = want
	return nil
}

// streamsTombstones are tombstones for every streams record written, the
// group metadata last (DeleteGroups, expiry, a classic group taking over).
func (g *group) streamsTombstones() []recordbatch.Record {
	return tombstonesOf(g.stg.written, recStreamsGroupMetadata)
}

// Decoding.

func (r *recReader) i64() int64 {
	if b := r.need(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

// eachTag calls f with each tagged field's tag and body.
func (r *recReader) eachTag(f func(tag uint64, body *recReader)) {
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		tag := r.uvarint()
		b := r.need(int(r.uvarint()))
		if r.err == nil {
			f(tag, &recReader{b: b})
		}
	}
}

func (r *recReader) kvs() []stKV {
	var out []stKV
	for i, n := 0, r.arrayLen(); i < n && r.err == nil; i++ {
		out = append(out, stKV{r.cstr(), r.cstr()})
		r.tags()
	}
	return out
}

func (r *recReader) strs() []string {
	var out []string
	for i, n := 0, r.arrayLen(); i < n && r.err == nil; i++ {
		out = append(out, r.cstr())
	}
	return out
}

func (r *recReader) int16s() []int16 {
	var out []int16
	for i, n := 0, r.arrayLen(); i < n && r.err == nil; i++ {
		out = append(out, r.i16())
	}
	return out
}

func (r *recReader) taskIDs(epochs map[taskID]int32) taskSet {
	s := taskSet{}
	for i, n := 0, r.arrayLen(); i < n && r.err == nil; i++ {
		sub := r.cstr()
		var ps []int32
		for j, m := 0, r.arrayLen(); j < m && r.err == nil; j++ {
			p := r.i32()
			ps = append(ps, p)
			s[taskID{sub, p}] = struct{}{}
		}
		r.eachTag(func(tag uint64, b *recReader) {
			if tag != 0 || epochs == nil {
				return
			}
			for j, m := 0, b.arrayLen(); j < m && b.err == nil && j < len(ps); j++ {
				epochs[taskID{sub, ps[j]}] = b.i32()
			}
		})
	}
	return s
}

func (r *recReader) topicInfos() []stTopicInfo {
	var out []stTopicInfo
	for i, n := 0, r.arrayLen(); i < n && r.err == nil; i++ {
		t := stTopicInfo{name: r.cstr(), partitions: r.i32(), replicationFactor: r.i16(), configs: r.kvs()}
		r.tags()
		out = append(out, t)
	}
	return out
}

// version reads a value's version; only 0 is known.
func (r *recReader) version() {
	if v := r.i16(); v != 0 && r.err == nil {
		r.err = errBadConsumerRecord
	}
}

func (r *recReader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = errBadConsumerRecord
	}
	return r.err
}

// decodeStreamsRecord decodes one streams record value of type typ into
// sg (memberID for the member records); it is the decoder of untrusted
// bytes FuzzStreamsRecords exercises.
func decodeStreamsRecord(sg *streamsGroup, typ uint16, memberID string, value []byte) error {
	r := &recReader{b: value}
	r.version()
	member := func() *stgMember {
		m := sg.members[memberID]
		if m == nil {
			m = &stgMember{id: memberID, assigned: emptyTuple(), pendingRevocation: emptyTuple(), activeAt: map[taskID]int32{}, state: sgStable}
			sg.members[memberID] = m
		}
		return m
	}
	switch typ {
	case recStreamsGroupMetadata:
		sg.epoch = r.i32()
		sg.metadataHash = r.i64()
		r.eachTag(func(tag uint64, b *recReader) {
			switch tag {
			case 0:
				sg.validatedTopologyEpoch = b.i32()
			case 1:
				sg.assignmentConfigs = kvMap(b.kvs())
			}
			r.err = cmpErr(r.err, b.err)
		})
	case recStreamsGroupMemberMetadata:
		m := member()
		m.instanceID, m.rackID = r.cnstr(), r.cnstr()
		m.clientID, m.clientHost = r.cstr(), r.cstr()
		m.rebalanceTimeout = time.Duration(r.i32()) * time.Millisecond
		m.topologyEpoch = r.i32()
		m.processID = r.cstr()
		if r.i8() >= 0 && r.err == nil {
			m.endpoint = &sgEndpoint{host: r.cstr()}
			if b := r.need(2); b != nil {
				m.endpoint.port = binary.BigEndian.Uint16(b)
			}
			r.tags()
		}
		m.clientTags = r.kvs()
		r.tags()
	case recStreamsGroupTargetMetadata:
		sg.assignmentEpoch = r.i32()
		r.tags()
	case recStreamsGroupTargetMember:
		sg.target[memberID] = tasksTuple{r.taskIDs(nil), r.taskIDs(nil), r.taskIDs(nil)}
		r.tags()
	case recStreamsGroupCurrentMember:
		m := member()
		m.epoch, m.previousEpoch = r.i32(), r.i32()
		m.state = sgMemberState(r.i8())
		m.activeAt = map[taskID]int32{}
		m.assigned = tasksTuple{r.taskIDs(m.activeAt), r.taskIDs(nil), r.taskIDs(nil)}
		m.pendingRevocation = tasksTuple{r.taskIDs(nil), r.taskIDs(nil), r.taskIDs(nil)}
		r.tags()
	case recStreamsGroupTopology:
		t := &streamsTopology{epoch: r.i32()}
		for i, n := 0, r.arrayLen(); i < n && r.err == nil; i++ {
			s := stSubtopology{id: r.cstr(), sources: r.strs(), regexes: r.strs(), changelogs: r.topicInfos(),
				repartitionSinks: r.strs(), repartitionSources: r.topicInfos()}
			for j, m := 0, r.arrayLen(); j < m && r.err == nil; j++ {
				s.copartitions = append(s.copartitions, stCopartition{r.int16s(), r.int16s(), r.int16s()})
				r.tags()
			}
			r.tags()
			t.subs = append(t.subs, s)
		}
		r.tags()
		sg.topology = t
	default:
		return nil
	}
	return r.done()
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// loadedStreams is a streams group's records while loading: the last
// value per key.
type loadedStreams map[string][]byte

func (ls loadedStreams) apply(key, value []byte) {
	if value == nil {
		delete(ls, string(key))
		return
	}
	ls[string(key)] = value
}

// parseStreamsKey decodes a streams record key.
func parseStreamsKey(typ uint16, key []byte) (groupID, memberID string, err error) {
	r := recReader{b: key[2:]}
	groupID = r.str()
	switch typ {
	case recStreamsGroupMemberMetadata, recStreamsGroupTargetMember, recStreamsGroupCurrentMember:
		memberID = r.str()
	}
	return groupID, memberID, r.done()
}

// streamsGroupLoaded rebuilds the group from its records: every member
// resumes at its epoch, state and tasks, its session started over.
func (g *group) streamsGroupLoaded(ls loadedStreams) {
	sg := newStreamsGroup()
	for k, v := range ls {
		typ := binary.BigEndian.Uint16([]byte(k))
		_, memberID, _ := parseStreamsKey(typ, []byte(k))
		if err := decodeStreamsRecord(sg, typ, memberID, v); err != nil {
			g.log.Warn().Err(err).Uint16("type", typ).Msg("skipping undecodable streams group record")
			continue
		}
		sg.written[k] = v
	}
	now := g.c.clock.Now()
	for id, m := range sg.members {
		for t := range m.assigned.active {
			sg.activeOwner[t] = id
		}
		for t := range m.pendingRevocation.active {
			sg.activeOwner[t] = id
		}
		m.sessionDeadline = now.Add(g.c.streamsGroupConfig(g.id).SessionTimeout)
		if m.state == sgUnrevokedTasks {
			m.revocationDeadline = now.Add(m.rebalanceTimeout)
		}
	}
	for id := range sg.target {
		if sg.members[id] == nil {
			delete(sg.target, id)
		}
	}
	g.stg = sg
	if sg.topology != nil {
		// The configured topology is not persisted: Kafka configures
		// a loaded group's topology again on its first heartbeat.
		sg.configured = configureTopology(sg.topology, g.topicPartitionCount)
	}
}

func (ls loadedStreams) hasMetadata() bool {
	for k := range ls {
		if binary.BigEndian.Uint16([]byte(k)) == recStreamsGroupMetadata {
			return true
		}
	}
	return false
}

// leaveStreamsGroup turns an empty streams group back into a classic one
// for a JoinGroup; false if it has members.
func (g *group) leaveStreamsGroup() bool {
	if len(g.stg.members) > 0 {
		return false
	}
	if err := g.append(g.streamsTombstones()); err != nil {
		g.log.Error().Err(err).Msg("writing streams group tombstones failed")
		return false
	}
	g.stg = nil
	g.log.Info().Msg("empty streams group replaced by a classic group")
	return true
}
