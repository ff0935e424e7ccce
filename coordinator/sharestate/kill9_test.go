package sharestate

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
)

const kill9DirEnv = "SHARESTATE_KILL9_DIR"

// kill9Config: two state partitions, a snapshot every third write.
func kill9Config() Config {
	return conf(func(c *Config) { c.StateTopicPartitions, c.SnapshotUpdateRecordsPerSnapshot = 2, 3 })
}

func openDir(dir string) (*partition.Store, *Coordinator, error) {
	defaults := partition.DefaultLogConfig()
	defaults.FlushMessages = 1 // durable when Append returns
	s, err := partition.Open(partition.Config{Dir: dir, NodeID: 1, Clock: clock.Real{}, Logger: zerolog.Nop(), Defaults: defaults})
	if err != nil {
		return nil, nil, err
	}
	c, err := New(kill9Config(), s, clock.Real{}, zerolog.Nop())
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, c, nil
}

// TestKill9Helper is the process TestKill9KeepsAnsweredWrites kills: it
// writes share-partition states forever, printing "acked N" after write N
// returned.
func TestKill9Helper(t *testing.T) {
	dir := os.Getenv(kill9DirEnv)
	if dir == "" {
		t.Skip("run by TestKill9KeepsAnsweredWrites")
	}
	s, c, err := openDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := s.CreateTopic("t", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	k := Key{GroupID: "g", TopicID: tp.ID, Partition: 0}
	if err := c.Initialize(k, 0, 0); err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i < 1_000_000; i++ {
		if err := c.Write(k, 0, 0, i, int32(i), []StateBatch{b(i, i+1, 2, 1)}); err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("acked " + strconv.FormatInt(i, 10) + "\n")
	}
}

// TestKill9KeepsAnsweredWrites kills (SIGKILL) a process writing states
// with flush.messages=1 after it answered some writes: the state loads as
// of the last answered write or the one in flight.
func TestKill9KeepsAnsweredWrites(t *testing.T) {
	if os.Getenv(kill9DirEnv) != "" {
		t.Skip("in the helper")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill9Helper$", "-test.count=1")
	cmd.Env = append(os.Environ(), kill9DirEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := make(chan int64)
	go func() {
		defer close(acked)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if n, ok := strings.CutPrefix(sc.Text(), "acked "); ok {
				v, _ := strconv.ParseInt(n, 10, 64)
				acked <- v
			}
		}
	}()
	var last int64
	deadline := time.After(60 * time.Second) // a bound, not an assertion on speed
	for last < 40 {
		select {
		case v, ok := <-acked:
			if !ok {
				t.Fatalf("helper ended after %d writes: %v", last, cmd.Wait())
			}
			last = v
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("helper answered only %d writes in 60 s", last)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Lines already written before the kill are answered writes too.
	for v := range acked {
		last = v
	}
	_ = cmd.Wait()

	s, c, err := openDir(dir)
	if err != nil {
		t.Fatalf("open after kill -9: %v", err)
	}
	defer s.Close()
	defer c.Close()
	k := Key{GroupID: "g", TopicID: s.Topic("t").ID, Partition: 0}
	st, found, err := c.Read(k, -1)
	if err != nil || !found {
		t.Fatalf("read after kill -9: %v %v", found, err)
	}
	if st.StartOffset != last && st.StartOffset != last+1 {
		t.Fatalf("start offset %d after kill -9, last answered write %d", st.StartOffset, last)
	}
	i := st.StartOffset
	if want := (State{StartOffset: i, DeliveryCompleteCount: int32(i), Batches: []StateBatch{b(i, i+1, 2, 1)}}); !statesEqual(st, want) {
		t.Fatalf("state %+v, want %+v", st, want)
	}
	t.Logf("killed after %d answered writes; loaded write %d", last, i)
}
