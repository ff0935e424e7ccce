package protocol

// Fault injection: rules that make the server answer chosen requests with
// an error code, answer them late, or drop their connection, so that a
// developer can test how their client code handles a failing broker. The
// root package exposes them to Go tests (Broker.InjectFault) and, on the
// admin HTTP listener, to tests in any language.
//
// A matched error-code request is not executed (a Produce appends
// nothing): its response is built from the request, with the code in every
// error field the response has at the top level and in each topic and
// partition entry mirrored from the request, as Kafka's
// AbstractRequest.getErrorResponse answers a request that failed whole.

import (
	"errors"
	"reflect"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
)

// FaultAction is what a matched request gets.
type FaultAction string

const (
	// FaultError answers with ErrorCode and does not run the request.
	FaultError FaultAction = "error"
	// FaultDelay runs the request after Delay.
	FaultDelay FaultAction = "delay"
	// FaultDrop closes the connection without answering.
	FaultDrop FaultAction = "drop"
	// FaultPass runs the request as usual (it only counts matches).
	FaultPass FaultAction = "pass"
)

// FaultRule selects requests and says what they get.
type FaultRule struct {
	// APIKey is the API the rule applies to (kmsg.Produce.Int16(), ...).
	APIKey int16 `json:"api_key"`
	// Topic, when set, limits the rule to requests that name the topic
	// (by name: Produce, Fetch v0-12, Metadata, ListOffsets, ...).
	Topic string `json:"topic,omitempty"`
	// Partition, when not nil, limits the rule to requests naming that
	// partition of Topic.
	Partition *int32 `json:"partition,omitempty"`
	// ClientID, when set, limits the rule to requests with that client id.
	ClientID string `json:"client_id,omitempty"`

	Action    FaultAction   `json:"action"`
	ErrorCode int16         `json:"error_code,omitempty"` // FaultError
	Delay     time.Duration `json:"delay,omitempty"`      // FaultDelay, as a Go duration in JSON (nanoseconds)
	// Count is how many requests the rule applies to before it removes
	// itself; 0: until removed.
	Count int `json:"count,omitempty"`
}

// ErrBadFaultRule is returned by Faults.Add for a rule that cannot apply.
var ErrBadFaultRule = errors.New("protocol: invalid fault rule")

// Validate checks that the rule can apply.
func (r FaultRule) Validate() error {
	switch {
	case r.APIKey < 0 || kmsg.RequestForKey(r.APIKey) == nil:
		return errors.Join(ErrBadFaultRule, errors.New("unknown api_key"))
	case r.Partition != nil && r.Topic == "":
		return errors.Join(ErrBadFaultRule, errors.New("partition needs topic"))
	case r.Count < 0:
		return errors.Join(ErrBadFaultRule, errors.New("count must be at least 0"))
	}
	switch r.Action {
	case FaultError:
		if r.ErrorCode == 0 {
			return errors.Join(ErrBadFaultRule, errors.New("error needs a non-zero error_code"))
		}
	case FaultDelay:
		if r.Delay <= 0 {
			return errors.Join(ErrBadFaultRule, errors.New("delay needs a positive delay"))
		}
	case FaultDrop, FaultPass:
	default:
		return errors.Join(ErrBadFaultRule, errors.New(`action must be "error", "delay", "drop" or "pass"`))
	}
	return nil
}

// FaultStatus is a rule in force, with its id and how often it matched.
type FaultStatus struct {
	ID      int64 `json:"id"`
	Matched int   `json:"matched"`
	FaultRule
}

// Faults holds the rules in force; the zero value has none. It is safe for
// concurrent use. The first rule that matches a request applies.
type Faults struct {
	// Clock times FaultDelay (nil: the server's clock); a test gives the
	// faults a manual clock of their own to see a delay start.
	Clock clock.Clock

	mu    sync.Mutex
	next  int64
	rules []*FaultStatus
}

// Add puts a rule in force and returns its id.
func (f *Faults) Add(r FaultRule) (int64, error) {
	if err := r.Validate(); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	f.rules = append(f.rules, &FaultStatus{ID: f.next, FaultRule: r})
	return f.next, nil
}

// Remove takes a rule out of force; false if there was none with id.
func (f *Faults) Remove(id int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, r := range f.rules {
		if r.ID == id {
			f.rules = append(f.rules[:i], f.rules[i+1:]...)
			return true
		}
	}
	return false
}

// List returns the rules in force, oldest first.
func (f *Faults) List() []FaultStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]FaultStatus, len(f.rules))
	for i, r := range f.rules {
		out[i] = *r
	}
	return out
}

// match returns the rule that applies to the request, counting it (and
// removing a rule whose count is used up), or nil. nameOf resolves topic
// ids (Produce v13, Fetch v13+ name topics by id).
func (f *Faults) match(key int16, clientID *string, req kmsg.Request, nameOf func([16]byte) string) *FaultRule {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, r := range f.rules {
		if r.APIKey != key || (r.ClientID != "" && (clientID == nil || *clientID != r.ClientID)) {
			continue
		}
		if r.Topic != "" && !namesTopic(reflect.ValueOf(req), r.Topic, r.Partition, nameOf) {
			continue
		}
		r.Matched++
		rule := r.FaultRule
		if r.Count > 0 && r.Matched >= r.Count {
			f.rules = append(f.rules[:i], f.rules[i+1:]...)
		}
		return &rule
	}
	return nil
}

