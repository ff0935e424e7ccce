package coordinator

// The topology of a streams group (KIP-1071) and its configuration
// against the topics that exist, as Kafka 4.3's StreamsTopology and
// InternalTopicManager.configureTopics: source topics must exist
// (MISSING_SOURCE_TOPICS); repartition topics without a partition count
// take the largest count of the sources of the subtopologies writing to
// them; copartition groups must agree (INCORRECTLY_PARTITIONED_TOPICS);
// changelog topics have one partition per task of their subtopology; a
// missing internal topic is asked for (MISSING_INTERNAL_TOPICS) and one
// with the wrong partition count is INCORRECTLY_PARTITIONED_TOPICS. Only a
// topology with no such status is ready, and only then has tasks.

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Status codes of StreamsGroupHeartbeatResponse.Status.
const (
	streamsStaleTopology               int8 = 0
	streamsMissingSourceTopics         int8 = 1
	streamsIncorrectlyPartitionedTopic int8 = 2
	streamsMissingInternalTopics       int8 = 3
	streamsShutdownApplication         int8 = 4
	streamsAssignmentDelayed           int8 = 5
)

// stKV is one key-value pair (topic configs, client tags).
type stKV struct{ key, value string }

// stTopicInfo is an internal topic of the topology.
type stTopicInfo struct {
	name              string
	partitions        int32 // 0: derived
	replicationFactor int16
	configs           []stKV
}

// stCopartition is a copartition group: indexes into the subtopology's
// source, regex and repartition source topics.
type stCopartition struct {
	sources, regexes, repartitionSources []int16
}

type stSubtopology struct {
	id                 string
	sources            []string
	regexes            []string
	changelogs         []stTopicInfo
	repartitionSinks   []string
	repartitionSources []stTopicInfo
	copartitions       []stCopartition
}

// streamsTopology is a group's topology as its first member gave it.
type streamsTopology struct {
	epoch int32
	subs  []stSubtopology // by id
}

func topologyFromRequest(t *kmsg.StreamsGroupHeartbeatRequestTopology) *streamsTopology {
	info := func(ts []kmsg.TopicInfo) []stTopicInfo {
		out := make([]stTopicInfo, 0, len(ts))
		for _, t := range ts {
			ti := stTopicInfo{name: t.Topic, partitions: t.NumPartitions, replicationFactor: t.ReplicationFactor}
			for _, c := range t.Configs {
				ti.configs = append(ti.configs, stKV{c.Key, c.Value})
			}
			out = append(out, ti)
		}
		return out
	}
	st := &streamsTopology{epoch: t.Epoch}
	for _, s := range t.Subtopologies {
		sub := stSubtopology{
			id:                 s.SubtopologyID,
			sources:            slices.Clone(s.SourceTopics),
			regexes:            slices.Clone(s.SourceTopicRegex),
			changelogs:         info(s.StateChangelogTopics),
			repartitionSinks:   slices.Clone(s.RepartitionSinkTopics),
			repartitionSources: info(s.RepartitionSourceTopics),
		}
		for _, g := range s.CopartitionGroups {
			sub.copartitions = append(sub.copartitions, stCopartition{g.SourceTopics, g.SourceTopicRegex, g.RepartitionSourceTopics})
		}
		st.subs = append(st.subs, sub)
	}
	slices.SortFunc(st.subs, func(a, b stSubtopology) int { return strings.Compare(a.id, b.id) })
	return st
}

// equal compares two topologies (Kafka refuses a different topology at
// the same epoch: topology updates are not supported).
func (t *streamsTopology) equal(o *streamsTopology) bool {
	return fmt.Sprint(*t) == fmt.Sprint(*o)
}

