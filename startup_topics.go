package kcompatd

// Topics at start-up (kcompatd.create.topics, --create-topic): a compose
// file or a test names the topics it needs, and the broker creates the
// missing ones before it serves, so nothing has to run kafka-topics.sh
// first.

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/configdef"
	"github.com/kcompatd/kcompatd/partition"
)

// startupTopic is one entry of kcompatd.create.topics.
type startupTopic struct {
	name       string
	partitions int32
	configs    map[string]string
}

// topicSpecStart is how an entry begins: a topic name (Kafka's legal
// characters), a colon and a partition count. A comma-separated piece that
// does not begin so continues the previous entry's last config value
// (cleanup.policy=compact,delete).
var topicSpecStart = regexp.MustCompile(`^[A-Za-z0-9._-]+:[0-9]+(:|$)`)

// listValueOpen reports whether spec ends in a free-form LIST config (the
// throttled replica lists, items partition:broker), whose value a
// following piece of the form name:count might continue; a LIST of fixed
// choices (cleanup.policy) cannot.
func listValueOpen(spec string) bool {
	parts := strings.SplitN(spec, ":", 3)
	if len(parts) < 3 {
		return false
	}
	kvs := strings.Split(parts[2], ";")
	key, _, _ := strings.Cut(kvs[len(kvs)-1], "=")
	def, ok := partition.TopicConfigDef(strings.TrimSpace(key))
	return ok && def.Type == configdef.List && def.OneOf == nil
}

// parseStartupTopics parses name:partitions[:key=value;key=value...]
// entries, comma-separated, validating each as CreateTopics would over
// the broker defaults of topic configs in defaults.
func parseStartupTopics(s string, defaults partition.LogConfig) ([]startupTopic, error) {
	var specs []string
	for _, piece := range strings.Split(s, ",") {
		piece = strings.TrimSpace(piece)
		switch {
		case piece == "":
		case topicSpecStart.MatchString(piece) || len(specs) == 0:
			if len(specs) > 0 && listValueOpen(specs[len(specs)-1]) {
				return nil, fmt.Errorf("%q after %q: a new topic, or an item of a list value that looks like one? Give such a list (the throttled replica lists) with another tool", piece, specs[len(specs)-1])
			}
			specs = append(specs, piece)
		default:
			specs[len(specs)-1] += "," + piece
		}
	}
	var out []startupTopic
	seen := map[string]bool{}
	for _, spec := range specs {
		parts := strings.SplitN(spec, ":", 3)
		if len(parts) < 2 {
			return nil, fmt.Errorf("%q is not of the form name:partitions[:key=value;...]", spec)
		}
		t := startupTopic{name: parts[0], configs: map[string]string{}}
		if err := partition.ValidateTopicName(t.name); err != nil {
			return nil, fmt.Errorf("%q: %v", spec, err)
		}
		if partition.IsInternalTopic(t.name) {
			return nil, fmt.Errorf("%q: %s is created by its coordinator", spec, t.name)
		}
		if seen[t.name] {
			return nil, fmt.Errorf("topic %s is named twice", t.name)
		}
		seen[t.name] = true
		n, err := strconv.ParseInt(parts[1], 10, 32)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: the partition count must be a number from 1", spec)
		}
		t.partitions = int32(n)
		if len(parts) == 3 {
			for _, kv := range strings.Split(parts[2], ";") {
				if kv = strings.TrimSpace(kv); kv == "" {
					continue
				}
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return nil, fmt.Errorf("%q: %q is not key=value", spec, kv)
				}
				t.configs[strings.TrimSpace(k)] = v
			}
		}
		if _, err := partition.ResolveLogConfig(defaults, t.configs); err != nil {
			return nil, fmt.Errorf("%q: %v", spec, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// checkStartupTopics is kcompatd.create.topics' rule.
func checkStartupTopics(c *Config) string {
	defaults, err := partition.BrokerDefaults(c.LogDefaults)
	if err != nil {
		return "" // reported against the broker defaults
	}
	if _, err := parseStartupTopics(c.CreateTopics, defaults); err != nil {
		return err.Error()
	}
	return ""
}

// createStartupTopics creates the topics of specs that the store does not
// have. An existing topic is left as it is; one whose partition count
// differs is reported.
func createStartupTopics(store *partition.Store, specs []startupTopic, log zerolog.Logger) error {
	for _, t := range specs {
		if have := store.Topic(t.name); have != nil {
			if got := int32(len(have.Partitions)); got != t.partitions {
				log.Warn().Str("topic", t.name).Int32("partitions", got).Int32("wanted", t.partitions).
					Msg("start-up topic exists with another partition count; left as it is")
			}
			continue
		}
		_, err := store.CreateTopic(t.name, t.partitions, t.configs, false)
		switch {
		case errors.Is(err, partition.ErrTopicExists):
			continue
		case errors.Is(err, partition.ErrInvalidConfig):
			// Valid over the static defaults (--check-config says so),
			// refused over dynamic ones a client set since: a client
			// must not be able to keep the broker from starting.
			log.Error().Err(err).Str("topic", t.name).Msg("start-up topic not created: its configs conflict with the dynamic broker configs")
			continue
		}
		if err != nil {
			return fmt.Errorf("kcompatd: creating start-up topic %s: %w", t.name, err)
		}
		log.Info().Str("topic", t.name).Int32("partitions", t.partitions).Msg("created start-up topic")
	}
	return nil
}
