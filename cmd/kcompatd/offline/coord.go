package offline

// The records of the internal topics, printed as kafka-dump-log's
// --offsets-decoder and --transaction-log-decoder print them: the key as
// {"type":"<record type>","data":{...}}, the value as
// {"version":"<value version>","data":{...}} or <DELETE> for a
// tombstone, the data objects with the fields of Kafka's record schemas
// (OffsetCommitKey/Value, GroupMetadataKey/Value with each member's
// consumer-protocol subscription and assignment decoded,
// TransactionLogKey/Value) in schema order, a field only at the versions
// that have it and a tagged field only when it differs from its default.
// The bytes are decoded by kmsg, as the coordinators decode them at load.
//
// Kafka 4.x also writes the records of KIP-848 consumer groups and share
// groups to __consumer_offsets (types 3 and up); kcompatd does not decode
// those and says so on the record's line.

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupRecordTypes are the __consumer_offsets record types of Kafka 4.3
// that kcompatd does not decode (KIP-848 consumer groups, share groups,
// streams groups), by key version; any other version is unknown to Kafka
// too.
var groupRecordTypes = map[int16]string{
	3: "ConsumerGroupMetadata", 4: "ConsumerGroupPartitionMetadata", 5: "ConsumerGroupMemberMetadata",
	6: "ConsumerGroupTargetAssignmentMetadata", 7: "ConsumerGroupTargetAssignmentMember",
	8: "ConsumerGroupCurrentMemberAssignment", 10: "ShareGroupMemberMetadata", 11: "ShareGroupMetadata",
	12: "ShareGroupTargetAssignmentMetadata", 13: "ShareGroupTargetAssignmentMember",
	14: "ShareGroupCurrentMemberAssignment", 15: "ShareGroupStatePartitionMetadata",
	16: "ConsumerGroupRegularExpression", 17: "StreamsGroupMetadata", 19: "StreamsGroupMemberMetadata",
	20: "StreamsGroupTargetAssignmentMetadata", 21: "StreamsGroupTargetAssignmentMember",
	22: "StreamsGroupCurrentMemberAssignment", 23: "StreamsGroupTopology",
}

// recordParser turns a record's key and value into the text after
// "key: " and "payload: "; a nil result is not printed.
type recordParser func(offset int64, key, value []byte) (k, v *string)

func strp(s string) *string { return &s }

// plainParser is Kafka's default StringDecoder for keys and values.
func plainParser(_ int64, key, value []byte) (k, v *string) {
	if key != nil {
		k = strp(javaString(key))
	}
	if value != nil {
		v = strp(javaString(value))
	}
	return k, v
}

// errMissingKey is what Kafka's coordinator decoders throw for a record
// without a key; like Kafka, dump-log stops at it, after printing the
// record's metadata (partial, text mode).
type errMissingKey struct {
	offset  int64
	partial string
}

func (e errMissingKey) Error() string {
	return fmt.Sprintf("Failed to decode message at offset %d using the specified decoder (message had a missing key)", e.offset)
}

func offsetsParser(offset int64, key, value []byte) (k, v *string) {
	if len(key) < 2 {
		return strp(fmt.Sprintf("Error at offset %d, skipping. record key of %d bytes", offset, len(key))), nil
	}
	var (
		kj  obj
		typ int16
		err error
	)
	switch ver := int16(binary.BigEndian.Uint16(key)); ver {
	case 0, 1: // LegacyOffsetCommitKey and OffsetCommitKey: the same fields
		var m kmsg.OffsetCommitKey
		if err = m.ReadFrom(key); err == nil {
			typ = ver
			kj = obj{}.add("group", m.Group).add("topic", m.Topic).add("partition", m.Partition)
		}
	case 2:
		var m kmsg.GroupMetadataKey
		if err = m.ReadFrom(key); err == nil {
			typ = 2
			kj = obj{}.add("group", m.Group)
		}
	default:
		if name, ok := groupRecordTypes[ver]; ok {
			return strp(fmt.Sprintf("Error at offset %d, skipping. kcompatd does not decode %s records (type %d)", offset, name, ver)), nil
		}
		return strp(fmt.Sprintf("Unknown record type %d at offset %d, skipping.", ver, offset)), nil
	}
	if err != nil {
		return strp(fmt.Sprintf("Error at offset %d, skipping. %v", offset, err)), nil
	}
	k = strp(obj{}.add("type", fmt.Sprint(typ)).add("data", kj).String())
	if value == nil {
		return k, strp("<DELETE>")
	}
	var (
		vj  obj
		ver int16
	)
	if typ == 1 {
		m := kmsg.NewOffsetCommitValue()
		if err = m.ReadFrom(value); err == nil {
			ver, vj = m.Version, offsetCommitJSON(&m)
		}
	} else {
		m := kmsg.NewGroupMetadataValue()
		if err = m.ReadFrom(value); err == nil {
			ver, vj = m.Version, groupMetadataJSON(&m)
		}
	}
	if err != nil {
		return strp(fmt.Sprintf("Error at offset %d, skipping. %v", offset, err)), nil
	}
	return k, strp(obj{}.add("version", fmt.Sprint(ver)).add("data", vj).String())
}

func offsetCommitJSON(m *kmsg.OffsetCommitValue) obj {
	o := obj{}.add("offset", m.Offset)
	if m.Version >= 3 {
		o = o.add("leaderEpoch", m.LeaderEpoch)
	}
	o = o.add("metadata", m.Metadata).add("commitTimestamp", m.CommitTimestamp)
	if m.Version == 1 {
		o = o.add("expireTimestamp", m.ExpireTimestamp)
	}
	if m.Version >= 4 && m.TopicID != [16]byte{} {
		o = o.add("topicId", base64.RawURLEncoding.EncodeToString(m.TopicID[:]))
	}
	return o
}

