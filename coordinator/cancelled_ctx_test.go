package coordinator

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A LeaveGroup or OffsetCommit whose client hung up right after sending
// it arrives with a cancelled ctx; Kafka still applies it. Before the fix
// about half of them were dropped (a select on the hand-off and the done
// ctx picks at random), so a handful of tries per case shows it.
func TestRequestsWithCancelledCtxStillApply(t *testing.T) {
	e := newEnv(t, nil)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for i := 0; i < 40; i++ {
		g := fmt.Sprintf("leave%d", i)
		ids, _ := e.stableGroup(g, 2)
		e.c.LeaveGroup(cancelled, g, []kmsg.LeaveGroupRequestMember{{MemberID: ids[1]}})
		if st := e.state(g); st == "Stable" {
			t.Fatalf("try %d: LeaveGroup with a cancelled ctx dropped (group %s)", i, st)
		}
	}
	for i := 0; i < 40; i++ {
		g := fmt.Sprintf("commit%d", i)
		codes := e.c.CommitOffsets(cancelled, 8, g, -1, "", nil, []CommitPartition{{Topic: "t", Partition: 0, Offset: 42, LeaderEpoch: -1, ExpireTimestamp: -1}})
		if codes[0] != 0 {
			t.Fatalf("try %d: OffsetCommit with a cancelled ctx answered %d", i, codes[0])
		}
	}
}
