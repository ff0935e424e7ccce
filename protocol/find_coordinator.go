package protocol

// FindCoordinator: v0-6
//
// Behavior:
//   - Key type 0 (group): this node, for every group. The first lookup
//     creates __consumer_offsets (offsets.topic.num.partitions partitions,
//     cleanup.policy=compact), as Kafka does; if that fails the key gets
//     COORDINATOR_NOT_AVAILABLE.
//   - Key type 1 (transaction): this node, for every transactional id.
//     The first lookup creates __transaction_state
//     (transaction.state.log.num.partitions partitions,
//     cleanup.policy=compact), as Kafka does; if that fails the key gets
//     COORDINATOR_NOT_AVAILABLE.
//   - Key type 2 (share, v6+) and unknown types: INVALID_REQUEST. Kafka
//     answers key type 2 ("group:topicId:partition", which its brokers
//     send to find the share coordinator; clients do not) with the
//     __share_group_state partition's leader: not done here.
//
// Version notes:
//   - v1: KeyType, ErrorMessage, throttle
//   - v2: no schema change
//   - v3: flexible
//   - v4: batched CoordinatorKeys, answered per key in Coordinators
//     (KIP-699)
//   - v5: no schema change (TRANSACTION_ABORTABLE for transactions)
//   - v6: share coordinator key type (KIP-932)

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.FindCoordinator.Int16(), 0, 6, handleFindCoordinator) }

const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

func handleFindCoordinator(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keyType := req.CoordinatorType
	if r.Version == 0 {
		keyType = coordinatorGroup
	}
	if r.Version < 4 {
		c := s.findCoordinator(r, keyType, req.CoordinatorKey)
		resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
		return resp, nil
	}
	for _, k := range req.CoordinatorKeys {
		resp.Coordinators = append(resp.Coordinators, s.findCoordinator(r, keyType, k))
	}
	return resp, nil
}

func (s *Server) findCoordinator(r *Request, keyType int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.FindCoordinatorResponseCoordinator{Key: key, NodeID: -1, Port: -1}
	fail := func(e *kerr.Error, msg string) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode = e.Code
		c.ErrorMessage = &msg
		return c
	}
	if e := s.findCoordinatorAuthError(r, keyType, key); e != nil {
		c.ErrorCode = e.Code // without a message, as Kafka answers it
		return c
	}
	switch keyType {
	case coordinatorGroup:
		if _, err := s.groups.EnsureOffsetsTopic(); err != nil {
			return fail(kerr.CoordinatorNotAvailable, "The coordinator is not available.")
		}
	case coordinatorTransaction:
		if _, err := s.txns.EnsureTxnTopic(); err != nil {
			return fail(kerr.CoordinatorNotAvailable, "The coordinator is not available.")
		}
	default:
		return fail(kerr.InvalidRequest, "Unsupported key type.")
	}
	c.NodeID = s.cfg.NodeID
	c.Host, c.Port = s.advertisedFor(r)
	return c
}