func groupMetadataJSON(m *kmsg.GroupMetadataValue) obj {
	o := obj{}.add("protocolType", m.ProtocolType).add("generation", m.Generation).
		add("protocol", m.Protocol).add("leader", m.Leader)
	if m.Version >= 2 {
		o = o.add("currentStateTimestamp", m.CurrentStateTimestamp)
	}
	members := arr{}
	for i := range m.Members {
		mm := &m.Members[i]
		j := obj{}.add("memberId", mm.MemberID)
		if m.Version >= 3 {
			j = j.add("groupInstanceId", mm.InstanceID)
		}
		j = j.add("clientId", mm.ClientID).add("clientHost", mm.ClientHost)
		if m.Version >= 1 {
			j = j.add("rebalanceTimeout", mm.RebalanceTimeoutMillis)
		}
		j = j.add("sessionTimeout", mm.SessionTimeoutMillis)
		var sub, asg any = nonNilBytes(mm.Subscription), nonNilBytes(mm.Assignment)
		if m.ProtocolType == "consumer" {
			if s, ok := subscriptionJSON(mm.Subscription); ok {
				sub = s
			}
			if a, ok := assignmentJSON(mm.Assignment); ok {
				asg = a
			}
		}
		members = append(members, j.add("subscription", sub).add("assignment", asg))
	}
	return o.add("members", members)
}

// nonNilBytes: the member's subscription and assignment are not nullable
// in the schema, so an absent one prints as "".
func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// subscriptionJSON decodes a member's ConsumerProtocolSubscription.
func subscriptionJSON(b []byte) (obj, bool) {
	m := kmsg.NewConsumerMemberMetadata()
	if len(b) < 2 || m.ReadFrom(b) != nil || m.Version < 0 || m.Version > 3 {
		return nil, false
	}
	o := obj{}.add("topics", nonNilStrings(m.Topics)).add("userData", m.UserData)
	if m.Version >= 1 {
		owned := arr{}
		for _, p := range m.OwnedPartitions {
			owned = append(owned, obj{}.add("topic", p.Topic).add("partitions", nonNilInts(p.Partitions)))
		}
		o = o.add("ownedPartitions", owned)
	}
	if m.Version >= 2 {
		o = o.add("generationId", m.Generation)
	}
	if m.Version >= 3 {
		o = o.add("rackId", m.Rack)
	}
	return o, true
}

// assignmentJSON decodes a member's ConsumerProtocolAssignment.
func assignmentJSON(b []byte) (obj, bool) {
	var m kmsg.ConsumerMemberAssignment
	if len(b) < 2 || m.ReadFrom(b) != nil || m.Version < 0 || m.Version > 3 {
		return nil, false
	}
	parts := arr{}
	for _, t := range m.Topics {
		parts = append(parts, obj{}.add("topic", t.Topic).add("partitions", nonNilInts(t.Partitions)))
	}
	return obj{}.add("assignedPartitions", parts).add("userData", m.UserData), true
}

func nonNilInts(v []int32) []int32 {
	if v == nil {
		return []int32{}
	}
	return v
}

func nonNilStrings(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

func txnLogParser(offset int64, key, value []byte) (k, v *string) {
	if len(key) < 2 {
		return strp(fmt.Sprintf("Error at offset %d, skipping. record key of %d bytes", offset, len(key))), nil
	}
	if ver := int16(binary.BigEndian.Uint16(key)); ver != 0 {
		return strp(fmt.Sprintf("Unknown record type %d at offset %d, skipping.", ver, offset)), nil
	}
	var mk kmsg.TxnMetadataKey
	if err := mk.ReadFrom(key); err != nil {
		return strp(fmt.Sprintf("Error at offset %d, skipping. %v", offset, err)), nil
	}
	k = strp(obj{}.add("type", "0").add("data", obj{}.add("transactionalId", mk.TransactionalID)).String())
	if value == nil {
		return k, strp("<DELETE>")
	}
	m := kmsg.NewTxnMetadataValue()
	if err := m.ReadFrom(value); err != nil {
		return strp(fmt.Sprintf("Error at offset %d, skipping. %v", offset, err)), nil
	}
	if m.Version < 0 || m.Version > 1 {
		return strp(fmt.Sprintf("Error at offset %d, skipping. unknown transaction log value version %d", offset, m.Version)), nil
	}
	o := obj{}.add("producerId", m.ProducerID)
	if m.Version >= 1 && m.PreviousProducerID != -1 {
		o = o.add("previousProducerId", m.PreviousProducerID)
	}
	if m.Version >= 1 && m.NextProducerID != -1 {
		o = o.add("nextProducerId", m.NextProducerID)
	}
	o = o.add("producerEpoch", m.ProducerEpoch).add("transactionTimeoutMs", m.TimeoutMillis).
		add("transactionStatus", int8(m.State))
	var parts any // nil: null, as an Empty transaction writes it
	if m.Topics != nil {
		a := arr{}
		for _, t := range m.Topics {
			a = append(a, obj{}.add("topic", t.Topic).add("partitionIds", nonNilInts(t.Partitions)))
		}
		parts = a
	}
	o = o.add("transactionPartitions", parts).
		add("transactionLastUpdateTimestampMs", m.LastUpdateTimestamp).
		add("transactionStartTimestampMs", m.StartTimestamp)
	if m.Version >= 1 && m.ClientTransactionVersion != 0 {
		o = o.add("clientTransactionVersion", m.ClientTransactionVersion)
	}
	return k, strp(obj{}.add("version", fmt.Sprint(m.Version)).add("data", o).String())
}
