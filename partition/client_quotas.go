package partition

// Client quotas (KIP-546): Kafka keeps them as ClientQuotaRecords in KRaft
// metadata; kcompatd keeps them in one small JSON file in the data dir,
// kcompatd-client-quotas.json, replaced atomically on every change:
//
//	{
//	  "version": 1,
//	  "entities": [
//	    {"entity": [{"type": "user", "name": "alice"}, {"type": "client-id", "name": null}],
//	     "quotas": {"producer_byte_rate": 1048576}}
//	  ]
//	}
//
// A null name is the entity type's default (Kafka's <default>). The store
// only keeps and persists them; which entity types, keys and values are
// valid is Kafka's API semantics and lives in protocol/. kcompatd does not
// enforce quotas.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

const (
	clientQuotasFile    = "kcompatd-client-quotas.json"
	clientQuotasVersion = 1
	// maxQuotaEntities bounds the file, so a client cannot grow it (and our
	// memory) without limit.
	maxQuotaEntities = 100_000
)

// QuotaEntityPart is one (entity type, name) pair of a quota entity; a nil
// Name is the type's default entity.
type QuotaEntityPart struct {
	Type string  `json:"type"`
	Name *string `json:"name"`
}

// ClientQuota is one entity and its quota values.
type ClientQuota struct {
	Entity []QuotaEntityPart  `json:"entity"` // sorted by Type
	Values map[string]float64 `json:"quotas"`
}

// ClientQuotaChange sets and removes quota values of one entity. A key in
// both is set.
type ClientQuotaChange struct {
	Entity []QuotaEntityPart
	Set    map[string]float64
	Remove []string
}

// ErrTooManyQuotaEntities refuses a change that would store more than
// maxQuotaEntities entities.
var ErrTooManyQuotaEntities = errors.New("partition: too many client quota entities")

type clientQuotaStore struct {
	mu       sync.Mutex
	entities map[string]ClientQuota // by entityKey
}

type clientQuotasJSON struct {
	Version  int           `json:"version"`
	Entities []ClientQuota `json:"entities"`
}

// entityKey is a canonical string for an entity whose parts are sorted by
// type: types and names are quoted, so no two entities share a key, and a
// default (null) name, written "!", sorts before every name.
func entityKey(parts []QuotaEntityPart) string {
	var b strings.Builder
	for _, p := range parts {
		fmt.Fprintf(&b, "%q=", p.Type)
		if p.Name == nil {
			b.WriteString("!;")
		} else {
			fmt.Fprintf(&b, "%q;", *p.Name)
		}
	}
	return b.String()
}

// sortedEntity returns a copy of parts sorted by type.
func sortedEntity(parts []QuotaEntityPart) []QuotaEntityPart {
	out := make([]QuotaEntityPart, len(parts))
	for i, p := range parts {
		out[i] = QuotaEntityPart{Type: p.Type}
		if p.Name != nil {
			n := *p.Name
			out[i].Name = &n
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

func (s *Store) loadClientQuotas() error {
	s.quotas.entities = map[string]ClientQuota{}
	data, err := readFile(s.fs, filepath.Join(s.cfg.Dir, clientQuotasFile), int64(s.maxMetadataBytes()))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var c clientQuotasJSON
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("partition: %s: %w", clientQuotasFile, err)
	}
	if c.Version != clientQuotasVersion {
		return fmt.Errorf("partition: %s version %d, want %d", clientQuotasFile, c.Version, clientQuotasVersion)
	}
	for _, q := range c.Entities {
		if len(q.Entity) == 0 || len(q.Values) == 0 {
			return fmt.Errorf("partition: %s: an entity without parts or quotas", clientQuotasFile)
		}
		q.Entity = sortedEntity(q.Entity)
		s.quotas.entities[entityKey(q.Entity)] = q
	}
	return nil
}

// ClientQuotas returns every entity with at least one quota, sorted by
// entity.
func (s *Store) ClientQuotas() []ClientQuota {
	s.quotas.mu.Lock()
	defer s.quotas.mu.Unlock()
	keys := make([]string, 0, len(s.quotas.entities))
	for k := range s.quotas.entities {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]ClientQuota, 0, len(keys))
	for _, k := range keys {
		q := s.quotas.entities[k]
		vals := make(map[string]float64, len(q.Values))
		for kk, v := range q.Values {
			vals[kk] = v
		}
		out = append(out, ClientQuota{Entity: sortedEntity(q.Entity), Values: vals})
	}
	return out
}

// ClientQuotaValues returns the quota values of one entity (nil if none).
func (s *Store) ClientQuotaValues(entity []QuotaEntityPart) map[string]float64 {
	s.quotas.mu.Lock()
	defer s.quotas.mu.Unlock()
	q, ok := s.quotas.entities[entityKey(sortedEntity(entity))]
	if !ok {
		return nil
	}
	vals := make(map[string]float64, len(q.Values))
	for k, v := range q.Values {
		vals[k] = v
	}
	return vals
}

// AlterClientQuotas applies changes in order, all or nothing: the file is
// rewritten once, and the new quotas are visible only after it is.
func (s *Store) AlterClientQuotas(changes []ClientQuotaChange) error {
	if len(changes) == 0 {
		return nil
	}
	s.quotas.mu.Lock()
	defer s.quotas.mu.Unlock()
	if s.isClosed() {
		return ErrClosed
	}
	next := make(map[string]ClientQuota, len(s.quotas.entities))
	for k, v := range s.quotas.entities {
		next[k] = v
	}
	for _, c := range changes {
		ent := sortedEntity(c.Entity)
		key := entityKey(ent)
		vals := map[string]float64{}
		for k, v := range next[key].Values {
			vals[k] = v
		}
		for _, k := range c.Remove {
			delete(vals, k)
		}
		for k, v := range c.Set {
			vals[k] = v
		}
		if len(vals) == 0 {
			delete(next, key)
		} else {
			next[key] = ClientQuota{Entity: ent, Values: vals}
		}
	}
	if len(next) > maxQuotaEntities {
		return fmt.Errorf("%w: more than %d", ErrTooManyQuotaEntities, maxQuotaEntities)
	}
	keys := make([]string, 0, len(next))
	for k := range next {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	c := clientQuotasJSON{Version: clientQuotasVersion, Entities: make([]ClientQuota, 0, len(keys))}
	for _, k := range keys {
		c.Entities = append(c.Entities, next[k])
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		// Only a NaN or infinite value fails; protocol/ refuses those.
		return fmt.Errorf("partition: encoding client quotas: %w", err)
	}
	if data, err = s.boundedMetadata("client quotas", append(data, '\n')); err != nil {
		return err
	}
	if err := writeFileAtomic(s.fs, filepath.Join(s.cfg.Dir, clientQuotasFile), data); err != nil {
		return fmt.Errorf("%w: writing client quotas: %v", ErrStorage, err)
	}
	s.quotas.entities = next
	return nil
}
