package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/security"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// fakeMutationQuotas is a manager with a settable clock and a client-id quota of rate.
func fakeMutationQuotas(t *testing.T, rate float64, clock *time.Time) *ControllerMutationQuotaManager {
	t.Helper()
	m := NewControllerMutationQuotaManager(connQuotaConfig(t, map[string]string{
		"controller.quota.window.num": "2", "controller.quota.window.size.seconds": "1"}), adminLogger(t))
	m.now = func() time.Time { return *clock }
	m.UpdateQuotaConfig(QuotaEntity{ClientKind: quotaEntityNamed, ClientID: "c"}, map[string]string{ControllerMutationRateConfig: fmt.Sprint(rate)})
	return m
}

func mutationRC(version int16) *RequestContext {
	return &RequestContext{ClientID: "c", APIVersion: version, Principal: security.Principal{Type: "User", Name: "ANONYMOUS"}}
}

// TestControllerMutationQuotaStrictAndPermissive: Kafka's TokenBucket arithmetic. With
// 2 windows of 1 s at 5/s the bucket holds 10 permits; strict accepts while not in debt and
// then refuses, permissive accepts and throttles; throttle time is the time to refill to 0.
func TestControllerMutationQuotaStrictAndPermissive(t *testing.T) {
	clock := time.UnixMilli(1_000_000)
	m := fakeMutationQuotas(t, 5, &clock)

	q := m.newQuotaFor(mutationRC(6), 6)
	if err := q.record(10); err != nil { // the full burst
		t.Fatal(err)
	}
	if err := q.record(5); err != nil { // not in debt yet (0 tokens): accepted, now -5
		t.Fatal(err)
	}
	if q.throttleTime() != 0 {
		t.Fatalf("strict quota throttled an accepted mutation: %v", q.throttleTime())
	}
	err := q.record(1)
	if code, msg := apiErrorParts(err); code != kerr.ThrottlingQuotaExceeded.Code || msg == nil || *msg != "The throttling quota has been exceeded." {
		t.Fatalf("in debt: got %v", err)
	}
	if d := q.throttleTime(); d != time.Second { // 5 tokens of debt at 5/s
		t.Fatalf("throttle %v, want 1s", d)
	}
	clock = clock.Add(400 * time.Millisecond)
	if d := q.throttleTime(); d != 600*time.Millisecond {
		t.Fatalf("throttle after 400ms %v, want 600ms", d)
	}
	clock = clock.Add(600 * time.Millisecond) // refilled to 0: accepted again
	if err := m.newQuotaFor(mutationRC(6), 6).record(1); err != nil {
		t.Fatalf("after refill: %v", err)
	}

	// Permissive (older version): accepted in debt, throttled.
	p := m.newQuotaFor(mutationRC(5), 6)
	if err := p.record(4); err != nil {
		t.Fatalf("permissive refused: %v", err)
	}
	if d := p.throttleTime(); d != time.Second { // -1 - 4 = -5 tokens
		t.Fatalf("permissive throttle %v, want 1s", d)
	}

	// Another client id has no quota; a client without any quota type is unbounded.
	other := mutationRC(6)
	other.ClientID = "other"
	if err := m.newQuotaFor(other, 6).record(1000); err != nil {
		t.Fatal(err)
	}
	if _, ok := NewControllerMutationQuotaManager(connQuotaConfig(t, nil), nil).newQuotaFor(mutationRC(6), 6).(unboundedMutationQuota); !ok {
		t.Fatal("a manager without quotas must be unbounded")
	}
	if _, ok := (*ControllerMutationQuotaManager)(nil).newQuotaFor(mutationRC(6), 6).(unboundedMutationQuota); !ok {
		t.Fatal("no manager must be unbounded")
	}
}

// createTopicsRaw sends CreateTopics at version v for topics of n partitions each.
func createTopicsRaw(ac *adminConn, v int16, n int32, topics ...string) *kmsg.CreateTopicsResponse {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 0 // answer at once (REQUEST_TIMED_OUT for created topics)
	for _, name := range topics {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, n, 1
		req.Topics = append(req.Topics, rt)
	}
	return ac.request(req, v).(*kmsg.CreateTopicsResponse)
}

