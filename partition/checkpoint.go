package partition

// Kafka's small text files, byte for byte as Kafka 3.9 writes them:
//
//	recovery-point-offset-checkpoint,    version line "0", count line, then
//	log-start-offset-checkpoint          "<topic> <partition> <offset>" lines
//	leader-epoch-checkpoint              "0", count, "<epoch> <startOffset>"
//	partition.metadata                   "version: 0\ntopic_id: <base64url>\n"
//	meta.properties                      Java properties (KRaft, version=1)
//
// Every one of them is written with vfs.WriteFileAtomic, and every decoder
// takes untrusted bytes: it returns an error, never panics, and allocates no
// more than the input justifies.

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Names of files Kafka keeps in the data dir and in partition dirs.
const (
	recoveryPointFile      = "recovery-point-offset-checkpoint"
	logStartOffsetFile     = "log-start-offset-checkpoint"
	leaderEpochFile        = "leader-epoch-checkpoint"
	partitionMetadataFile  = "partition.metadata"
	metaPropertiesFile     = "meta.properties"
	cleanShutdownFile      = ".kafka_cleanshutdown"
	lockFile               = ".lock"
	catalogFile            = "kcompatd-catalog.json"
	checkpointVersion      = 0
	maxCheckpointFileBytes = 64 << 20
)

// errBadCheckpoint marks a checkpoint file that does not parse.
var errBadCheckpoint = errors.New("partition: malformed checkpoint file")

// topicPartition names a partition in the data-dir checkpoints.
type topicPartition struct {
	Topic     string
	Partition int32
}

// encodeOffsetCheckpoint writes Kafka's OffsetCheckpointFile format, sorted
// for stable output (Kafka's order is a hash map's).
func encodeOffsetCheckpoint(m map[topicPartition]int64) []byte {
	keys := make([]topicPartition, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Topic != keys[j].Topic {
			return keys[i].Topic < keys[j].Topic
		}
		return keys[i].Partition < keys[j].Partition
	})
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(keys))
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %d %d\n", k.Topic, k.Partition, m[k])
	}
	return b.Bytes()
}

// checkpointLines splits a checkpoint file into its entry lines after
// checking the version and count lines.
func checkpointLines(data []byte) ([]string, error) {
	if len(data) > maxCheckpointFileBytes {
		return nil, fmt.Errorf("%w: %d bytes", errBadCheckpoint, len(data))
	}
	s := string(data)
	if !strings.HasSuffix(s, "\n") {
		return nil, fmt.Errorf("%w: missing final newline", errBadCheckpoint)
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) < 2 {
		return nil, fmt.Errorf("%w: missing version or count line", errBadCheckpoint)
	}
	v, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || v != checkpointVersion {
		return nil, fmt.Errorf("%w: unrecognized version %q", errBadCheckpoint, lines[0])
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n < 0 || n != len(lines)-2 {
		return nil, fmt.Errorf("%w: expected %q entries, found %d", errBadCheckpoint, lines[1], len(lines)-2)
	}
	return lines[2:], nil
}

// decodeOffsetCheckpoint parses Kafka's OffsetCheckpointFile format.
func decodeOffsetCheckpoint(data []byte) (map[topicPartition]int64, error) {
	lines, err := checkpointLines(data)
	if err != nil {
		return nil, err
	}
	m := make(map[topicPartition]int64, len(lines))
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("%w: bad entry %q", errBadCheckpoint, line)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 || o < 0 {
			return nil, fmt.Errorf("%w: bad entry %q", errBadCheckpoint, line)
		}
		m[topicPartition{f[0], int32(p)}] = o
	}
	return m, nil
}

// epochEntry is one leader-epoch-checkpoint line.
type epochEntry struct {
	Epoch       int32
	StartOffset int64
}

func encodeLeaderEpochCheckpoint(entries []epochEntry) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b.Bytes()
}

