package partition

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcompatd/kcompatd/internal/vfs"
)

func TestCreatePartitions(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	tp := mustCreate(t, s, "grow", 2, map[string]string{"cleanup.policy": "compact"})
	mustAppend(t, tp.Partitions[0], mkBatch(t, 3, testStart.UnixMilli(), 10))

	for _, tc := range []struct {
		name  string
		topic string
		total int32
		want  error
		msg   string
	}{
		{"same", "grow", 2, ErrInvalidPartitions, "Topic already has 2 partition(s)."},
		{"shrink", "grow", 1, ErrInvalidPartitions, "The topic grow currently has 2 partition(s); 1 would not be an increase."},
		{"too many", "grow", maxPartitions + 1, ErrInvalidPartitions, ""},
		{"unknown", "nope", 3, ErrUnknownTopic, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.CreatePartitions(tc.topic, tc.total, false)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if tc.msg != "" && err.Error() != tc.msg {
				t.Fatalf("message %q, want %q", err.Error(), tc.msg)
			}
		})
	}

	// Validate-only writes nothing.
	v, err := s.CreatePartitions("grow", 5, true)
	if err != nil || len(v.Partitions) != 2 {
		t.Fatalf("validate only: %v, %d partitions", err, len(v.Partitions))
	}
	if len(s.Topic("grow").Partitions) != 2 {
		t.Fatal("validate only changed the topic")
	}
	if _, err := os.Stat(filepath.Join(e.dir, "grow-2")); !os.IsNotExist(err) {
		t.Fatalf("validate only created a directory: %v", err)
	}

	got, err := s.CreatePartitions("grow", 4, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Partitions) != 4 || s.Topic("grow") != got || got.ID != tp.ID || got.Config.CleanupPolicy != "compact" {
		t.Fatalf("after grow: %d partitions, id %v, policy %s", len(got.Partitions), got.ID, got.Config.CleanupPolicy)
	}
	if got.Partitions[0] != tp.Partitions[0] {
		t.Fatal("existing partition log replaced")
	}
	r := mustAppend(t, got.Partitions[3], mkBatch(t, 2, testStart.UnixMilli(), 10))
	if r.BaseOffset != 0 {
		t.Fatalf("new partition base offset %d", r.BaseOffset)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// The catalog and the new logs survive a restart.
	s = e.open()
	defer s.Close()
	re := s.Topic("grow")
	if re == nil || len(re.Partitions) != 4 || re.ID != tp.ID {
		t.Fatalf("after reopen: %+v", re)
	}
	if o := re.Partitions[3].Offsets(); o.LogEndOffset != 2 {
		t.Fatalf("partition 3 end offset %d", o.LogEndOffset)
	}
	if o := re.Partitions[0].Offsets(); o.LogEndOffset != 3 {
		t.Fatalf("partition 0 end offset %d", o.LogEndOffset)
	}
	if got := s.TopicByID(tp.ID); got != re {
		t.Fatal("TopicByID not updated")
	}
}

func TestEndOffsetForEpochAndSize(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "epochs", 1, nil).Partitions[0]
	if ep, off := l.EndOffsetForEpoch(0); ep != 0 || off != 0 {
		t.Fatalf("empty log: epoch %d offset %d", ep, off)
	}
	b := mkBatch(t, 5, testStart.UnixMilli(), 20)
	mustAppend(t, l, b)
	mustAppend(t, l, mkBatch(t, 2, testStart.UnixMilli(), 20))
	if _, err := l.AdvanceLogStartOffset(3); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		req       int32
		wantEpoch int32
		wantOff   int64
	}{
		{0, 0, 7},    // the latest epoch ends at the log end offset
		{-1, -1, -1}, // undefined
		{1, -1, -1},  // later than any epoch
		{-5, -5, 3},  // older than the cache: the first epoch's start
	} {
		if ep, off := l.EndOffsetForEpoch(tc.req); ep != tc.wantEpoch || off != tc.wantOff {
			t.Errorf("epoch %d: got (%d, %d), want (%d, %d)", tc.req, ep, off, tc.wantEpoch, tc.wantOff)
		}
	}
	var want int64
	for _, seg := range l.Segments() {
		want += seg.Size
	}
	if l.Size() != want || want == 0 {
		t.Fatalf("size %d, segments %d", l.Size(), want)
	}
}

