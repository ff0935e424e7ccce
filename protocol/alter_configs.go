package protocol

// AlterConfigs: v0-2
//
// Behavior (Kafka's ConfigAdminManager.preprocess, then the controller's
// ConfigurationControlManager.legacyAlterConfigResource):
//   - Each resource's configs replace its whole set: a topic config not
//     named is removed (back to the broker default), as are the dynamic
//     broker configs of a BROKER resource.
//   - A resource named twice gets INVALID_REQUEST "Each resource must
//     appear at most once." (both), duplicate keys INVALID_REQUEST "Error
//     due to duplicate config keys", a null value INVALID_REQUEST "Null
//     value not supported for : <names>".
//   - TOPIC: "" is INVALID_REQUEST, a bad name INVALID_TOPIC_EXCEPTION;
//     the configs are validated first (INVALID_CONFIG with Kafka's
//     message), then the topic must exist (UNKNOWN_TOPIC_OR_PARTITION "The
//     topic 'x' does not exist.").
//   - BROKER "" (cluster default) or "<node.id>" (another id or a
//     non-number is INVALID_REQUEST): only the broker defaults of topic
//     configs may change (log.segment.bytes, log.retention.ms, ...; Kafka's
//     DynamicLogConfig); others are INVALID_REQUEST "Cannot update these
//     configs dynamically: Set(...)", and a bad value INVALID_REQUEST with
//     Kafka's ConfigException text (KAFKA-13609 keeps that code).
//   - GROUP: the configs sent become the group's whole override set (the
//     controller's legacy path drops the others); names and values are
//     checked as for IncrementalAlterConfigs (INVALID_CONFIG "Unknown
//     group config name: x", a bad value INVALID_CONFIG), on the new set.
//   - BROKER_LOGGER and other types: INVALID_REQUEST "Unknown resource
//     type N", as Kafka (legacy AlterConfigs never supported loggers).
//   - ValidateOnly validates everything and changes nothing.
//   - Changes apply to every partition at once and survive a restart.
//
// Version notes: v1 no change; v2 flexible.

import (
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/internal/configdef"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.AlterConfigs.Int16(), 0, 2, handleAlterConfigs) }

// configOp is one change to one config of a resource.
type configOp struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp // legacy AlterConfigs: SET
	value *string
}

// Incremental operations (AlterConfigOp.OpType ids).
const (
	opSet      = kmsg.IncrementalAlterConfigOp(0)
	opDelete   = kmsg.IncrementalAlterConfigOp(1)
	opAppend   = kmsg.IncrementalAlterConfigOp(2)
	opSubtract = kmsg.IncrementalAlterConfigOp(3)
)

func opName(op kmsg.IncrementalAlterConfigOp) string {
	switch op {
	case opSet:
		return "SET"
	case opDelete:
		return "DELETE"
	case opAppend:
		return "APPEND"
	case opSubtract:
		return "SUBTRACT"
	}
	return strconv.Itoa(int(op))
}

func handleAlterConfigs(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	dup := duplicateResources(len(req.Resources), func(i int) (kmsg.ConfigResourceType, string) {
		return req.Resources[i].ResourceType, req.Resources[i].ResourceName
	})
	for i, res := range req.Resources {
		ops := make([]configOp, len(res.Configs))
		for j, c := range res.Configs {
			ops[j] = configOp{name: c.Name, op: opSet, value: c.Value}
		}
		out := kmsg.NewAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = res.ResourceType, res.ResourceName
		if out.ErrorCode = s.configAuthCode(r, authz.OpAlterConfigs, res.ResourceType, res.ResourceName); out.ErrorCode == 0 {
			out.ErrorCode, out.ErrorMessage = s.alterResult(dup[i], res.ResourceType, res.ResourceName, ops, false, req.ValidateOnly)
		}
		resp.Resources = append(resp.Resources, out)
	}
	return resp, nil
}

// duplicateResources marks the resources named more than once.
func duplicateResources(n int, key func(int) (kmsg.ConfigResourceType, string)) []bool {
	type k struct {
		t    kmsg.ConfigResourceType
		name string
	}
	count := make(map[k]int, n)
	for i := 0; i < n; i++ {
		t, name := key(i)
		count[k{t, name}]++
	}
	dup := make([]bool, n)
	for i := 0; i < n; i++ {
		t, name := key(i)
		dup[i] = count[k{t, name}] > 1
	}
	return dup
}

// alterResult is one resource's error code and message in an alter
// response; dup: the request names the resource more than once.
func (s *Server) alterResult(dup bool, typ kmsg.ConfigResourceType, name string, ops []configOp, incremental, validateOnly bool) (int16, *string) {
	var err error
	if dup {
		err = invalidRequest("Each resource must appear at most once.")
	} else {
		err = s.alterResource(typ, name, ops, incremental, validateOnly)
	}
	return s.configErrorCode(err), errorMessage(err)
}