// validateTopology is Kafka's throwIfInvalidTopology; "" when valid.
func validateTopology(t *kmsg.StreamsGroupHeartbeatRequestTopology) string {
	seen := map[string]bool{}
	sinks := map[string]bool{}
	sources := map[string]bool{}
	for _, s := range t.Subtopologies {
		if seen[s.SubtopologyID] {
			return fmt.Sprintf("Duplicate subtopology ID %s.", s.SubtopologyID)
		}
		seen[s.SubtopologyID] = true
		for _, c := range s.StateChangelogTopics {
			if c.NumPartitions != 0 {
				return fmt.Sprintf("Changelog topic %s must have an undefined partition count, but it is set to %d.", c.Topic, c.NumPartitions)
			}
		}
		for _, r := range s.RepartitionSinkTopics {
			sinks[r] = true
		}
		for _, r := range s.RepartitionSourceTopics {
			sources[r.Topic] = true
		}
		for _, g := range s.CopartitionGroups {
			for _, i := range g.SourceTopics {
				if int(i) < 0 || int(i) >= len(s.SourceTopics) {
					return fmt.Sprintf("Copartition group of subtopology %s refers to source topic index %d out of range.", s.SubtopologyID, i)
				}
			}
			for _, i := range g.SourceTopicRegex {
				if int(i) < 0 || int(i) >= len(s.SourceTopicRegex) {
					return fmt.Sprintf("Copartition group of subtopology %s refers to source topic regex index %d out of range.", s.SubtopologyID, i)
				}
			}
			for _, i := range g.RepartitionSourceTopics {
				if int(i) < 0 || int(i) >= len(s.RepartitionSourceTopics) {
					return fmt.Sprintf("Copartition group of subtopology %s refers to repartition source topic index %d out of range.", s.SubtopologyID, i)
				}
			}
		}
	}
	for r := range sinks {
		if !sources[r] {
			return fmt.Sprintf("Repartition sink topic %s is not a repartition source topic of any subtopology.", r)
		}
	}
	return ""
}

// internalTopic is an internal topic to create.
type internalTopic struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string
}

// configuredTopology is the result of configuring a topology against the
// topics: ready with a task count per subtopology, or a status.
type configuredTopology struct {
	tasks    map[string]int32 // subtopology id -> number of tasks; nil if not ready
	status   int8             // meaningful when detail != ""
	detail   string
	toCreate []internalTopic
	// partitionsOf is every source or repartition topic's partition
	// count, for the endpoint answer.
	sourcesOf map[string][]string // subtopology -> its source and repartition source topics
	internal  map[string]int32    // repartition topic -> its partition count
}

func (c *configuredTopology) ready() bool { return c != nil && c.tasks != nil }

