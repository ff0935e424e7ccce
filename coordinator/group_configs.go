package coordinator

// Group configs (KIP-848's GROUP config resource): Kafka 4.3's GroupConfig
// catalog, the per-group overrides set with IncrementalAlterConfigs, and
// the effective value of each for a group (the override clamped to the
// broker's bounds, as GroupConfig.evaluate, else the broker's value).
//
// Kafka keeps the overrides in its metadata log (ConfigRecords); a single
// broker without one keeps them in the data dir's group-configs file,
// written atomically on every change.

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kcompatd/kcompatd/coordinator/sharefetch"
	"github.com/kcompatd/kcompatd/internal/vfs"
)

// GroupConfigsFile holds the group config overrides in the data dir.
const GroupConfigsFile = "group-configs"

// GroupConfigType is a group config's type, as DescribeConfigs reports it.
type GroupConfigType int8

// ConfigType ids of DescribeConfigs v3+.
const (
	GroupConfigBoolean GroupConfigType = 1
	GroupConfigString  GroupConfigType = 2
	GroupConfigInt     GroupConfigType = 3
)

// GroupConfigDef is one entry of Kafka 4.3's GroupConfig.
type GroupConfigDef struct {
	Name string
	Type GroupConfigType
	// Broker: it defaults to the broker property "group." + Name (its
	// synonym, as Kafka's GroupConfig.brokerSynonym).
	Broker bool
	// Min is an INT config's lower bound (its validator's).
	Min int64
	// Allowed are a STRING config's values; by_duration takes a suffix.
	Allowed []string
	Doc     string
}

// Group config names, as Kafka 4.3's GroupConfig.
const (
	ConsumerSessionTimeoutConfig      = "consumer.session.timeout.ms"
	ConsumerHeartbeatIntervalConfig   = "consumer.heartbeat.interval.ms"
	ConsumerAssignmentIntervalConfig  = "consumer.assignment.interval.ms"
	ShareSessionTimeoutConfig         = "share.session.timeout.ms"
	ShareHeartbeatIntervalConfig      = "share.heartbeat.interval.ms"
	ShareRecordLockDurationConfig     = "share.record.lock.duration.ms"
	ShareDeliveryCountLimitConfig     = "share.delivery.count.limit"
	SharePartitionMaxRecordLocksCfg   = "share.partition.max.record.locks"
	ShareAutoOffsetResetConfig        = "share.auto.offset.reset"
	ShareIsolationLevelConfig         = "share.isolation.level"
	ShareRenewAcknowledgeEnableConfig = "share.renew.acknowledge.enable"
	ShareAssignmentIntervalConfig     = "share.assignment.interval.ms"
	StreamsSessionTimeoutConfig       = "streams.session.timeout.ms"
	StreamsHeartbeatIntervalConfig    = "streams.heartbeat.interval.ms"
	StreamsNumStandbyReplicasConfig   = "streams.num.standby.replicas"
	StreamsInitialRebalanceDelayCfg   = "streams.initial.rebalance.delay.ms"
	StreamsAssignmentIntervalConfig   = "streams.assignment.interval.ms"
)

