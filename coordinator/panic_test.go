package coordinator

import (
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcompatd/kcompatd/internal/syncbuf"
)

// A panic in a group's goroutine fails that group's membership and keeps
// its committed offsets (group.recoverPanic): logged at Error with the
// group, a blocked JoinGroup answered NOT_COORDINATOR, the members told
// UNKNOWN_MEMBER_ID, new members served, other groups untouched, and the
// process goes on.
func TestGroupGoroutinePanic(t *testing.T) {
	e := newEnv(t, nil)
	var logs syncbuf.Buffer
	e.c.log = zerolog.New(&logs) // before any group exists
	if _, err := e.store.CreateTopic("t", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	ids, gen := e.stableGroup("g", 2)
	expectCode(t, "commit", commit(e, "g", gen, ids[0], map[string]int64{"t": 7}), nil)
	otherIDs, otherGen := e.stableGroup("other", 1)
	_, blocked := e.joinNew("g", "m") // waits for the rebalance

	old := e.c.lookup("g", false)
	if !old.do(context.Background(), func() { panic("injected: group work") }) {
		t.Fatal("group gone before the panic")
	}
	wait(t, old.done)

	if s := logs.String(); !strings.Contains(s, `"level":"error"`) || !strings.Contains(s, `"group":"g"`) || !strings.Contains(s, "injected: group work") {
		t.Fatalf("panic not logged at error with the group: %s", s)
	}
	expectCode(t, "blocked join", wait(t, blocked).ErrorCode, kerr.NotCoordinator)
	if got := fetch(e, "g"); got["t"] != 7 {
		t.Fatalf("committed offsets after the panic: %v", got)
	}
	expectCode(t, "old member's heartbeat", e.heartbeat("g", gen, ids[0], nil), kerr.UnknownMemberID)
	expectCode(t, "other group's heartbeat", e.heartbeat("other", otherGen, otherIDs[0], nil), nil)
	_, ch := e.joinNew("g", "m")
	expectCode(t, "new member's join", wait(t, ch).ErrorCode, nil)
}

// TestOpPanicEndsTheWait: a request whose work panics on the group's
// goroutine gets an answer instead of waiting forever for a closure
// that never finishes: onGroup reports the group gone (its callers then
// answer as for a group we do not have), the work is not run again on
// the replacement, and the replacement serves the next request.
func TestOpPanicEndsTheWait(t *testing.T) {
	e := newEnv(t, nil)
	e.stableGroup("g", 1)
	old := e.c.lookup("g", false)
	runs := 0
	ok := make(chan bool, 1)
	go func() {
		ok <- e.c.onGroup(context.Background(), "g", false, func(*group) {
			runs++
			panic("injected: request work")
		})
	}()
	if wait(t, ok) {
		t.Fatal("onGroup reported the panicked work done")
	}
	wait(t, old.done)
	if runs != 1 {
		t.Fatalf("the work ran %d times, want 1", runs)
	}
	expectCode(t, "old member's heartbeat", e.heartbeat("g", 1, "gone", nil), kerr.UnknownMemberID)
	_, ch := e.joinNew("g", "m")
	expectCode(t, "new member's join", wait(t, ch).ErrorCode, nil)
}
