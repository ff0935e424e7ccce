package partition

// The topic catalog: Kafka keeps topics in KRaft metadata; kcompatd keeps
// them in one small JSON file in the data dir, kcompatd-catalog.json,
// replaced atomically on every change:
//
//	{
//	  "version": 1,
//	  "topics": [
//	    {"name": "orders", "id": "<base64url uuid>", "partitions": 3,
//	     "configs": {"cleanup.policy": "compact"}}
//	  ]
//	}
//
// configs holds only the topic-level overrides, as given; the effective
// LogConfig is recomputed from the broker defaults at every start, so a
// changed broker default applies to topics that do not override it, as in
// Kafka.

import (
	"encoding/json"
	"fmt"
	"sort"
)

const catalogVersion = 1

type catalogJSON struct {
	Version int                `json:"version"`
	Topics  []catalogTopicJSON `json:"topics"`
}

type catalogTopicJSON struct {
	Name       string            `json:"name"`
	ID         string            `json:"id"`
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
}

func encodeCatalog(topics map[string]*Topic) []byte {
	c := catalogJSON{Version: catalogVersion, Topics: []catalogTopicJSON{}}
	for _, t := range topics {
		c.Topics = append(c.Topics, catalogTopicJSON{
			Name:       t.Name,
			ID:         t.ID.String(),
			Partitions: int32(len(t.Partitions)),
			Configs:    t.Overrides,
		})
	}
	sort.Slice(c.Topics, func(i, j int) bool { return c.Topics[i].Name < c.Topics[j].Name })
	b, _ := json.MarshalIndent(c, "", "  ") // cannot fail: strings and ints only
	return append(b, '\n')
}

func decodeCatalog(data []byte) ([]catalogTopicJSON, error) {
	var c catalogJSON
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("partition: catalog: %w", err)
	}
	if c.Version != catalogVersion {
		return nil, fmt.Errorf("partition: catalog version %d, want %d", c.Version, catalogVersion)
	}
	seen := map[string]bool{}
	for _, t := range c.Topics {
		if err := ValidateTopicName(t.Name); err != nil {
			return nil, fmt.Errorf("partition: catalog: %w", err)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("partition: catalog: topic %q twice", t.Name)
		}
		seen[t.Name] = true
		if t.Partitions < 1 || t.Partitions > maxPartitions {
			return nil, fmt.Errorf("partition: catalog: topic %q has %d partitions", t.Name, t.Partitions)
		}
		if _, err := ParseTopicID(t.ID); err != nil {
			return nil, fmt.Errorf("partition: catalog: topic %q: %w", t.Name, err)
		}
	}
	return c.Topics, nil
}