// topicNameByID resolves a topic id for fault rules ("" if unknown).
func (s *Server) topicNameByID(id [16]byte) string {
	if t := s.store.TopicByID(partition.TopicID(id)); t != nil {
		return t.Name
	}
	return ""
}

// namesTopic reports whether a request names topic (and partition, if not
// nil) anywhere: a string field Topic (or Name, in a topic entry) equal to
// it, or a TopicID that nameOf resolves to it, with, for a partition, a
// Partition (or Partitions []int32) entry below it.
func namesTopic(v reflect.Value, topic string, partition *int32, nameOf func([16]byte) string) bool {
	switch v.Kind() {
	case reflect.Pointer:
		return !v.IsNil() && namesTopic(v.Elem(), topic, partition, nameOf)
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if namesTopic(v.Index(i), topic, partition, nameOf) {
				return true
			}
		}
	case reflect.Struct:
		if name, ok := topicName(v, nameOf); ok && name == topic {
			return partition == nil || namesPartition(v, *partition)
		}
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.Kind() == reflect.Slice || f.Kind() == reflect.Pointer {
				if namesTopic(f, topic, partition, nameOf) {
					return true
				}
			}
		}
	}
	return false
}

// topicName is the name of a topic entry: its Topic field (a string or a
// *string), else a Name field beside a Partitions field, else its TopicID
// resolved.
func topicName(v reflect.Value, nameOf func([16]byte) string) (string, bool) {
	if id := v.FieldByName("TopicID"); id.IsValid() && nameOf != nil {
		if b, ok := id.Interface().([16]byte); ok && b != ([16]byte{}) {
			return nameOf(b), true
		}
	}
	f := v.FieldByName("Topic")
	if !f.IsValid() && v.FieldByName("Partitions").IsValid() {
		f = v.FieldByName("Name")
	}
	switch {
	case !f.IsValid():
	case f.Kind() == reflect.String:
		return f.String(), true
	case f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.String:
		return f.Elem().String(), true
	}
	return "", false
}

// namesPartition reports whether a topic entry names partition p.
func namesPartition(v reflect.Value, p int32) bool {
	parts := v.FieldByName("Partitions")
	if !parts.IsValid() || parts.Kind() != reflect.Slice {
		return false
	}
	for i := 0; i < parts.Len(); i++ {
		e := parts.Index(i)
		switch {
		case e.Kind() == reflect.Int32 && int32(e.Int()) == p:
			return true
		case e.Kind() == reflect.Struct:
			if f := e.FieldByName("Partition"); f.IsValid() && f.Kind() == reflect.Int32 && int32(f.Int()) == p {
				return true
			}
		}
	}
	return false
}

// errorResponse answers req, at its version, with code in every error
// field: the response's own and those of the topic and partition entries
// it mirrors from the request (slices of the same name, with their
// identifying fields copied: Topic, Name, TopicID, Partition, ...).
func errorResponse(req kmsg.Request, version, code int16) kmsg.Response {
	resp := req.ResponseKind()
	resp.SetVersion(version)
	fillError(reflect.ValueOf(resp).Elem(), reflect.ValueOf(req).Elem(), code)
	return resp
}

func fillError(resp, req reflect.Value, code int16) {
	for i := 0; i < resp.NumField(); i++ {
		f := resp.Field(i)
		name := resp.Type().Field(i).Name
		if !f.CanSet() {
			continue
		}
		if name == "ErrorCode" && f.Kind() == reflect.Int16 {
			f.SetInt(int64(code))
			continue
		}
		src := req.FieldByName(name)
		if !src.IsValid() {
			continue
		}
		switch {
		case f.Kind() == reflect.Slice && src.Kind() == reflect.Slice:
			elem := f.Type().Elem()
			out := reflect.MakeSlice(f.Type(), src.Len(), src.Len())
			for j := 0; j < src.Len(); j++ {
				s := src.Index(j)
				switch {
				case elem.Kind() == reflect.Struct && s.Kind() == reflect.Struct:
					e := reflect.New(elem).Elem()
					if d, ok := reflect.New(elem).Interface().(interface{ Default() }); ok {
						d.Default()
						e = reflect.ValueOf(d).Elem()
					}
					fillError(e, s, code)
					out.Index(j).Set(e)
				case elem.Kind() == reflect.Struct && s.Kind() == reflect.Int32:
					// Partitions []int32 in the request (OffsetFetch):
					// entries with Partition set.
					e := reflect.New(elem).Elem()
					if p := e.FieldByName("Partition"); p.IsValid() && p.Kind() == reflect.Int32 {
						p.SetInt(s.Int())
					}
					fillError(e, reflect.New(elem).Elem(), code)
					out.Index(j).Set(e)
				case elem == s.Type():
					out.Index(j).Set(s)
				}
			}
			f.Set(out)
		case f.Type() == src.Type() && f.Kind() != reflect.Slice && f.Kind() != reflect.Struct:
			f.Set(src)
		}
	}
}