func decodeLeaderEpochCheckpoint(data []byte) ([]epochEntry, error) {
	lines, err := checkpointLines(data)
	if err != nil {
		return nil, err
	}
	out := make([]epochEntry, 0, len(lines))
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("%w: bad entry %q", errBadCheckpoint, line)
		}
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 || o < 0 {
			return nil, fmt.Errorf("%w: bad entry %q", errBadCheckpoint, line)
		}
		out = append(out, epochEntry{int32(e), o})
	}
	return out, nil
}

// String is the topic id as Kafka prints it: base64url without padding.
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// hex is the UUID's 32 hex digits without dashes, as Kafka names deleted
// and stray partition directories.
func (id TopicID) hex() string { return hex.EncodeToString(id[:]) }

// ParseTopicID parses Kafka's base64url form of a topic id.
func ParseTopicID(s string) (TopicID, error) {
	var id TopicID
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, fmt.Errorf("partition: invalid uuid %q", s)
	}
	copy(id[:], b)
	return id, nil
}

// newUUID returns a random version-4 UUID as Kafka's Uuid.randomUuid does:
// never zero, never the reserved METADATA_TOPIC_ID (1), never one whose
// string form starts with '-' (it would look like a command-line flag).
func newUUID() TopicID {
	for {
		var id TopicID
		if _, err := rand.Read(id[:]); err != nil {
			panic("partition: crypto/rand failed: " + err.Error()) // cannot happen on Linux
		}
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		if id != (TopicID{}) && id != (TopicID{15: 1}) && !strings.HasPrefix(id.String(), "-") {
			return id
		}
	}
}

func encodePartitionMetadata(id TopicID) []byte {
	return []byte("version: 0\ntopic_id: " + id.String() + "\n")
}

func decodePartitionMetadata(data []byte) (TopicID, error) {
	if len(data) > 4096 {
		return TopicID{}, fmt.Errorf("%w: partition.metadata too large", errBadCheckpoint)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) != 2 {
		return TopicID{}, fmt.Errorf("%w: partition.metadata has %d lines", errBadCheckpoint, len(lines))
	}
	v, ok1 := strings.CutPrefix(lines[0], "version: ")
	idStr, ok2 := strings.CutPrefix(lines[1], "topic_id: ")
	if !ok1 || !ok2 || strings.TrimSpace(v) != "0" {
		return TopicID{}, fmt.Errorf("%w: partition.metadata %q", errBadCheckpoint, data)
	}
	return ParseTopicID(strings.TrimSpace(idStr))
}

// metaProperties is meta.properties in KRaft format (version=1).
type metaProperties struct {
	ClusterID   string
	NodeID      int32
	DirectoryID TopicID
}

func encodeMetaProperties(m metaProperties, now string) []byte {
	// Java's Properties.store writes a comment line with the date; Kafka
	// passes an empty comment, hence the bare "#".
	return []byte("#\n#" + now + "\n" +
		"cluster.id=" + m.ClusterID + "\n" +
		"directory.id=" + m.DirectoryID.String() + "\n" +
		"node.id=" + strconv.Itoa(int(m.NodeID)) + "\n" +
		"version=1\n")
}

func decodeMetaProperties(data []byte) (metaProperties, error) {
	var m metaProperties
	if len(data) > 64<<10 {
		return m, fmt.Errorf("%w: meta.properties too large", errBadCheckpoint)
	}
	props := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return m, fmt.Errorf("%w: meta.properties line %q", errBadCheckpoint, line)
		}
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if props["version"] != "1" {
		return m, fmt.Errorf("%w: meta.properties version %q, want 1", errBadCheckpoint, props["version"])
	}
	m.ClusterID = props["cluster.id"]
	if m.ClusterID == "" {
		return m, fmt.Errorf("%w: meta.properties has no cluster.id", errBadCheckpoint)
	}
	n, err := strconv.ParseInt(props["node.id"], 10, 32)
	if err != nil {
		return m, fmt.Errorf("%w: meta.properties node.id %q", errBadCheckpoint, props["node.id"])
	}
	m.NodeID = int32(n)
	if d := props["directory.id"]; d != "" {
		if m.DirectoryID, err = ParseTopicID(d); err != nil {
			return m, err
		}
	}
	return m, nil
}
