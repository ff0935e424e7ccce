// Package coordinator is the group coordinator, for classic groups and
// KIP-848 consumer groups, and the transaction coordinator
// (TxnCoordinator; its states and transitions are described in
// txn_state.go). A single broker is the coordinator of every group and
// every transactional id.
//
// # Groups
//
// Each group is owned by one goroutine (group.run) that takes closures
// from a channel; a JoinGroup or SyncGroup that must wait for other
// members leaves its reply channel on the member and is answered when the
// phase ends. One timer per group, from the injected clock, is armed at
// the earliest of: the end of the join phase, the sync deadline, the
// session expiry of members not blocked in a join or sync, the join
// timeout of new members (below), and the expiry of member ids handed out
// with MEMBER_ID_REQUIRED.
//
// States and transitions (Kafka's ClassicGroupState):
//
//	Empty               no members (a new group, or offsets only)
//	  -> PreparingRebalance   a member joins
//	  -> Dead                 DeleteGroups, or its last offset expired
//	PreparingRebalance  waiting for members to (re)join: until every known
//	                    member rejoined, or the largest rebalance timeout;
//	                    a group leaving Empty waits
//	                    group.initial.rebalance.delay.ms first, again while
//	                    members keep arriving, within the rebalance timeout
//	  -> CompletingRebalance  join phase over, members left (generation+1;
//	                          members that did not rejoin are removed,
//	                          static ones kept)
//	  -> Empty                join phase over and nobody left (generation+1)
//	CompletingRebalance waiting for the leader's SyncGroup
//	  -> Stable               the leader's assignment is written
//	  -> PreparingRebalance   a member joins, leaves, changes metadata or
//	                          expires, or members do not sync in time
//	Stable              assignments handed out
//	  -> PreparingRebalance   as above; a leader rejoining also rebalances
//	Dead                gone; the goroutine exits and the group is dropped
//
// Kafka's rules kept: MEMBER_ID_REQUIRED on a first join from JoinGroup
// v4 (KIP-394); protocol selection by vote among protocols every member
// supports; session timeouts bounded by group.min/max.session.timeout.ms
// (INVALID_SESSION_TIMEOUT); ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
// REBALANCE_IN_PROGRESS; static members (KIP-345) that restart with a new
// member id take the old one's place without a rebalance when their
// protocols are unchanged (a leader gets SkipAssignment from v9, and a
// rebalance before), and fence the old id (FENCED_INSTANCE_ID); members
// that do not sync within the rebalance timeout are removed (KAFKA-13134);
// offset commits with generation -1 from outside the group while it is
// Empty (simple consumers, admin clients).
//
// A member added in a join phase is new until the phase completes
// (Kafka's MemberMetadata.isNew): it expires 5 minutes after it joined
// (NewMemberJoinTimeoutMs, KAFKA-7610) even while its JoinGroup waits,
// which is then answered UNKNOWN_MEMBER_ID with no member id; a heartbeat
// from it moves that expiry to its session timeout, as in Kafka. Old
// members' sessions do not run while they wait in a join or sync.
//
// group.max.size is Kafka 3.9's acceptJoiningMember, checked before any
// other JoinGroup rule: during PreparingRebalance a member already
// rejoined is let in and others only while fewer than the limit have
// rejoined; in CompletingRebalance and Stable members are let in and
// others only while the group is under the limit; ids handed out with
// MEMBER_ID_REQUIRED count in neither. A member or pending id turned away
// (GROUP_MAX_SIZE_REACHED) is removed. A group loaded over the limit
// rebalances, so the last members to rejoin are turned away.
//
// OffsetCommit checks the group first; its error answers every partition.
// Only a commit that passes (and counts as the member's heartbeat) gets
// OFFSET_METADATA_TOO_LARGE for metadata longer than
// offset.metadata.max.bytes, in UTF-16 code units as Java's String.length
// (Kafka's storeOffsets).
//
// # Consumer groups (KIP-848)
//
// A group is classic or a consumer group (group.cg set), never both: a
// ConsumerGroupHeartbeat joining an empty classic group (or one with only
// offsets) makes it a consumer group, a JoinGroup to an empty consumer
// group makes it classic again (Kafka's maybeDeleteEmpty...Group). Groups
// with members migrate online as KIP-848 and Kafka 4.3 do, as
// group.consumer.migration.policy allows (consumer_classic.go): a
// consumer-protocol member joining a classic group of the consumer
// embedded protocol upgrades it (members, assignments and the generation
// kept); classic members of a consumer group are served through
// JoinGroup, SyncGroup, Heartbeat and LeaveGroup from the consumer
// group's target assignment (the member epoch is their generation,
// REBALANCE_IN_PROGRESS tells them to rejoin to move on); when the last
// consumer-protocol member leaves or is fenced, the group becomes classic
// again and rebalances (or, when a classic static member replaced it,
// becomes classic holding its assignment). Refused otherwise: GROUP_ID_NOT_FOUND for a
// heartbeat to a classic group with members, INCONSISTENT_GROUP_PROTOCOL
// for a JoinGroup to a consumer group with members. The group's
// goroutine, timer and offsets are shared with the classic code.
//
// Epochs: the group epoch moves when a member joins, leaves or is fenced,
// changes its subscription (topic names, regex, server assignor), or when
// the subscribed topics change (created, deleted, more partitions: a hash
// over them, checked at every heartbeat). A heartbeat that finds the
// group epoch ahead of the target assignment's runs the assignor
// (uniform or range, consumer_assignors.go) and makes its result the
// target at the group epoch. Each member then reconciles towards its
// target (CurrentAssignmentBuilder):
//
//	STABLE                 at the target epoch with all its target
//	                       partitions
//	  -> UNREVOKED_PARTITIONS   it holds partitions not in its target: it
//	                            stays at its epoch and is told to give them
//	                            up; they stay its own until a heartbeat
//	                            shows it no longer owns them
//	  -> UNRELEASED_PARTITIONS  it took the target epoch, but some target
//	                            partitions are still held by others
//	UNREVOKED_PARTITIONS   -> STABLE or UNRELEASED_PARTITIONS once revoked
//	UNRELEASED_PARTITIONS  -> STABLE once the others released them
//
// A partition is given to a member only when no other member holds it
// (assigned or pending revocation): never owned twice. A member fenced
// (session timeout group.consumer.session.timeout.ms without a heartbeat;
// still revoking after its rebalance timeout; leaving with epoch -1)
// releases everything and the group epoch moves. A static member leaving
// with epoch -2 keeps its assignment until its session times out; a new
// member id with its instance id takes its place and assignment without a
// new epoch, and before it left UNRELEASED_INSTANCE_ID; the same member
// id rejoining with epoch 0 (after FENCED_MEMBER_EPOCH or a lost answer)
// is re-admitted in place. Heartbeat epochs
// are checked as Kafka's throwIfMemberEpochIsInvalid (FENCED_MEMBER_EPOCH,
// the previous epoch accepted with a subset of the assignment). Group
// state (ConsumerGroupDescribe, ListGroups): Empty, Assigning (group epoch
// ahead of the target), Reconciling (a member not at the target epoch or
// not STABLE), Stable. Subscriptions by regex are resolved against the
// topics when the regex is new to the group and again at most every
// ConsumerRegexRefreshInterval (10 s, as Kafka's).
//
// Offsets: OffsetCommit from a consumer group needs the member (UNKNOWN_
// MEMBER_ID), v9+ (UNSUPPORTED_VERSION) and its member epoch
// (STALE_MEMBER_EPOCH); an older epoch is accepted for partitions the
// member has held since then. Epoch -1 commits only to an empty group.
// TxnOffsetCommit answers ILLEGAL_GENERATION where OffsetCommit answers
// STALE_MEMBER_EPOCH. OffsetDelete refuses subscribed topics
// (GROUP_SUBSCRIBED_TO_TOPIC); offsets of unsubscribed topics expire by
// commit time; DeleteGroups needs the group empty.
//
// # Streams groups (KIP-1071)
//
// A group is classic, a consumer group or a streams group (group.sg set,
// streams_group.go), never two: a StreamsGroupHeartbeat joining an empty
// classic group makes it a streams group, a JoinGroup to an empty streams
// group makes it classic again, and otherwise the other protocol is
// refused (GROUP_ID_NOT_FOUND, INCONSISTENT_GROUP_PROTOCOL). The first
// member's topology becomes the group's (a different one at the same
// epoch is INVALID_REQUEST, "Topology updates are not supported yet.");
// it is configured against the topics (streams_topology.go) and only a
// ready topology has tasks, which the sticky task assignor
// (streams_assignor.go) spreads over the members. Epochs, reconciliation
// (UNREVOKED_TASKS, UNRELEASED_TASKS, STABLE), fencing on session and
// rebalance timeouts, and offset commits checked against member epochs
// (an older epoch for partitions of active tasks held since then) follow
// the consumer group rules above. Its records (types 17-23,
// streams_records.go) make a restart resume every member. The group-level
// streams.* configs come from streamsGroupConfig: the group's streams.*
// configs (the GROUP config resource), else the broker's group.streams.*
// defaults.
//
// # Persistence
//
// Group metadata and committed offsets are records in the internal
// compacted topic __consumer_offsets (created on first use, with
// offsets.topic.num.partitions partitions), in Kafka's own schemas and
// record versions (OffsetCommitKey v1 / OffsetCommitValue v3 or v1 with an
// expire timestamp, GroupMetadataKey v2 / GroupMetadataValue v3), in the
// partition abs(groupId.hashCode) % partitions, written through the
// partition log as v2 batches. New reads every partition at start-up; the
// last record per key wins and a tombstone (null value) deletes. A group
// loaded with members is Stable and its members' sessions start over.
// Consumer groups are kept in Kafka's records (ConsumerGroupMetadata,
// ...MemberMetadata, ...TargetAssignmentMetadata/Member,
// ...CurrentMemberAssignment; see consumer_records.go), so a restart
// resumes every member at its epoch, state and assignment.
// Offsets expire per KIP-211/KIP-496 every
// offsets.retention.check.interval.ms; expiry, OffsetDelete, DeleteGroups
// and the deletion of a topic (its offsets go, as Kafka's
// onPartitionsDeleted does) write tombstones for the cleaner to compact
// away.
//
// # Transactional offset commits
//
// TxnOffsetCommit writes a transactional batch (the producer's id and
// epoch) to the group's partition; its offsets stay pending on the group
// per producer id until the transaction coordinator has written the
// producer's marker there and calls CompleteTxnOffsets: a commit makes
// them committed offsets unless a regular commit was written after them
// (the record offset decides, as Kafka's replayEndTransactionMarker), an
// abort drops them. OffsetFetch with require_stable answers
// UNSTABLE_OFFSET_COMMIT for a partition with pending offsets. Pending
// offsets keep their partition's committed offset from expiring and their
// group from being removed; OffsetDelete, DeleteGroups and topic deletion
// remove them with a tombstone, the transaction staying open. Loading
// replays the same: transactional records are pending until their
// producer's marker in that partition, and stay pending without one (the
// transaction coordinator completes them after its own load). See
// txn_offsets.go.
//
// Racks: member racks (RackId, or the classic subscription's rack) are
// kept and persisted, but, as Kafka 4.3's uniform and range assignors,
// the assignors do not use them (Kafka dropped rack-aware server-side
// assignment before 4.0; racks only enter its topic metadata hash, and a
// single broker has one rack for its lifetime, so that hash never moves
// with racks here).
//
// Not built: offsets of removed partitions beyond whole topics
// (partitions only grow here).
package coordinator
