package kcompatd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The admin listener answers health and readiness, and takes fault rules
// as JSON; a rule on Produce makes a kgo producer retry, then succeed.
func TestAdminListener(t *testing.T) {
	b := newTestBroker(t, "", map[string]string{"kcompatd.metrics.listener": "127.0.0.1:0"})
	base := "http://" + b.AdminAddr().String()
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Fatalf("healthz %d", code)
	}
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Fatalf("readyz %d %s", code, body)
	}
	rule, _ := json.Marshal(FaultRule{APIKey: kmsg.Produce.Int16(), Topic: "t", Action: FaultError, ErrorCode: kerr.NotLeaderForPartition.Code, Count: 2})
	resp, err := http.Post(base+"/faults", "application/json", bytes.NewReader(rule))
	if err != nil {
		t.Fatal(err)
	}
	var st FaultStatus
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || st.ID == 0 {
		t.Fatalf("POST /faults: %d %+v", resp.StatusCode, st)
	}
	if resp, _ := http.Post(base+"/faults", "application/json", bytes.NewReader([]byte(`{"api_key":0,"action":"explode"}`))); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad rule: %d", resp.StatusCode)
	}

	_, adm := newAdmin(t, b)
	cl := fastRetryClient(t, b)
	if _, err := adm.CreateTopic(testContext(t), 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(testContext(t), &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce through the fault: %v", err)
	}
	if o := b.store.Topic("t").Partitions[0].Offsets(); o.LogEndOffset != 1 {
		t.Fatalf("offsets %+v: want one record", o)
	}
	if code, body := get("/faults"); code != http.StatusOK || body != "[]\n" {
		t.Fatalf("GET /faults after the count: %d %s", code, body)
	}
	// DNS rebinding: a page's own name pointing at 127.0.0.1.
	req, _ := http.NewRequest("GET", base+"/faults", nil)
	req.Host = "attacker.example"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign Host: %v %v", err, resp)
	}
	req, _ = http.NewRequest("DELETE", base+"/faults/99", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("DELETE unknown: %v %v", err, resp)
	}
}

// A client recovers from injected failures: NOT_LEADER_OR_FOLLOWER on
// Produce, a dropped connection on Fetch, a delayed JoinGroup.
func TestInjectedFaultsClientRecovers(t *testing.T) {
	b := newTestBroker(t, "", nil)
	_, adm := newAdmin(t, b)
	cl := fastRetryClient(t, b)
	ctx := testContext(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "f"); err != nil {
		t.Fatal(err)
	}
	mustInject := func(r FaultRule) {
		t.Helper()
		if _, err := b.InjectFault(r); err != nil {
			t.Fatal(err)
		}
	}
	mustInject(FaultRule{APIKey: kmsg.Produce.Int16(), Action: FaultError, ErrorCode: kerr.NotLeaderForPartition.Code, Count: 1})
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "f", Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	mustInject(FaultRule{APIKey: kmsg.Fetch.Int16(), Action: FaultDrop, Count: 1})
	mustInject(FaultRule{APIKey: kmsg.JoinGroup.Int16(), Action: FaultDelay, Delay: 200 * time.Millisecond, Count: 1})
	consumer := fastRetryClient(t, b, kgo.ConsumeTopics("f"), kgo.ConsumerGroup("g"), kgo.FetchMaxWait(100*time.Millisecond))
	seen := 0
	for seen < 10 {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 10: %v", seen, err)
		}
		fs.EachRecord(func(*kgo.Record) { seen++ })
	}
	for _, st := range b.Faults() {
		t.Errorf("rule left: %+v", st)
	}
}

// fastRetryClient is a kgo client that refreshes metadata and retries
// without the default seconds of backoff, so a test sees its recovery soon.
func fastRetryClient(t *testing.T, b *Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(b.Addr().String()), kgo.MetadataMinAge(10 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond })}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
