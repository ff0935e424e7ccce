package protocol

// ShareFetch: v1-2
//
// Behavior (KIP-932, Kafka 4.3's SharePartitionManager and SharePartition,
// coordinator/sharefetch): a share session per member (epoch 0 opens it
// with the partitions listed, a positive epoch must be the session's and
// adds and forgets partitions, -1 closes it: acknowledgements only, then
// what the member holds is released; a session also ends, releasing what
// its member holds, when the connection that opened it closes, as Kafka's
// disconnect listener), the piggybacked acknowledgements
// applied first (each partition's AcknowledgeErrorCode), then records
// acquired for the member from the session's partitions (released or
// timed-out records first, then new ones), up to MaxRecords and MaxBytes
// (PartitionMaxBytes each), within share.partition.max.record.locks in
// flight per partition. The response carries whole batches and the
// acquired offset ranges with their delivery counts; only those are the
// member's. With no records, the fetch waits up to MaxWaitMs for an
// append, a release or a lock timeout (MinBytes counts acquired bytes).
// read_committed share groups (share.isolation.level) get no aborted
// transactional records: they are archived as met, as control records
// are. AcquisitionLockTimeoutMs is share.record.lock.duration.ms. Errors:
// INVALID_REQUEST (a null group id, acknowledgements in a new session, a renew with fetch
// parameters), SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH,
// SHARE_SESSION_LIMIT_REACHED (group.share.max.share.sessions);
// per partition UNKNOWN_TOPIC_ID, INVALID_RECORD_STATE. Authorization:
// READ on the group (GROUP_AUTHORIZATION_FAILED, the whole response), READ
// on each topic, on every fetch for every partition of the request and of
// the session (TOPIC_AUTHORIZATION_FAILED for its partitions and their
// acknowledgements, nothing acquired; a refused requested topic is kept
// out of the session).
//
// Deliberate differences: MaxRecords is cut at the record, not rounded up
// to the batch (the batches are still sent whole); an incremental
// response lists every session partition (Kafka lists those with news).
//
// Version notes:
//   - v1: MaxRecords, BatchSize, AcquisitionLockTimeoutMs (KIP-1206)
//   - v2: ShareAcquireMode, IsRenewAck (KIP-1222: RENEW acknowledgements,
//     with share.renew.acknowledge.enable)

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ShareFetch.Int16(), 1, 2, handleShareFetch) }

func handleShareFetch(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ShareFetchRequest)
	if !s.shareGroupsEnabled() {
		resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
		resp.ErrorCode = unsupportedVersion
		return resp, nil
	}
	if code, msg := s.shareGroupCheck(r, req.GroupID); code != 0 {
		resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp, nil
	}
	return s.groups.ShareFetcher().ShareFetch(r.Ctx, req, s.shareTopicsReadable(r)), nil
}
