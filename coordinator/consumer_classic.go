package coordinator

import "time"

// classicMember is what a consumer group keeps of a member that speaks
// the classic protocol (Kafka's ClassicMemberMetadata, plus its join and
// sync timers).
type classicMember struct {
	sessionTimeout time.Duration
	protocols      []protocol
	// joinDeadline is set when the member was told to rejoin
	// (REBALANCE_IN_PROGRESS) and syncDeadline when it joined: it is
	// fenced if it does not rejoin or sync within its rebalance timeout.
	joinDeadline, syncDeadline time.Time
}