func TestVolumeBytes(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	// countingFS is not the OS file system: unknown.
	if total, usable := s.VolumeBytes(); total != -1 || usable != -1 {
		t.Fatalf("wrapped fs: %d %d", total, usable)
	}
	osStore, err := Open(Config{Dir: t.TempDir(), NodeID: 1, FS: vfs.OS{}, Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	defer osStore.Close()
	if total, usable := osStore.VolumeBytes(); total <= 0 || usable < 0 || usable > total {
		t.Fatalf("os fs: total %d usable %d", total, usable)
	}
}

func TestClientQuotasPersist(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	alice, def := "alice", (*string)(nil)
	user := []QuotaEntityPart{{Type: "user", Name: &alice}, {Type: "client-id", Name: def}}
	if err := s.AlterClientQuotas([]ClientQuotaChange{
		{Entity: user, Set: map[string]float64{"producer_byte_rate": 1024, "consumer_byte_rate": 2048}},
		{Entity: []QuotaEntityPart{{Type: "ip"}}, Set: map[string]float64{"connection_creation_rate": 10}},
	}); err != nil {
		t.Fatal(err)
	}
	// Removing the last value removes the entity.
	if err := s.AlterClientQuotas([]ClientQuotaChange{
		{Entity: []QuotaEntityPart{{Type: "ip"}}, Remove: []string{"connection_creation_rate"}},
		{Entity: user, Remove: []string{"consumer_byte_rate"}},
	}); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store) {
		t.Helper()
		qs := s.ClientQuotas()
		if len(qs) != 1 || len(qs[0].Entity) != 2 || qs[0].Entity[0].Type != "client-id" || qs[0].Entity[0].Name != nil ||
			*qs[0].Entity[1].Name != "alice" || len(qs[0].Values) != 1 || qs[0].Values["producer_byte_rate"] != 1024 {
			t.Fatalf("quotas %+v", qs)
		}
		// Parts in any order name the same entity.
		rev := []QuotaEntityPart{user[1], user[0]}
		if v := s.ClientQuotaValues(rev); v["producer_byte_rate"] != 1024 {
			t.Fatalf("values %v", v)
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = e.open()
	check(s)
	s.Close()

	// A corrupt file fails Open with a clear error.
	if err := os.WriteFile(filepath.Join(e.dir, clientQuotasFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Config{Dir: e.dir, NodeID: 1}); err == nil {
		t.Fatal("corrupt quotas file opened")
	}
}

// TestCreatePartitionsFailures: a catalog write that fails leaves the
// topic as it was, removes the new directories and takes the log dir
// offline until a restart; a directory left by a
// crash before the catalog named it is set aside at Open and does not
// stop a later CreatePartitions.
func TestCreatePartitionsFailures(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	mustCreate(t, s, "grow", 1, nil)
	e.fs.setHooks(func(name string) error {
		if strings.Contains(filepath.Base(name), catalogFile) {
			return errInjected
		}
		return nil
	}, nil)
	if _, err := s.CreatePartitions("grow", 3, false); !errors.Is(err, ErrStorage) {
		t.Fatalf("err %v, want ErrStorage", err)
	}
	e.fs.setHooks(nil, nil)
	if n := len(s.Topic("grow").Partitions); n != 1 {
		t.Fatalf("%d partitions after a failed grow", n)
	}
	for _, d := range []string{"grow-1", "grow-2"} {
		if _, err := os.Stat(filepath.Join(e.dir, d)); !os.IsNotExist(err) {
			t.Fatalf("%s left behind: %v", d, err)
		}
	}
	if _, err := s.CreatePartitions("grow", 3, false); !errors.Is(err, ErrStorage) {
		t.Fatalf("CreatePartitions with the log dir offline: %v", err)
	}
	if err := s.Close(); !errors.Is(err, ErrStorage) {
		t.Fatalf("Close = %v, want ErrStorage", err)
	}

	// A crash between creating grow-1 and writing the catalog.
	if err := os.MkdirAll(filepath.Join(e.dir, "grow-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "grow-1", "00000000000000000000.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s = e.open()
	defer s.Close()
	if _, err := s.CreatePartitions("grow", 2, false); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Topic("grow").Partitions); n != 2 {
		t.Fatalf("%d partitions", n)
	}
	// The empty leftover was removed, not set aside.
	strays, _ := filepath.Glob(filepath.Join(e.dir, "grow-1.*-stray"))
	if len(strays) != 0 {
		t.Fatalf("strays %v", strays)
	}
}