// configureTopology configures t against the topics: partitions(name)
// is a topic's partition count, or -1 when it does not exist.
func configureTopology(t *streamsTopology, partitions func(string) int32) *configuredTopology {
	ct := &configuredTopology{sourcesOf: map[string][]string{}, internal: map[string]int32{}}
	fail := func(status int8, detail string) *configuredTopology {
		ct.status, ct.detail, ct.tasks = status, detail, nil
		return ct
	}
	internal := map[string]bool{}
	for _, s := range t.subs {
		for _, r := range s.repartitionSources {
			internal[r.name] = true
		}
		for _, c := range s.changelogs {
			internal[c.name] = true
		}
	}
	var missing []string
	for _, s := range t.subs {
		for _, src := range s.sources {
			if !internal[src] && partitions(src) < 0 {
				missing = append(missing, src)
			}
		}
		if len(s.regexes) > 0 {
			return fail(streamsMissingSourceTopics, "Regular expressions for source topics are not supported.")
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		missing = slices.Compact(missing)
		return fail(streamsMissingSourceTopics, "Source topics "+strings.Join(missing, ", ")+" are missing.")
	}

	// Repartition topics' partition counts: fixed, or the largest count
	// of the sources of the subtopologies that write to them, until no
	// more can be derived.
	counts := map[string]int32{}
	for _, s := range t.subs {
		for _, r := range s.repartitionSources {
			if r.partitions > 0 {
				counts[r.name] = r.partitions
			}
		}
	}
	countOf := func(topic string) int32 {
		if n, ok := counts[topic]; ok {
			return n
		}
		if internal[topic] {
			return -1
		}
		return partitions(topic)
	}
	for range len(t.subs) + 1 {
		changed := false
		for _, s := range t.subs {
			var n int32 = -1
			for _, src := range s.sources {
				n = max(n, countOf(src))
			}
			for _, r := range s.repartitionSources {
				n = max(n, countOf(r.name))
			}
			if n <= 0 {
				continue
			}
			for _, sink := range s.repartitionSinks {
				if _, ok := counts[sink]; !ok {
					counts[sink] = n
					changed = true
				}
			}
		}
		if !changed {
			break
		}
	}

	// Copartition groups: the external topics must agree; the
	// repartition topics without a fixed count follow them.
	for _, s := range t.subs {
		for _, g := range s.copartitions {
			var ext []string
			var rep []stTopicInfo
			for _, i := range g.sources {
				if internal[s.sources[i]] {
					continue
				}
				ext = append(ext, s.sources[i])
			}
			for _, i := range g.repartitionSources {
				rep = append(rep, s.repartitionSources[i])
			}
			var want int32 = -1
			for _, e := range ext {
				n := partitions(e)
				if want >= 0 && n != want {
					return fail(streamsIncorrectlyPartitionedTopic, "Following topics do not have the same number of partitions: ["+strings.Join(ext, ", ")+"]")
				}
				want = n
			}
			if want < 0 {
				for _, r := range rep {
					want = max(want, counts[r.name])
				}
			}
			for _, r := range rep {
				if r.partitions == 0 && want > 0 {
					counts[r.name] = want
				} else if r.partitions > 0 && want > 0 && r.partitions != want {
					return fail(streamsIncorrectlyPartitionedTopic, "Following topics do not have the same number of partitions: "+r.name)
				}
			}
		}
	}

	ct.tasks = map[string]int32{}
	var wanted []internalTopic
	for _, s := range t.subs {
		var n int32
		srcs := slices.Clone(s.sources)
		for _, src := range s.sources {
			n = max(n, countOf(src))
		}
		for _, r := range s.repartitionSources {
			c, ok := counts[r.name]
			if !ok {
				return fail(streamsMissingInternalTopics, "Failed to compute the number of partitions of repartition topic "+r.name+".")
			}
			n = max(n, c)
			ct.internal[r.name] = c
			if !slices.Contains(srcs, r.name) {
				srcs = append(srcs, r.name)
			}
			wanted = append(wanted, internalTopic{r.name, c, r.replicationFactor, kvMap(r.configs)})
		}
		ct.tasks[s.id] = n
		ct.sourcesOf[s.id] = srcs
		for _, c := range s.changelogs {
			wanted = append(wanted, internalTopic{c.name, n, c.replicationFactor, kvMap(c.configs)})
		}
	}
	var missingInternal []string
	for _, w := range wanted {
		have := partitions(w.Name)
		switch {
		case have < 0:
			if !slices.ContainsFunc(ct.toCreate, func(i internalTopic) bool { return i.Name == w.Name }) {
				ct.toCreate = append(ct.toCreate, w)
				missingInternal = append(missingInternal, w.Name)
			}
		case have != w.Partitions:
			ct.toCreate = nil
			return fail(streamsIncorrectlyPartitionedTopic, fmt.Sprintf("Existing internal topic %s has invalid number of partitions: %d, expected %d.", w.Name, have, w.Partitions))
		}
	}
	if len(missingInternal) > 0 {
		toCreate := ct.toCreate
		fail(streamsMissingInternalTopics, "Internal topics are missing: "+strings.Join(missingInternal, ", "))
		ct.toCreate = toCreate
		return ct
	}
	return ct
}

func kvMap(kvs []stKV) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.key] = kv.value
	}
	return m
}

// topics are every topic the topology names, sorted.
func (t *streamsTopology) topics() []string {
	var out []string
	for _, s := range t.subs {
		out = append(out, s.sources...)
		out = append(out, s.repartitionSinks...)
		for _, r := range s.repartitionSources {
			out = append(out, r.name)
		}
		for _, c := range s.changelogs {
			out = append(out, c.name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// metadataHash is over the topology's topics that exist, their ids and
// partition counts: a change reconfigures the topology and moves the
// group epoch (Kafka's computeMetadataHash).
func (g *group) streamsMetadataHash(t *streamsTopology) int64 {
	h := fnv.New64a()
	for _, name := range t.topics() {
		tt := g.c.store.Topic(name)
		if tt == nil {
			continue
		}
		h.Write([]byte(name))
		h.Write(tt.ID[:])
		fmt.Fprintf(h, "/%d;", len(tt.Partitions))
	}
	return int64(h.Sum64())
}

// topicPartitions is the partition count of a topic, -1 if it does not
// exist.
func (g *group) topicPartitionCount(name string) int32 {
	if t := g.c.store.Topic(name); t != nil {
		return int32(len(t.Partitions))
	}
	return -1
}
