// Package coordinator holds the group coordinator and the transaction
// coordinator, whose state lives in the internal compacted topics
// __consumer_offsets and __transaction_state. Not yet built: see the
// consumer-group and transaction issues.
package coordinator
