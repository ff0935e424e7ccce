package coordinator

import (
	"fmt"
	"slices"
	"testing"
)

// TestListGroupsSeesAnsweredRequest: a group's listing is published
// before its request is answered, so a ListGroups sent after a share
// group's first heartbeat was answered lists it (it raced the group
// goroutine's publish, which ran after the answer).
func TestListGroupsSeesAnsweredRequest(t *testing.T) {
	e := newEnv(t, nil)
	e.topic("in", 1)
	for i := range 300 {
		g := fmt.Sprintf("sg-%d", i)
		if r := e.shareJoin(t, g, "m-aaaaaaaaaaaaaaaaaaaa", 0, "in"); r.ErrorCode != 0 {
			t.Fatalf("%s: heartbeat code %d", g, r.ErrorCode)
		}
		ls := e.c.ListGroups(nil, []string{"share"})
		if !slices.ContainsFunc(ls, func(l GroupListing) bool { return l.Group == g && l.Type == "share" }) {
			t.Fatalf("%s not listed right after its answered heartbeat (%d listed)", g, len(ls))
		}
	}
}