// GroupConfigDefs is Kafka 4.3's GroupConfig.CONFIG_DEF, in its order.
var GroupConfigDefs = []GroupConfigDef{
	{Name: ConsumerSessionTimeoutConfig, Type: GroupConfigInt, Broker: true, Min: 1, Doc: "The timeout to detect client failures when using the consumer group protocol."},
	{Name: ConsumerHeartbeatIntervalConfig, Type: GroupConfigInt, Broker: true, Min: 1, Doc: "The heartbeat interval given to the members of a consumer group."},
	{Name: ConsumerAssignmentIntervalConfig, Type: GroupConfigInt, Broker: true, Min: 0, Doc: "The minimum time between target assignment computations of a consumer group."},
	{Name: ShareSessionTimeoutConfig, Type: GroupConfigInt, Broker: true, Min: 1, Doc: "The timeout to detect client failures when using the share group protocol."},
	{Name: ShareHeartbeatIntervalConfig, Type: GroupConfigInt, Broker: true, Min: 1, Doc: "The heartbeat interval given to the members of a share group."},
	{Name: ShareRecordLockDurationConfig, Type: GroupConfigInt, Broker: true, Min: 1000, Doc: "The record acquisition lock duration in milliseconds for share groups."},
	{Name: ShareDeliveryCountLimitConfig, Type: GroupConfigInt, Broker: true, Min: 2, Doc: "The maximum number of delivery attempts for a record delivered to a share group."},
	{Name: SharePartitionMaxRecordLocksCfg, Type: GroupConfigInt, Broker: true, Min: 100, Doc: "Share-group record lock limit per share-partition."},
	{Name: ShareAutoOffsetResetConfig, Type: GroupConfigString, Allowed: []string{"latest", "earliest", "by_duration:PnDTnHnMn.nS"}, Doc: "The strategy to initialize the share-partition start offset."},
	{Name: ShareIsolationLevelConfig, Type: GroupConfigString, Allowed: []string{"read_committed", "read_uncommitted"}, Doc: "Controls how to read records written transactionally."},
	{Name: ShareRenewAcknowledgeEnableConfig, Type: GroupConfigBoolean, Doc: "Whether the renew acknowledge type is enabled for the share group."},
	{Name: ShareAssignmentIntervalConfig, Type: GroupConfigInt, Broker: true, Min: 0, Doc: "The minimum time between target assignment computations of a share group."},
	{Name: StreamsSessionTimeoutConfig, Type: GroupConfigInt, Broker: true, Min: 1, Doc: "The timeout to detect client failures when using the streams group protocol."},
	{Name: StreamsHeartbeatIntervalConfig, Type: GroupConfigInt, Broker: true, Min: 1, Doc: "The heartbeat interval given to the members of a streams group."},
	{Name: StreamsNumStandbyReplicasConfig, Type: GroupConfigInt, Broker: true, Min: 0, Doc: "The number of standby replicas for each task."},
	{Name: StreamsInitialRebalanceDelayCfg, Type: GroupConfigInt, Broker: true, Min: 0, Doc: "The amount of time the group coordinator will wait for more streams clients to join a new group before performing the first rebalance."},
	{Name: StreamsAssignmentIntervalConfig, Type: GroupConfigInt, Broker: true, Min: 0, Doc: "The minimum time between target assignment computations of a streams group."},
}

// GroupConfigDefFor is the definition of name, or nil.
func GroupConfigDefFor(name string) *GroupConfigDef {
	for i := range GroupConfigDefs {
		if GroupConfigDefs[i].Name == name {
			return &GroupConfigDefs[i]
		}
	}
	return nil
}

// ValidateGroupConfig checks one value against its definition as Kafka's
// ConfigDef parse does; "" if valid, else the message of Kafka's
// InvalidConfigurationException.
func ValidateGroupConfig(name, value string) string {
	d := GroupConfigDefFor(name)
	if d == nil {
		return "Unknown group config name: " + name
	}
	bad := func(why string) string {
		return "Invalid value " + value + " for configuration " + name + ": " + why
	}
	switch d.Type {
	case GroupConfigInt:
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 32)
		if err != nil {
			return bad("Not a number of type INT")
		}
		if n < d.Min {
			return "Invalid value " + value + " for configuration " + name + ": Value must be at least " + strconv.FormatInt(d.Min, 10)
		}
	case GroupConfigBoolean:
		v := strings.ToLower(strings.TrimSpace(value))
		if v != "true" && v != "false" {
			return bad("Expected value to be either true or false")
		}
	case GroupConfigString:
		v := strings.ToLower(strings.TrimSpace(value))
		if name == ShareAutoOffsetResetConfig {
			if v == "earliest" || v == "latest" {
				return ""
			}
			if strings.HasPrefix(v, "by_duration:") {
				if _, ok := sharefetch.ParseISODuration(v[len("by_duration:"):]); ok {
					return ""
				}
			}
			return bad("Invalid value `" + value + "` for configuration " + name + ". The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")
		}
		for _, a := range d.Allowed {
			if v == a {
				return ""
			}
		}
		return bad("String must be one of: " + strings.Join(d.Allowed, ", "))
	}
	return ""
}

// GroupConfigs are the groups' config overrides. Safe for concurrent use.
type GroupConfigs struct {
	mu   sync.Mutex // guards byID; held across writing the file
	byID map[string]map[string]string
	fsys vfs.FS
	path string // "" : not persisted
	// bounds are the broker's bounds of an INT config (ok false: none).
	bounds func(name string) (lo, hi int64, ok bool)
}

// newGroupConfigs loads the overrides from dir ("" : in memory only).
func newGroupConfigs(fsys vfs.FS, dir string) (*GroupConfigs, error) {
	gc := &GroupConfigs{byID: map[string]map[string]string{}, fsys: fsys}
	if dir == "" {
		return gc, nil
	}
	gc.path = filepath.Join(dir, GroupConfigsFile)
	b, err := vfs.ReadFileLimit(fsys, gc.path, 64<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return gc, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &gc.byID); err != nil {
		return nil, errors.New("coordinator: " + GroupConfigsFile + " does not decode: " + err.Error())
	}
	if gc.byID == nil {
		gc.byID = map[string]map[string]string{}
	}
	return gc, nil
}

