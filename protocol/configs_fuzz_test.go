package protocol

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
)

// FuzzConfigRequests decodes arbitrary bytes as a DescribeConfigs,
// AlterConfigs or IncrementalAlterConfigs body at any served version and
// runs the handler. Invariants: no panic, no Go error (a bad request is
// answered with Kafka codes), one result per resource, and the store's
// topic still resolves to a valid configuration.
func FuzzConfigRequests(f *testing.F) {
	seed := func(sel byte, req kmsg.Request) {
		f.Add(sel, req.AppendTo(nil))
	}
	seed(0, describeConfigsReq(4, resourceTopic, "t"))
	seed(8, describeConfigsReq(4, resourceBroker, "1"))
	seed(16, alterReq(2, resourceTopic, "t", "segment.bytes", "1000"))
	seed(17, incReq(1, resourceTopic, "t", incOp{"cleanup.policy", opAppend, strp("compact")}))
	seed(17, incReq(1, resourceBroker, "", incOp{"log.retention.ms", opSet, strp("1000")}))

	lg := zerolog.Nop()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	store, err := partition.Open(partition.Config{Dir: f.TempDir(), NodeID: 1, Clock: clk, Logger: lg})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { store.Close() })
	if _, err := store.CreateTopic("t", 1, nil, false); err != nil {
		f.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.NodeID, cfg.Logger, cfg.Clock = 1, lg, clk
	startCoordinators(f, &cfg, store, nil)
	s := mustNewServer(f, cfg, store)
	f.Cleanup(func() { s.Close() })

	f.Fuzz(func(t *testing.T, sel byte, body []byte) {
		keys := []int16{kmsg.DescribeConfigs.Int16(), kmsg.AlterConfigs.Int16(), kmsg.IncrementalAlterConfigs.Int16()}
		key := keys[int(sel)%len(keys)]
		a := apis[key]
		v := a.min + int16(sel/3)%(a.max-a.min+1)
		req := kmsg.RequestForKey(key)
		req.SetVersion(v)
		if req.ReadFrom(body) != nil {
			return
		}
		resp, err := a.handle(s, &Request{Ctx: context.Background(), Version: v, Body: req})
		if err != nil {
			t.Fatalf("key %d v%d: %v", key, v, err)
		}
		n := 0
		switch r := resp.(type) {
		case *kmsg.DescribeConfigsResponse:
			n = len(r.Resources)
		case *kmsg.AlterConfigsResponse:
			n = len(r.Resources)
		case *kmsg.IncrementalAlterConfigsResponse:
			n = len(r.Resources)
		}
		var want int
		switch q := req.(type) {
		case *kmsg.DescribeConfigsRequest:
			want = len(q.Resources)
		case *kmsg.AlterConfigsRequest:
			want = len(q.Resources)
		case *kmsg.IncrementalAlterConfigsRequest:
			want = len(q.Resources)
		}
		if n != want {
			t.Fatalf("key %d v%d: %d results for %d resources", key, v, n, want)
		}
		if tp := store.Topic("t"); tp != nil {
			if _, err := partition.ResolveLogConfig(store.Defaults(), tp.Overrides); err != nil {
				t.Fatalf("topic left with invalid overrides %v: %v", tp.Overrides, err)
			}
		}
	})
}
