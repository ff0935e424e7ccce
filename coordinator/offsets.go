package coordinator

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// commitPart is one partition of an OffsetCommit whose topic partition
// exists.
type commitPart struct {
	tp    topicPartition
	entry offsetEntry
}

// javaLength is the length of s as Java's String.length counts it (UTF-16
// code units), which is what offset.metadata.max.bytes bounds in Kafka
// despite its name.
func javaLength(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// validateCommit is Kafka's ClassicGroup.validateOffsetCommit.
func (g *group) validateCommit(generation int32, memberID string, instanceID *string) int16 {
	if g.state == stateDead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if generation < 0 && g.state == stateEmpty {
		return 0 // a simple consumer or the admin client
	}
	if generation >= 0 || memberID != "" || instanceID != nil {
		if code := g.checkMember(memberID, instanceID); code != 0 {
			return code
		}
		if generation != g.generation {
			return kerr.IllegalGeneration.Code
		}
	} else if g.state != stateEmpty {
		return kerr.UnknownMemberID.Code
	}
	if g.state == stateCompletingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// commit validates and writes offsets; codes[i] is parts[i]'s answer.
// As Kafka (doCommitOffsets, then storeOffsets), the group checks come
// first and their error answers every partition; only then does metadata
// over offset.metadata.max.bytes get OFFSET_METADATA_TOO_LARGE, and the
// other partitions are written.
func (g *group) commit(version int16, generation int32, memberID string, instanceID *string, parts []commitPart) []int16 {
	codes := make([]int16, len(parts))
	var code int16
	if g.sg != nil && g.state != stateDead {
		code = kerr.GroupIDNotFound.Code // ShareGroup.validateOffsetCommit: not a consumer group
	} else if g.cg != nil && g.state != stateDead {
		code = g.validateConsumerCommit(version, generation, memberID, parts)
	} else if g.stg != nil && g.state != stateDead {
		code = g.validateStreamsCommit(version, generation, memberID, parts)
	} else {
		code = g.validateCommit(generation, memberID, instanceID)
	}
	if code != 0 {
		return fillCodes(codes, code)
	}
	if m := g.members[memberID]; m != nil && (g.state == stateStable || g.state == statePreparingRebalance) {
		// A commit keeps the member's session, even when every
		// partition is refused below.
		g.heartbeat(m)
	}
	recs := g.offsetRecords(parts, codes)
	if len(recs) == 0 {
		return codes
	}
	base, err := g.appendBatch(recs, nil)
	if err != nil {
		g.log.Error().Err(err).Msg("writing offset commit failed")
		return fillCodes(codes, appendErrorCode(err))
	}
	noteWritten(parts, codes, base, g.offsets)
	return codes
}

// offsetRecords builds a commit's records, one per partition in parts'
// order, answering at once (in codes) a partition whose metadata is too
// long.
func (g *group) offsetRecords(parts []commitPart, codes []int16) []recordbatch.Record {
	recs := make([]recordbatch.Record, 0, len(parts))
	for i := range parts {
		if javaLength(parts[i].entry.metadata) > g.c.cfg.OffsetMetadataMaxBytes {
			codes[i] = kerr.OffsetMetadataTooLarge.Code
			continue
		}
		recs = append(recs, g.offsetRecord(parts[i].tp, &parts[i].entry))
	}
	return recs
}

// noteWritten puts each written partition's entry (codes[i] == 0) into
// into, with the offset of its record: the batch's records are at base,
// base+1, ... in parts' order.
func noteWritten(parts []commitPart, codes []int16, base int64, into map[topicPartition]offsetEntry) {
	next := base
	for i, p := range parts {
		if codes[i] == 0 {
			p.entry.recordOffset = next
			next++
			into[p.tp] = p.entry
		}
	}
}

// fillCodes answers with code every partition not answered yet.
func fillCodes(codes []int16, code int16) []int16 {
	for i := range codes {
		if codes[i] == 0 {
			codes[i] = code
		}
	}
	return codes
}

// deleteOffsets is OffsetDelete on the group's goroutine: a top-level
// code, and per partition code in parts' order.
func (g *group) deleteOffsets(parts []topicPartition) (int16, []int16) {
	codes := make([]int16, len(parts))
	if g.state == stateDead || g.sg != nil {
		// ShareGroup.validateOffsetDelete: not a consumer group.
		return kerr.GroupIDNotFound.Code, codes
	}
	var subscribed map[string]bool // nil: nobody subscribes (as Kafka, also when unparsable)
	if g.cg != nil || g.stg != nil {
		subscribed, _ = g.subscribedTopics()
	} else if g.state != stateEmpty {
		if g.protocolType != "consumer" {
			return kerr.NonEmptyGroup.Code, codes
		}
		subscribed, _ = g.subscribedTopics()
	}
	var recs []recordbatch.Record
	var del []topicPartition
	for i, tp := range parts {
		if subscribed[tp.topic] {
			codes[i] = kerr.GroupSubscribedToTopic.Code
			continue
		}
		// As Kafka 4.x: a tombstone also for an offset only pending
		// in a transaction, which it removes from the transaction.
		if _, ok := g.offsets[tp]; ok || g.hasPendingTxnOffset(tp) {
			recs = append(recs, g.offsetRecord(tp, nil))
			del = append(del, tp)
		}
	}
	if err := g.append(recs); err != nil {
		return appendErrorCode(err), codes
	}
	for _, tp := range del {
		delete(g.offsets, tp)
		g.dropPendingTxnOffset(tp)
	}
	return 0, codes
}

// subscribedTopics parses the consumer protocol subscriptions of the
// members; ok is false if one does not parse (Kafka then knows no
// subscriptions).
func (g *group) subscribedTopics() (topics map[string]bool, ok bool) {
	out := map[string]bool{}
	if g.stg != nil {
		return g.streamsSubscribed(), true
	}
	if g.cg != nil {
		for _, m := range g.cg.members {
			for _, t := range g.subscribedTopicsOf(m) {
				out[t.Name] = true
			}
		}
		return out, true
	}
	for _, m := range g.members {
		meta := m.metadataFor(g.protocol)
		if meta == nil && len(m.protocols) > 0 {
			meta = m.protocols[0].metadata
		}
		var s kmsg.ConsumerMemberMetadata
		if err := s.ReadFrom(meta); err != nil {
			return nil, false
		}
		for _, t := range s.Topics {
			out[t] = true
		}
	}
	return out, true
}

// expireOffsets drops offsets past their retention (KIP-211): an explicit
// expire timestamp when the commit had one; otherwise, for a group with
// no protocol (offsets only), the commit time plus retention; for an
// Empty group, the time it became Empty plus retention; for a Stable
// consumer group, only offsets of topics nobody subscribes to, by commit
// time (KIP-496). An offset with a pending transactional commit for its
// partition does not expire. An Empty group left with no offsets and no
// open transaction is deleted. A share group is never expired (Kafka's
// ShareGroup.shouldExpire): only DeleteGroups deletes it.
func (g *group) expireOffsets() {
	if g.state == stateDead || g.sg != nil {
		return
	}
	now := g.c.clock.Now()
	nowMs := now.UnixMilli()
	retention := g.c.cfg.OffsetsRetention.Milliseconds()
	var subscribed map[string]bool
	if g.cg != nil || g.stg != nil {
		// Kafka's ConsumerGroup: offsets of topics nobody subscribes to
		// expire by commit time, whether or not the group has members.
		subscribed, _ = g.subscribedTopics()
	} else if g.state == stateStable && g.protocolType == "consumer" {
		var ok bool
		if subscribed, ok = g.subscribedTopics(); !ok {
			return // Kafka expires nothing it cannot attribute
		}
	}
	var recs []recordbatch.Record
	var expired []topicPartition
	for tp, e := range g.offsets {
		var due bool
		switch {
		case e.expireTimestamp >= 0:
			due = nowMs >= e.expireTimestamp
		case g.protocolType == "" || subscribed != nil:
			due = nowMs >= e.commitTimestamp+retention && !subscribed[tp.topic]
		case g.state == stateEmpty:
			due = nowMs >= g.stateSince.UnixMilli()+retention
		}
		if due && !g.hasPendingTxnOffset(tp) {
			recs = append(recs, g.offsetRecord(tp, nil))
			expired = append(expired, tp)
		}
	}
	dead := g.state == stateEmpty && len(expired) == len(g.offsets) && len(g.pending) == 0 && len(g.txnOffsets) == 0
	if g.cg != nil {
		dead = dead && len(g.cg.members) == 0
		if dead {
			recs = append(recs, g.cgTombstones()...)
		}
	} else if g.stg != nil {
		dead = dead && len(g.stg.members) == 0
		if dead {
			recs = append(recs, g.streamsTombstones()...)
		}
	} else if dead && g.generation > 0 {
		recs = append(recs, g.groupRecord(true))
	}
	if err := g.append(recs); err != nil {
		g.log.Error().Err(err).Msg("writing expired offset tombstones failed")
		return
	}
	for _, tp := range expired {
		delete(g.offsets, tp)
	}
	if len(expired) > 0 {
		g.log.Info().Int("offsets", len(expired)).Msg("expired committed offsets")
	}
	if dead {
		g.log.Info().Msg("removing empty group without offsets")
		g.setState(stateDead)
	}
}

// dropTopic removes the offsets of a deleted topic, committed and pending
// in transactions; an Empty group left without offsets stays until the
// expiry pass, as in Kafka.
func (g *group) dropTopic(topic string) {
	var recs []recordbatch.Record
	del := map[topicPartition]bool{}
	for tp := range g.offsets {
		if tp.topic == topic {
			del[tp] = true
		}
	}
	for _, p := range g.txnOffsets {
		for tp := range p {
			if tp.topic == topic {
				del[tp] = true
			}
		}
	}
	for tp := range del {
		recs = append(recs, g.offsetRecord(tp, nil))
	}
	if err := g.append(recs); err != nil {
		g.log.Error().Err(err).Str("topic", topic).Msg("writing tombstones for a deleted topic's offsets failed")
		return
	}
	for tp := range del {
		delete(g.offsets, tp)
		g.dropPendingTxnOffset(tp)
	}
}

// deleteGroup is DeleteGroups on the group's goroutine.
func (g *group) deleteGroup() int16 {
	switch {
	case g.state == stateDead:
		return kerr.GroupIDNotFound.Code
	case g.sg != nil:
		return g.deleteShareGroup()
	case g.cg != nil && len(g.cg.members) > 0:
		return kerr.NonEmptyGroup.Code
	case g.stg != nil && len(g.stg.members) > 0:
		return kerr.NonEmptyGroup.Code
	case g.state != stateEmpty:
		return kerr.NonEmptyGroup.Code
	}
	recs := make([]recordbatch.Record, 0, len(g.offsets)+1)
	for tp := range g.offsets {
		recs = append(recs, g.offsetRecord(tp, nil))
	}
	// Offsets only pending in open transactions get a tombstone too
	// (Kafka 4.x deleteAllOffsets); the transactions' markers then
	// find nothing to commit.
	pendingOnly := map[topicPartition]bool{}
	for _, p := range g.txnOffsets {
		for tp := range p {
			if _, ok := g.offsets[tp]; !ok {
				pendingOnly[tp] = true
			}
		}
	}
	for tp := range pendingOnly {
		recs = append(recs, g.offsetRecord(tp, nil))
	}
	if g.cg != nil {
		recs = append(recs, g.cgTombstones()...)
	} else if g.stg != nil {
		recs = append(recs, g.streamsTombstones()...)
	} else {
		recs = append(recs, g.groupRecord(true))
	}
	if err := g.append(recs); err != nil {
		g.log.Error().Err(err).Msg("writing group tombstones failed")
		return appendErrorCode(err)
	}
	g.offsets = map[topicPartition]offsetEntry{}
	for pid := range g.txnOffsets {
		g.closeTxn(pid)
	}
	g.log.Info().Msg("group deleted")
	g.setState(stateDead)
	return 0
}

// describe is DescribeGroups' entry for this group.
func (g *group) describe(version int16) kmsg.DescribeGroupsResponseGroup {
	if g.sg != nil {
		return g.describeShareClassic(version)
	}
	if g.stg != nil {
		// As Kafka: DescribeGroups describes classic and consumer groups.
		msg := "Group " + g.id + " is not a classic group."
		return kmsg.DescribeGroupsResponseGroup{Group: g.id, ErrorCode: kerr.GroupIDNotFound.Code, ErrorMessage: &msg,
			State: stateDead.String(), AuthorizedOperations: -2147483648, Members: []kmsg.DescribeGroupsResponseGroupMember{}}
	}
	if g.cg != nil {
		return g.describeConsumerClassic()
	}
	d := kmsg.DescribeGroupsResponseGroup{
		Group:                g.id,
		State:                g.state.String(),
		ProtocolType:         g.protocolType,
		AuthorizedOperations: -2147483648,
	}
	stable := g.state == stateStable
	if stable {
		d.Protocol = g.protocol
	}
	for _, m := range g.members {
		dm := kmsg.DescribeGroupsResponseGroupMember{
			MemberID:   m.id,
			InstanceID: m.instanceID,
			ClientID:   m.clientID,
			ClientHost: m.clientHost,
		}
		if stable {
			dm.ProtocolMetadata = nonNil(m.metadataFor(g.protocol))
			dm.MemberAssignment = nonNil(m.assignment)
		} else {
			dm.ProtocolMetadata = []byte{}
			dm.MemberAssignment = []byte{}
		}
		d.Members = append(d.Members, dm)
	}
	return d
}