// alterResource applies ops to one resource: incrementally (the configs
// not named stay) or replacing the whole set (legacy AlterConfigs).
func (s *Server) alterResource(typ kmsg.ConfigResourceType, name string, ops []configOp, incremental, validateOnly bool) error {
	seen := make(map[string]bool, len(ops))
	var nulls []string
	for _, o := range ops {
		if seen[o.name] {
			return invalidRequest("Error due to duplicate config keys")
		}
		seen[o.name] = true
		if o.op != opDelete && o.value == nil {
			nulls = append(nulls, o.name)
		}
	}
	if len(nulls) > 0 {
		return invalidRequest("Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	switch typ {
	case resourceTopic:
		return s.alterTopic(name, ops, incremental, validateOnly)
	case resourceBroker:
		return s.alterBroker(name, ops, incremental, validateOnly)
	case resourceGroup:
		return s.alterGroupConfigs(name, ops, incremental, validateOnly)
	case resourceBrokerLogger:
		if incremental {
			// kcompatd's logger is handed in by the embedder and has no
			// per-class loggers to change; say so rather than pretend.
			return invalidRequest("kcompatd does not support changing logger levels at run time")
		}
	}
	return invalidRequest("Unknown resource type %d", typ)
}

func (s *Server) alterTopic(name string, ops []configOp, incremental, validateOnly bool) error {
	if name == "" {
		return invalidRequest("Default topic resources are not allowed.")
	}
	if err := partition.ValidateTopicName(name); err != nil {
		return err
	}
	// The new overrides from the current ones, under the store's catalog
	// lock, so that concurrent alters of one topic cannot lose a change.
	update := func(cur map[string]string) (map[string]string, error) {
		return applyConfigOps(cur, ops, incremental, func(o configOp) (string, error) {
			def, _ := partition.TopicConfigDef(o.name)
			if def.Type != configdef.List {
				return "", &configError{kerr.InvalidConfig, "Can't " + opName(o.op) + " to key " + o.name + " because its type is not LIST."}
			}
			return def.Default, nil
		})
	}
	if s.store.Topic(name) == nil {
		// Kafka validates the configs before it looks the topic up.
		next, err := update(map[string]string{})
		if err == nil {
			_, err = partition.ResolveLogConfig(s.store.Defaults(), next)
		}
		if err != nil {
			return err
		}
		return &configError{kerr.UnknownTopicOrPartition, "The topic '" + name + "' does not exist."}
	}
	t, err := s.store.AlterTopicConfig(name, update, validateOnly)
	if errors.Is(err, partition.ErrUnknownTopic) { // deleted meanwhile
		return &configError{kerr.UnknownTopicOrPartition, "The topic '" + name + "' does not exist."}
	}
	if err == nil && !validateOnly {
		s.log.Info().Str("topic", name).Int("overrides", len(t.Overrides)).Msg("topic configs altered")
	}
	return err
}

// applyConfigOps applies ops to a resource's current configs (legacy
// AlterConfigs replaces the whole set: not incremental). listBase checks
// that an APPEND or SUBTRACT names a LIST config and returns the value
// it starts from where cur does not set it.
func applyConfigOps(cur map[string]string, ops []configOp, incremental bool, listBase func(configOp) (string, error)) (map[string]string, error) {
	next := map[string]string{}
	if incremental {
		next = cur
	}
	for _, o := range ops {
		switch o.op {
		case opSet:
			next[o.name] = *o.value
		case opDelete:
			delete(next, o.name)
		case opAppend, opSubtract:
			base, err := listBase(o)
			if err != nil {
				return nil, err
			}
			if v, ok := next[o.name]; ok {
				base = v
			}
			next[o.name] = applyListOp(base, o.op, *o.value)
		default:
			return nil, invalidRequest("Unknown operations type %d", o.op)
		}
	}
	return next, nil
}

// applyListOp is Kafka's APPEND (add the items not present) and SUBTRACT
// (remove the items) on a LIST config.
func applyListOp(cur string, op kmsg.IncrementalAlterConfigOp, value string) string {
	var parts []string
	for _, p := range strings.Split(cur, ",") {
		if p != "" {
			parts = append(parts, p)
		}
	}
	for _, v := range strings.Split(value, ",") {
		i := -1
		for j, p := range parts {
			if p == v {
				i = j
				break
			}
		}
		switch {
		case op == opAppend && i < 0:
			parts = append(parts, v)
		case op == opSubtract && i >= 0:
			parts = append(parts[:i], parts[i+1:]...)
		}
	}
	return strings.Join(parts, ",")
}

func (s *Server) alterBroker(name string, ops []configOp, incremental, validateOnly bool) error {
	perBroker := name != ""
	if perBroker {
		if err := s.checkBrokerID(name, "Node id must be an integer, but it is: %s", "Unexpected broker id, expected %d, but received %s"); err != nil {
			return err
		}
	}
	var fixed []string
	for _, o := range ops {
		if !brokerDynamic(o.name) {
			fixed = append(fixed, o.name)
		}
	}
	if len(fixed) > 0 {
		sort.Strings(fixed)
		return invalidRequest("Cannot update these configs dynamically: Set(%s)", strings.Join(fixed, ", "))
	}
	update := func(cur map[string]string) (map[string]string, error) {
		return applyConfigOps(cur, ops, incremental, func(o configOp) (string, error) {
			view := s.configView()
			if view.static[o.name].Type != configdef.List {
				return "", invalidRequest("Config value %s is not allowed for config key: %s", strings.ToLower(opName(o.op)), o.name)
			}
			// Kafka's ConfigAdminManager starts from the resource's own
			// dynamic value (applyConfigOps' cur), else the ConfigDef
			// default: neither another layer nor the static value.
			if v := view.defaultOf(o.name); v != nil {
				return *v, nil
			}
			return "", nil
		})
	}
	err := s.store.AlterDynamicBrokerConfigs(perBroker, update, validateOnly)
	if errors.Is(err, partition.ErrInvalidConfig) {
		// Kafka answers a bad broker value with INVALID_REQUEST (KAFKA-13609).
		return &configError{kerr.InvalidRequest, err.Error()}
	}
	return err
}
