package protocol

// ShareAcknowledge: v1-2
//
// Behavior: a share session's acknowledgements outside a fetch: ACCEPT
// (acknowledged), RELEASE (available again, or archived at
// share.delivery.count.limit deliveries), REJECT and GAP (archived), and
// (v2, IsRenewAck) RENEW (the acquisition lock starts over). Every offset
// of a batch must be acquired by the member (INVALID_RECORD_STATE), and
// the change is written through the share state persister before the
// answer. The epoch must be the session's (0 is INVALID_SHARE_SESSION_EPOCH;
// -1 closes the session after the acknowledgements and releases what the
// member still holds). Authorization as ShareFetch: READ on the group,
// READ on each topic (TOPIC_AUTHORIZATION_FAILED per partition).
//
// Version notes: v2 adds IsRenewAck and AcquisitionLockTimeoutMs.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ShareAcknowledge.Int16(), 1, 2, handleShareAcknowledge) }

func handleShareAcknowledge(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ShareAcknowledgeRequest)
	if !s.shareGroupsEnabled() {
		resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
		resp.ErrorCode = unsupportedVersion
		return resp, nil
	}
	if code, msg := s.shareGroupCheck(r, req.GroupID); code != 0 {
		resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp, nil
	}
	return s.groups.ShareFetcher().ShareAcknowledge(req, s.shareTopicsReadable(r)), nil
}
