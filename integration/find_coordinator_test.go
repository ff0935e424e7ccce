package integration

import (
	"encoding/base64"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFindCoordinatorShareKey: the real binary answers FindCoordinator
// key type 2 (what Kafka's brokers send to find a share-partition's share
// coordinator) as Kafka 4.3.1 does: this node for "groupId:topicId:partition",
// with __share_group_state created; INVALID_REQUEST for a malformed key.
func TestFindCoordinatorShareKey(t *testing.T) {
	b := startBroker(t, "")
	adm, cl := adminClient(t, b)
	ctx := adminCtx(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "fc-share"); err != nil {
		t.Fatal(err)
	}
	md, err := adm.Metadata(ctx, "fc-share")
	if err != nil {
		t.Fatal(err)
	}
	id := md.Topics["fc-share"].ID
	if len(md.Brokers) != 1 {
		t.Fatalf("brokers %+v", md.Brokers)
	}
	node := md.Brokers[0].NodeID
	good := "g:" + base64.RawURLEncoding.EncodeToString(id[:]) + ":0"
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 2
	req.CoordinatorKeys = []string{good, "g:not-a-topic-id:0"}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	nodes := map[string]int32{}
	for _, c := range resp.Coordinators {
		codes[c.Key], nodes[c.Key] = c.ErrorCode, c.NodeID
	}
	if len(codes) != 2 || codes[good] != 0 || nodes[good] != node || codes["g:not-a-topic-id:0"] != kerr.InvalidRequest.Code {
		t.Fatalf("coordinators %+v, want node %d for %q and INVALID_REQUEST for the malformed key", resp.Coordinators, node, good)
	}
	st, err := adm.Metadata(ctx, "__share_group_state")
	if err != nil {
		t.Fatal(err)
	}
	if tp := st.Topics["__share_group_state"]; tp.Err != nil || len(tp.Partitions) == 0 || !tp.IsInternal {
		t.Fatalf("__share_group_state after the lookup: %+v", tp)
	}
}
