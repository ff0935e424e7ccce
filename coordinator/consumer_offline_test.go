package coordinator

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
)

// newMemEnv is newEnv over an in-memory file system whose writes a test
// can make fail.
func newMemEnv(t *testing.T) (*env, *memfs.FS) {
	t.Helper()
	e := newEnv(t, nil)
	e.close()
	fsys := memfs.New()
	e.fs, e.dir = fsys, "/data"
	e.open()
	return e, fsys
}

// TestConsumerGroupHeartbeatWriteFails: a heartbeat whose records cannot
// be written to __consumer_offsets fails with NOT_COORDINATOR and changes
// nothing (Kafka reverts the in-memory state of a failed write): a new
// member is not added, a leaving one stays, and the member already there
// is not told to give up partitions. After a restart the group is what
// was written.
func TestConsumerGroupHeartbeatWriteFails(t *testing.T) {
	e, fsys := newMemEnv(t)
	e.topic("t", 4)
	a := e.newClient("g", "a", "t")
	a.ok()
	if len(a.owned) != 4 || a.epoch != 1 {
		t.Fatalf("a owns %d at epoch %d", len(a.owned), a.epoch)
	}
	before, _ := json.Marshal(e.describeCG("g"))
	fsys.Inject(&memfs.Fault{Kind: memfs.ShortWrite, At: 0, Match: memfs.HasSuffix(".log")})

	b := e.newClient("g", "b", "t")
	expectCode(t, "join with a failing write", b.heartbeat().ErrorCode, kerr.NotCoordinator)
	if !fsys.Fired() {
		t.Fatal("the join wrote nothing")
	}
	if after, _ := json.Marshal(e.describeCG("g")); string(after) != string(before) {
		t.Fatalf("a join that was not written changed the group:\n%s\n%s", before, after)
	}
	owned := a.owned.clone()
	a.ok() // writes nothing: nothing changed
	if len(a.owned) != 4 || a.epoch != 1 {
		t.Fatalf("after the failed join a owns %d at epoch %d", len(a.owned), a.epoch)
	}
	expectCode(t, "leave with the log dir offline", a.leave(-1).ErrorCode, kerr.NotCoordinator)
	a.owned = owned
	if after, _ := json.Marshal(e.describeCG("g")); string(after) != string(before) {
		t.Fatalf("a leave that was not written changed the group:\n%s\n%s", before, after)
	}

	// The session ends: a's removal is not written either, so a stays
	// and is fenced again later.
	e.clk.Advance(e.cfg.ConsumerSessionTimeout + time.Second)
	e.c.onGroup(context.Background(), "g", false, func(g *group) { g.cgOnTimer(e.clk.Now()) })
	if d := e.describeCG("g"); len(d.Members) != 1 || d.Epoch != 1 {
		t.Fatalf("a fenced without its removal written: %d members at epoch %d", len(d.Members), d.Epoch)
	}

	fsys.Inject(nil)
	e.restart()
	if after, _ := json.Marshal(e.describeCG("g")); string(after) != string(before) {
		t.Fatalf("after the restart:\n%s\n%s", before, after)
	}
	a.ok()
	if len(a.owned) != 4 || a.epoch != 1 {
		t.Fatalf("after the restart a owns %d at epoch %d", len(a.owned), a.epoch)
	}
	b.ok()
	a.ok()
	b.ok()
	a.ok()
	b.ok()
	disjoint(t, a, b)
	if len(a.owned) != 2 || len(b.owned) != 2 {
		t.Fatalf("a owns %d, b %d", len(a.owned), len(b.owned))
	}
}
