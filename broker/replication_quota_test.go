package broker

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/logstore"
)

// replClock is a settable clock for the rate tests.
type replClock struct{ t time.Time }

func (c *replClock) now() time.Time      { return c.t }
func (c *replClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newReplClock() *replClock           { return &replClock{t: time.UnixMilli(1_700_000_000_000)} }
func testQuota(c *replClock, v string) *ReplicationQuotaManager {
	return newReplicationQuotaManager("LeaderReplication", 1, 11, time.Second,
		func(logstore.TopicPartition) string { return v }, c.now, logrus.NewEntry(logrus.StandardLogger()))
}

func TestReplicationRateIsSimpleRate(t *testing.T) {
	c := newReplClock()
	q := testQuota(c, "")
	// The first window counts as a whole second even when less has passed.
	q.Record(500)
	c.add(100 * time.Millisecond)
	if r := q.Rate(); r != 500 {
		t.Fatalf("rate after 100 ms = %v, want 500 (one window at least)", r)
	}
	// Past one window the rate divides by the time since the oldest sample began.
	c.add(1900 * time.Millisecond)
	q.Record(1500)
	if r := q.Rate(); r != 1000 {
		t.Fatalf("rate after 2 s = %v, want 1000", r)
	}
	// Samples older than num x window are forgotten.
	c.add(12 * time.Second)
	if r := q.Rate(); r != 0 {
		t.Fatalf("rate after the samples expired = %v, want 0", r)
	}
}

func TestReplicationQuotaExceeded(t *testing.T) {
	c := newReplClock()
	q := testQuota(c, "*")
	q.Record(10 << 20)
	if q.IsQuotaExceeded() {
		t.Fatal("exceeded with no quota (Long.MaxValue)")
	}
	q.UpdateQuota(1000)
	if !q.IsQuotaExceeded() {
		t.Fatalf("not exceeded at %v B/s against 1000", q.Rate())
	}
	q.UpdateQuota(math.MaxInt64)
	if q.IsQuotaExceeded() || q.UpperBound() != math.MaxInt64 {
		t.Fatal("Long.MaxValue did not lift the quota")
	}
	// The bound is inclusive (Quota.acceptable: value <= bound).
	c2 := newReplClock()
	q2 := testQuota(c2, "*")
	q2.UpdateQuota(1000)
	q2.Record(1000)
	if q2.IsQuotaExceeded() {
		t.Fatal("a rate equal to the bound counted as exceeded")
	}
	q2.Record(1)
	if !q2.IsQuotaExceeded() {
		t.Fatal("a rate above the bound not exceeded")
	}
}

func TestParseThrottledReplicas(t *testing.T) {
	for _, c := range []struct {
		in    string
		all   bool
		parts []int32
		err   bool
	}{
		{in: ""},
		{in: "  "},
		{in: "*", all: true},
		{in: " * ", all: true},
		{in: "0:1,1:2,2:1", parts: []int32{0, 2}},
		{in: "0:1, 3:1 ,", parts: []int32{0, 3}},
		{in: "0:2"},
		{in: "0-1", err: true},
		{in: "*,0:1", err: true},
		{in: "a:1", err: true},
	} {
		got, err := parseThrottledReplicas(c.in, 1)
		if (err != nil) != c.err || got.all != c.all || !slices.Equal(got.partitions, c.parts) {
			t.Errorf("%q: %+v %v, want all=%v %v err=%v", c.in, got, err, c.all, c.parts, c.err)
		}
	}
	c := newReplClock()
	if q := testQuota(c, "0:1,2:1"); !q.IsThrottled(logstore.TopicPartition{Topic: "t", Partition: 2}) ||
		q.IsThrottled(logstore.TopicPartition{Topic: "t", Partition: 1}) {
		t.Error("IsThrottled does not follow the list for this broker")
	}
	if q := testQuota(c, "0:7"); q.IsThrottled(logstore.TopicPartition{Topic: "t", Partition: 0}) {
		t.Error("another broker's replica throttled here")
	}
	if q := testQuota(c, "bad"); q.IsThrottled(logstore.TopicPartition{Topic: "t", Partition: 0}) {
		t.Error("an invalid list throttled")
	}
}

func TestReplicationQuotasReconfigure(t *testing.T) {
	e := newDataEnv(t)
	q := e.rm.ReplicationQuotas()
	if q.Leader.UpperBound() != math.MaxInt64 || q.Follower.UpperBound() != math.MaxInt64 {
		t.Fatal("a quota without any rate configured")
	}
	bad := &config.Config{Props: map[string]string{leaderThrottledRateKey: "-1"}}
	if err := q.ValidateReconfiguration(bad); err == nil {
		t.Fatal("negative rate accepted")
	}
	good := &config.Config{Props: map[string]string{leaderThrottledRateKey: "1000", followerThrottledRateKey: "2000"}}
	if err := q.ValidateReconfiguration(good); err != nil {
		t.Fatal(err)
	}
	q.Reconfigure(e.cfg, good)
	if q.Leader.UpperBound() != 1000 || q.Follower.UpperBound() != 2000 {
		t.Fatalf("bounds %d %d", q.Leader.UpperBound(), q.Follower.UpperBound())
	}
	q.Reconfigure(good, &config.Config{Props: map[string]string{}})
	if q.Leader.UpperBound() != math.MaxInt64 || q.Follower.UpperBound() != math.MaxInt64 {
		t.Fatal("removing the rates kept a bound")
	}
}

// The leader answers a throttled follower out of the ISR with no records while over quota,
// keeps serving one in the ISR, and counts what it sends of throttled partitions.
func TestLeaderThrottlesFollowerOutOfISR(t *testing.T) {
	e := newDataEnv(t)
	p, l, _ := replicatedPartition(t, e, "thr", []int32{1, 2})
	appendN(t, p, 20)
	tp := p.tp
	q := e.rm.ReplicationQuotas().Leader

	// Not throttled yet: replica 3 (out of the ISR) reads.
	if r := followerFetch(t, e, tp, 3, 0, -1); r.Err != nil || r.Records.Size == 0 {
		t.Fatalf("unthrottled fetch: %+v", r)
	}
	cfg := l.Config()
	cfg.LeaderReplicationThrottled = "0:1" // partition 0 on this (leader) broker
	l.SetConfig(cfg)
	q.UpdateQuota(1)
	q.Record(1 << 20)
	if !q.IsQuotaExceeded() {
		t.Fatal("quota not exceeded")
	}
	r := followerFetch(t, e, tp, 3, 0, -1)
	if r.Err != nil || r.Records.Size != 0 || r.HighWatermark < 0 {
		t.Fatalf("throttled follower got %d bytes (%v)", r.Records.Size, r.Err)
	}
	// In the ISR: never throttled.
	if r := followerFetch(t, e, tp, 2, 0, -1); r.Err != nil || r.Records.Size == 0 {
		t.Fatalf("in-sync follower throttled: %+v", r)
	}
	// Another broker's entry in the list does not throttle this leader.
	cfg.LeaderReplicationThrottled = "0:2"
	l.SetConfig(cfg)
	if r := followerFetch(t, e, tp, 3, 0, -1); r.Records.Size == 0 {
		t.Fatal("partition throttled by another broker's entry")
	}
	// Recording counts throttled partitions only.
	cfg.LeaderReplicationThrottled = "*"
	l.SetConfig(cfg)
	q.UpdateQuota(math.MaxInt64)
	before := q.Rate()
	res := followerFetch(t, e, tp, 3, 0, -1)
	e.rm.recordLeaderReplication([]FetchPartitionRequest{{TP: tp}}, []FetchPartitionResult{res})
	if res.Records.Size == 0 || q.Rate() <= before {
		t.Fatalf("throttled bytes not recorded: %v -> %v", before, q.Rate())
	}
}

func TestFollowerThrottleDecision(t *testing.T) {
	e := newDataEnv(t)
	p, l, _ := replicatedPartition(t, e, "fthr", []int32{1, 2, 3})
	f := &replicaFetcher{m: e.rm.fetchers}
	st := &fetchState{p: p}
	q := e.rm.ReplicationQuotas().Follower
	q.UpdateQuota(1)
	q.Record(1 << 20)
	if f.shouldFollowerThrottle(st) {
		t.Fatal("throttled without a follower list")
	}
	cfg := l.Config()
	cfg.FollowerReplicationThrottled = "*"
	l.SetConfig(cfg)
	if !f.shouldFollowerThrottle(st) {
		t.Fatal("not throttled: listed, lag unknown, quota exceeded")
	}
	st.lag, st.lagKnown = 0, true
	if f.shouldFollowerThrottle(st) {
		t.Fatal("a caught-up replica throttled")
	}
	st.lag = 5
	q.UpdateQuota(math.MaxInt64)
	if f.shouldFollowerThrottle(st) {
		t.Fatal("throttled under quota")
	}
}