// TestControllerMutationQuotaOnBroker: a controller_mutation_rate set in ZooKeeper reaches
// the broker live; CreateTopics v7 refuses topics past the quota with
// THROTTLING_QUOTA_EXCEEDED and throttle_time_ms, v5 (permissive) creates them and throttles,
// DeleteTopics is charged too, and the accepted rate over a few seconds is the quota.
func TestControllerMutationQuotaOnBroker(t *testing.T) {
	chroot := testChroot(t)
	b := startTestBroker(t, chroot, map[string]string{
		"controller.quota.window.num": "2", "controller.quota.window.size.seconds": "1"})
	waitController(t, b)
	zk, err := zkmeta.Connect(context.Background(), testZK(t).Connect(chroot), 6*time.Second, adminLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zk.Close() })
	const rate = 10.0 // partitions per second; 2 windows of 1 s hold 20
	if _, err := zk.SetEntityConfig(zkmeta.ConfigTypeClient, "mq", map[string]string{ControllerMutationRateConfig: "10"}); err != nil {
		t.Fatal(err)
	}
	adminWaitFor(t, 10*time.Second, "the controller_mutation_rate to reach the broker", func() bool {
		if b.apis.Quotas == nil || b.apis.Quotas.ControllerMutation == nil {
			return false
		}
		_, ok := b.apis.Quotas.ControllerMutation.Entities().Get(QuotaEntity{ClientKind: quotaEntityNamed, ClientID: "mq"})
		return ok
	})
	// A raw connection pins request versions; the broker mutes it for each throttle
	// (KIP-219), so a request sent right after a throttled response waits that long.
	cl := adminDial(t, b.Addr("PLAINTEXT"))
	cl.fmt = kmsg.NewRequestFormatter(kmsg.FormatterClientID("mq"))

	// Strict: 20 tokens; a (10) leaves 10, b (10) leaves 0, c (10) takes it to -10 (not in
	// debt before), d is refused.
	resp := createTopicsRaw(cl, 7, 10, "mq-a", "mq-b", "mq-c", "mq-d")
	for i, want := range []int16{kerr.RequestTimedOut.Code, kerr.RequestTimedOut.Code, kerr.RequestTimedOut.Code, kerr.ThrottlingQuotaExceeded.Code} {
		if got := resp.Topics[i].ErrorCode; got != want {
			t.Fatalf("topic %s: error %d, want %d", resp.Topics[i].Topic, got, want)
		}
	}
	// 10 tokens of debt at 10/s: about 1 s.
	if resp.ThrottleMillis < 800 || resp.ThrottleMillis > 1000 {
		t.Fatalf("throttle_time_ms %d, want about 1000", resp.ThrottleMillis)
	}
	if metadataHasTopicEventually(b, "mq-d") {
		t.Fatal("a topic refused by the quota was created")
	}

	// Permissive (v5): created although in debt, throttled.
	time.Sleep(time.Duration(resp.ThrottleMillis)*time.Millisecond + 100*time.Millisecond)
	resp = createTopicsRaw(cl, 5, 15, "mq-e")
	if resp.Topics[0].ErrorCode != kerr.RequestTimedOut.Code || resp.ThrottleMillis == 0 {
		t.Fatalf("permissive: error %d throttle %d", resp.Topics[0].ErrorCode, resp.ThrottleMillis)
	}
	time.Sleep(time.Duration(resp.ThrottleMillis)*time.Millisecond + 100*time.Millisecond)

	// DeleteTopics v6 (strict) is charged the topic's partitions. The bucket is at about 0:
	// deleting a (10) is accepted and leaves -10, b is refused.
	adminWaitFor(t, 10*time.Second, "topics in the metadata cache", func() bool {
		return b.metadata.Contains("mq-a") && b.metadata.Contains("mq-b")
	})
	del := kmsg.NewPtrDeleteTopicsRequest()
	for _, name := range []string{"mq-a", "mq-b"} {
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic = kmsg.StringPtr(name)
		del.Topics = append(del.Topics, dt)
	}
	dresp := cl.request(del, 6).(*kmsg.DeleteTopicsResponse)
	if dresp.Topics[0].ErrorCode == kerr.ThrottlingQuotaExceeded.Code || dresp.Topics[1].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || dresp.ThrottleMillis == 0 {
		t.Fatalf("delete: errors %d, %d throttle %d", dresp.Topics[0].ErrorCode, dresp.Topics[1].ErrorCode, dresp.ThrottleMillis)
	}
	time.Sleep(time.Duration(dresp.ThrottleMillis)*time.Millisecond + 100*time.Millisecond)

	// Measured: 5-partition topics as fast as the quota lets through once the burst is
	// spent, waiting out each throttle as a client does (the broker mutes the connection
	// meanwhile anyway). The rate is taken between the first and the last accepted topic.
	spend := createTopicsRaw(cl, 7, 20, "mq-burst") // empties the bucket
	if spend.Topics[0].ErrorCode == kerr.ThrottlingQuotaExceeded.Code {
		t.Fatal("the burst was refused")
	}
	const per = 5
	var first, last time.Time
	accepted, refused := 0, 0
	for i := 0; last.Sub(first) < 3*time.Second; i++ {
		r := createTopicsRaw(cl, 7, per, fmt.Sprintf("mq-r%d", i))
		if r.Topics[0].ErrorCode == kerr.ThrottlingQuotaExceeded.Code {
			refused++
		} else {
			if first.IsZero() {
				first = time.Now()
			} else {
				accepted += per
			}
			last = time.Now()
		}
		time.Sleep(time.Duration(r.ThrottleMillis) * time.Millisecond)
	}
	measured := float64(accepted) / last.Sub(first).Seconds()
	t.Logf("controller mutation rate: quota %.0f/s, measured %.2f/s (%d partitions in %v, %d requests refused)",
		rate, measured, accepted, last.Sub(first).Round(time.Millisecond), refused)
	if measured < rate*0.85 || measured > rate*1.15 {
		t.Fatalf("measured %.2f partitions/s, want %.0f ±15%%", measured, rate)
	}
}

// metadataHasTopicEventually reports whether topic shows up in the broker's metadata cache
// within a short while (a created topic does within milliseconds).
func metadataHasTopicEventually(b *Broker, topic string) bool {
	deadline := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if b.metadata.Contains(topic) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}