// Get is a copy of group's overrides.
func (gc *GroupConfigs) Get(group string) map[string]string {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	out := map[string]string{}
	for k, v := range gc.byID[group] {
		out[k] = v
	}
	return out
}

// GroupIDs lists, sorted, the groups that have config overrides (Kafka's
// GroupConfigManager.groupIds).
func (gc *GroupConfigs) GroupIDs() []string {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	out := make([]string, 0, len(gc.byID))
	for id, cfg := range gc.byID {
		if len(cfg) > 0 {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// Alter replaces group's overrides with what update returns from a copy
// of the current ones, validated; the change is durable when it returns
// nil. A message for the client, or an error of the file.
func (gc *GroupConfigs) Alter(group string, update func(cur map[string]string) (map[string]string, string), validateOnly bool) (string, error) {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	cur := map[string]string{}
	for k, v := range gc.byID[group] {
		cur[k] = v
	}
	next, msg := update(cur)
	if msg != "" {
		return msg, nil
	}
	names := make([]string, 0, len(next))
	for k := range next {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if m := ValidateGroupConfig(k, next[k]); m != "" {
			return m, nil
		}
		if m := gc.checkBounds(k, next[k]); m != "" {
			return m, nil
		}
	}
	if validateOnly {
		return "", nil
	}
	old, had := gc.byID[group]
	if len(next) == 0 {
		delete(gc.byID, group)
	} else {
		gc.byID[group] = next
	}
	if gc.path != "" {
		b, _ := json.Marshal(gc.byID)
		if err := vfs.WriteFileAtomic(gc.fsys, gc.path, b); err != nil {
			if had {
				gc.byID[group] = old
			} else {
				delete(gc.byID, group)
			}
			return "", err
		}
	}
	return "", nil
}

// checkBounds checks an INT value against the broker's bounds, as Kafka
// 4.3's GroupConfig.validate.
func (gc *GroupConfigs) checkBounds(name, value string) string {
	if gc.bounds == nil {
		return ""
	}
	lo, hi, ok := gc.bounds(name)
	if !ok {
		return ""
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
	kind, rest, _ := strings.Cut(name, ".")
	switch {
	case n > hi:
		return name + " must be less than or equal to group." + kind + ".max." + rest
	case n < lo:
		return name + " must be greater than or equal to group." + kind + ".min." + rest
	}
	return ""
}

// groupConfigBounds are the broker's bounds of the bounded group configs.
func (c *Coordinator) groupConfigBounds(name string) (lo, hi int64, ok bool) {
	cfg := c.cfg
	d := func(a, b time.Duration) (int64, int64, bool) { return a.Milliseconds(), b.Milliseconds(), true }
	switch name {
	case ConsumerSessionTimeoutConfig:
		return d(cfg.ConsumerMinSessionTimeout, cfg.ConsumerMaxSessionTimeout)
	case ConsumerHeartbeatIntervalConfig:
		return d(cfg.ConsumerMinHeartbeatInterval, cfg.ConsumerMaxHeartbeatInterval)
	case ShareSessionTimeoutConfig:
		return d(cfg.ShareMinSessionTimeout, cfg.ShareMaxSessionTimeout)
	case ShareHeartbeatIntervalConfig:
		return d(cfg.ShareMinHeartbeatInterval, cfg.ShareMaxHeartbeatInterval)
	case ShareRecordLockDurationConfig:
		return d(cfg.ShareMinRecordLockDuration, cfg.ShareMaxRecordLockDuration)
	case ShareDeliveryCountLimitConfig:
		return int64(cfg.ShareMinDeliveryCountLimit), int64(cfg.ShareMaxDeliveryCountLimit), true
	case SharePartitionMaxRecordLocksCfg:
		return int64(cfg.ShareMinPartitionMaxRecordLocks), int64(cfg.ShareMaxPartitionMaxRecordLocks), true
	}
	return 0, 0, false
}

// Delete drops group's overrides (DeleteGroups).
func (gc *GroupConfigs) Delete(group string) {
	_, _ = gc.Alter(group, func(map[string]string) (map[string]string, string) { return nil, "" }, false)
}

// GroupConfigValue is one config's effective value for a group.
type GroupConfigValue struct {
	Def   GroupConfigDef
	Value string
	// Default is the value it falls back to (the broker's).
	Default string
	// Set: the group overrides it (DYNAMIC_GROUP_CONFIG); else the
	// broker's value.
	Set bool
}

// GroupConfigs is the group config catalog.
func (c *Coordinator) GroupConfigs() *GroupConfigs { return c.groupCfgs }

// DescribeGroupConfigs is every group config of group with its value: the
// override as set, else the broker's.
func (c *Coordinator) DescribeGroupConfigs(group string) []GroupConfigValue {
	set := c.groupCfgs.Get(group)
	out := make([]GroupConfigValue, 0, len(GroupConfigDefs))
	for _, d := range GroupConfigDefs {
		def := c.brokerGroupDefault(d.Name)
		v, ok := set[d.Name]
		if !ok {
			v = def
		}
		out = append(out, GroupConfigValue{Def: d, Value: v, Default: def, Set: ok})
	}
	return out
}

// brokerGroupDefault is the broker's value a group config defaults to.
func (c *Coordinator) brokerGroupDefault(name string) string {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	cfg := c.cfg
	switch name {
	case ConsumerSessionTimeoutConfig:
		return ms(cfg.ConsumerSessionTimeout)
	case ConsumerHeartbeatIntervalConfig:
		return ms(cfg.ConsumerHeartbeatInterval)
	case ConsumerAssignmentIntervalConfig, ShareAssignmentIntervalConfig, StreamsAssignmentIntervalConfig:
		return "1000"
	case ShareSessionTimeoutConfig:
		return ms(cfg.ShareSessionTimeout)
	case ShareHeartbeatIntervalConfig:
		return ms(cfg.ShareHeartbeatInterval)
	case ShareRecordLockDurationConfig:
		return ms(cfg.ShareRecordLockDuration)
	case ShareDeliveryCountLimitConfig:
		return strconv.Itoa(cfg.ShareDeliveryCountLimit)
	case SharePartitionMaxRecordLocksCfg:
		return strconv.Itoa(cfg.SharePartitionMaxRecordLocks)
	case ShareAutoOffsetResetConfig:
		return "latest"
	case ShareIsolationLevelConfig:
		return "read_uncommitted"
	case ShareRenewAcknowledgeEnableConfig:
		return "true"
	case StreamsSessionTimeoutConfig:
		return "45000"
	case StreamsHeartbeatIntervalConfig:
		return "5000"
	case StreamsNumStandbyReplicasConfig:
		return "0"
	case StreamsInitialRebalanceDelayCfg:
		return "3000"
	}
	return ""
}

// GroupConfigInt is an INT group config's effective value for group: the
// override clamped to [lo, hi] (Kafka's GroupConfig.evaluate), else def.
// The streams engineer's lookup for streams.* as well.
func (c *Coordinator) GroupConfigInt(group, name string, def, lo, hi int64) int64 {
	v, ok := c.groupCfgs.Get(group)[name]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return def
	}
	return min(max(n, lo), hi)
}

// GroupConfigString is a STRING or BOOLEAN group config's override for
// group (lower-cased), else def.
func (c *Coordinator) GroupConfigString(group, name, def string) string {
	if v, ok := c.groupCfgs.Get(group)[name]; ok {
		return strings.ToLower(strings.TrimSpace(v))
	}
	return def
}

// groupDuration is a millisecond group config as a duration.
func (c *Coordinator) groupDuration(group, name string, def, lo, hi time.Duration) time.Duration {
	return time.Duration(c.GroupConfigInt(group, name, def.Milliseconds(), lo.Milliseconds(), hi.Milliseconds())) * time.Millisecond
}

// consumerSessionTimeout / consumerHeartbeatInterval are the consumer
// group's consumer.session.timeout.ms / consumer.heartbeat.interval.ms
// over the broker's group.consumer.*.
func (g *group) consumerSessionTimeout() time.Duration {
	cfg := g.c.cfg
	return g.c.groupDuration(g.id, ConsumerSessionTimeoutConfig, cfg.ConsumerSessionTimeout, min(cfg.ConsumerMinSessionTimeout, cfg.ConsumerSessionTimeout), max(cfg.ConsumerMaxSessionTimeout, cfg.ConsumerSessionTimeout))
}

func (g *group) consumerHeartbeatInterval() time.Duration {
	cfg := g.c.cfg
	return g.c.groupDuration(g.id, ConsumerHeartbeatIntervalConfig, cfg.ConsumerHeartbeatInterval, min(cfg.ConsumerMinHeartbeatInterval, cfg.ConsumerHeartbeatInterval), max(cfg.ConsumerMaxHeartbeatInterval, cfg.ConsumerHeartbeatInterval))
}
