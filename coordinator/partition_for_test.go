package coordinator

import (
	"testing"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// TestPartitionForNegativeHashes: golden partitions (of 50) computed by
// Kafka 4.3.1's Utils.abs(id.hashCode()) % 50 on a JVM; the negative
// hashes are the ones the sign mask got wrong.
func TestPartitionForNegativeHashes(t *testing.T) {
	for _, tc := range []struct {
		id   string
		hash int32 // Java's String.hashCode, for the record
		want int32
	}{
		{"compat-java-share-1796169633-25990-share", -974201467, 17},
		{"my-group", -1906497762, 12},
		{"txn-42", -859841343, 43},
		{"polygenelubricants", -2147483648, 0},
		{"console-consumer-12345", 158455506, 6},
		{"héllo-ü", 289793213, 13},
		{"emoji-😀", 1164511306, 6},
		{"g", 103, 3},
	} {
		if got := PartitionFor(tc.id, 50); got != tc.want {
			t.Errorf("PartitionFor(%q, 50) = %d, want %d (hashCode %d)", tc.id, got, tc.want, tc.hash)
		}
	}
}

// legacyPartitionFor is how kcompatd computed the partition before it was
// Kafka's: the sign bit masked.
func legacyPartitionFor(id string, n int32) int32 {
	var h int32
	for _, r := range id {
		h = 31*h + int32(r)
	}
	return (h & 0x7fffffff) % n
}

// TestLegacyPartitionGroupStays: a group whose records an older kcompatd
// wrote to the sign-masked partition loads from there, keeps writing
// there (nothing goes to Kafka's partition), and has all its offsets
// after another restart; a new group with a negative hash goes to
// Kafka's partition.
func TestLegacyPartitionGroupStays(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.OffsetsTopicPartitions = 50 })
	const id = "compat-java-share-1796169633-25990-share"
	legacy, kafkas := legacyPartitionFor(id, 50), PartitionFor(id, 50)
	if legacy != 31 || kafkas != 17 {
		t.Fatalf("partitions %d/%d, want 31/17", legacy, kafkas)
	}
	if _, err := e.c.EnsureOffsetsTopic(); err != nil {
		t.Fatal(err)
	}
	// What an older kcompatd wrote: a commit of t-0 at 5 in partition 31.
	g := newGroup(e.c, id)
	rec := g.offsetRecord(topicPartition{"t", 0}, &offsetEntry{offset: 5, leaderEpoch: -1, commitTimestamp: e.c.Now(), expireTimestamp: -1})
	b, err := recordbatch.Build(recordbatch.BatchSpec{BaseTimestamp: e.c.Now(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, []recordbatch.Record{rec})
	if err != nil {
		t.Fatal(err)
	}
	log, err := e.store.Log(OffsetsTopic, legacy)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := log.Append(b); err != nil {
		t.Fatal(err)
	}
	e.restart()
	if got := fetch(e, id)["t"]; got != 5 {
		t.Fatalf("legacy offset %d, want 5", got)
	}
	expectCode(t, "commit", commit(e, id, -1, "", map[string]int64{"t": 6, "u": 7}), nil)
	end := func(p int32) int64 {
		l, err := e.store.Log(OffsetsTopic, p)
		if err != nil {
			t.Fatal(err)
		}
		return l.Offsets().LogEndOffset
	}
	if n := end(kafkas); n != 0 {
		t.Fatalf("%d records in Kafka's partition %d for a group living in %d", n, kafkas, legacy)
	}
	if n := end(legacy); n != 3 {
		t.Fatalf("legacy partition end %d, want 3 (the old commit and two new)", n)
	}
	e.restart()
	if got := fetch(e, id); got["t"] != 6 || got["u"] != 7 {
		t.Fatalf("offsets after restart %v, want t=6 u=7", got)
	}
	expectCode(t, "commit", commit(e, "my-group", -1, "", map[string]int64{"t": 1}), nil)
	if n := end(PartitionFor("my-group", 50)); n != 1 || PartitionFor("my-group", 50) == legacyPartitionFor("my-group", 50) {
		t.Fatalf("new group's commit not in Kafka's partition (%d records)", n)
	}
}

// TestLegacyTxnPartitionStays: a transactional id whose record load finds
// in the sign-masked __transaction_state partition keeps that partition;
// others get Kafka's.
func TestLegacyTxnPartitionStays(t *testing.T) {
	const id = "compat-java-share-1796169633-25990-share"
	rec := txnRecord(id, &txnData{producerID: 5, prevProducerID: -1, nextProducerID: -1, producerEpoch: 1, lastEpoch: -1,
		timeoutMs: 1000, state: txnEmpty, partitions: map[TopicPartition]struct{}{}})
	batch, err := recordbatch.Build(recordbatch.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, []recordbatch.Record{rec})
	if err != nil {
		t.Fatal(err)
	}
	c := newTxnCoordinator(DefaultTxnConfig(), nil)
	c.loading.part, c.loading.n = legacyPartitionFor(id, 50), 50
	if _, err := c.loadTxnBatches(batch, map[string]*txnData{}); err != nil {
		t.Fatal(err)
	}
	if got := c.txnPartition(id, 50); got != 31 {
		t.Errorf("loaded id's partition %d, want its legacy 31", got)
	}
	if got := c.txnPartition("txn-42", 50); got != 43 {
		t.Errorf("new id's partition %d, want Kafka's 43", got)
	}
}
