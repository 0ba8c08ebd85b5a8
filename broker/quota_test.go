package broker

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's Rate: a fresh sensor counts samples-1 whole windows, so 20000 bytes at once
// against 1000 B/s over 11 × 1 s is 2000 B/s and (2000-1000)/1000 × 10 s = 10 s of throttle.
func TestQuotaRateAndThrottleTime(t *testing.T) {
	cfg := newRateConfig(11, time.Second)
	var r windowedRate
	r.record(cfg, 20000, 0)
	if got := r.windowSize(cfg, 0); got != 10000 {
		t.Fatalf("window size of a fresh rate = %d ms, want 10000", got)
	}
	if got := r.measure(cfg, 0); got != 2000 {
		t.Fatalf("rate = %v, want 2000", got)
	}
	if got := throttleTimeMs(r.measure(cfg, 0), 1000, r.windowSize(cfg, 0)); got != 10000 {
		t.Fatalf("throttle = %d ms, want 10000", got)
	}
	// 15 s later the elapsed span (oldest sample at 0 is expired and restarted) decides.
	r.record(cfg, 1000, 15000)
	if got := r.measure(cfg, 15000); math.Abs(got-100) > 1e-9 {
		t.Fatalf("rate after the old sample expired = %v, want 100 (1000 B over 10 s)", got)
	}
	// Samples rotate: one per window, at most 11 retained.
	var s windowedRate
	for i := int64(0); i < 30; i++ {
		s.record(cfg, 100, i*1000)
	}
	if len(s.samples) != 11 {
		t.Fatalf("samples = %d, want 11", len(s.samples))
	}
	// The 11 retained samples (19 s .. 29 s) hold 1100 B over an elapsed 10 s.
	if got := s.measure(cfg, 29000); math.Abs(got-110) > 1e-9 {
		t.Fatalf("steady rate = %v, want 110", got)
	}
}

func TestQuotaManagerThrottlesAndUnrecords(t *testing.T) {
	m := newClientQuotaManager("Produce", newRateConfig(11, time.Second), 0, logrus.NewEntry(logrus.New()))
	if got := m.RecordAndGetThrottleTimeMs("alice", "app", 1e9, 0); got != 0 {
		t.Fatalf("no quota: throttle %d", got)
	}
	m.entities.Set(QuotaEntity{ClientKind: quotaEntityNamed, ClientID: "app"}, 1000)
	if got := m.RecordAndGetThrottleTimeMs("alice", "app", 5000, 0); got != 0 {
		t.Fatalf("5000 B over a 10 s window at 1000 B/s: throttle %d, want 0", got)
	}
	if got := m.RecordAndGetThrottleTimeMs("alice", "app", 10000, 0); got != 5000 {
		t.Fatalf("15000 B: throttle %d, want 5000", got)
	}
	// Another client id is not limited, and does not share the sensor.
	if got := m.RecordAndGetThrottleTimeMs("alice", "other", 1e9, 0); got != 0 {
		t.Fatalf("unlimited client throttled %d", got)
	}
	m.Unrecord("alice", "app", 10000, 0)
	if got := m.RecordAndGetThrottleTimeMs("alice", "app", 0, 0); got != 0 {
		t.Fatalf("after unrecord: throttle %d, want 0", got)
	}
	if got := m.MaxValueInQuotaWindow("alice", "app"); got != 10000 {
		t.Fatalf("max value in quota window = %v, want 1000 × 10 s", got)
	}
	// A quota change applies to the existing sensor.
	m.entities.Set(QuotaEntity{ClientKind: quotaEntityNamed, ClientID: "app"}, 100)
	if got := m.RecordAndGetThrottleTimeMs("alice", "app", 0, 0); got != 40000 {
		t.Fatalf("after lowering the quota to 100 B/s: throttle %d, want 40000", got)
	}
	// The request quota caps throttles at one window.
	r := newClientQuotaManager("Request", newRateConfig(11, time.Second), 1000, logrus.NewEntry(logrus.New()))
	r.entities.Set(QuotaEntity{ClientKind: quotaEntityDefault}, 1)
	if got := r.RecordAndGetThrottleTimeMs("", "x", 1000, 0); got != 1000 {
		t.Fatalf("request throttle %d, want the 1000 ms cap", got)
	}
}

// The eight levels of ClientQuotaManager's precedence, most specific first: removing each
// in turn exposes the next.
func TestQuotaEntityPrecedence(t *testing.T) {
	q := NewQuotaEntities()
	user := QuotaEntity{UserKind: quotaEntityNamed, User: "alice"}
	defUser := QuotaEntity{UserKind: quotaEntityDefault}
	cl := func(e QuotaEntity) QuotaEntity { e.ClientKind, e.ClientID = quotaEntityNamed, "app"; return e }
	def := func(e QuotaEntity) QuotaEntity { e.ClientKind = quotaEntityDefault; return e }
	levels := []QuotaEntity{cl(user), def(user), user, cl(defUser), def(defUser), defUser, cl(QuotaEntity{}), def(QuotaEntity{})}
	for i, e := range levels {
		q.Set(e, float64(i+1))
	}
	for i, e := range levels {
		tags, v, ok := q.Resolve("alice", "app")
		if !ok || v != float64(i+1) {
			t.Fatalf("level %d (%s): resolved %v ok=%v tags=%+v", i+1, e, v, ok, tags)
		}
		q.Remove(e)
	}
	if _, v, ok := q.Resolve("alice", "app"); ok {
		t.Fatalf("no quota left, resolved %v", v)
	}
	// Another user falls through the named-user levels to the defaults.
	q.Set(cl(user), 1)
	q.Set(defUser, 7)
	if tags, v, _ := q.Resolve("bob", "app"); v != 7 || tags != (QuotaTags{User: "bob"}) {
		t.Fatalf("bob: %v %+v, want the default user quota in a per-user sensor", v, tags)
	}
	// A client literally named <default> is not the default client.
	p := NewQuotaEntities()
	p.Set(def(QuotaEntity{}), 5)
	p.Set(QuotaEntity{ClientKind: quotaEntityNamed, ClientID: "<default>"}, 9)
	if _, v, _ := p.Resolve("", "<default>"); v != 9 {
		t.Fatalf("client named <default>: %v", v)
	}
	if _, v, _ := p.Resolve("", "x"); v != 5 {
		t.Fatalf("client x: %v, want the default 5", v)
	}
}

// Sensors are shared as Kafka's metric tags say: a user quota counts all of the user's
// clients together; a client-id quota all users of that client id.
func TestQuotaMetricTagsShareSensors(t *testing.T) {
	q := NewQuotaEntities()
	q.Set(QuotaEntity{UserKind: quotaEntityNamed, User: "alice"}, 1)
	if a, b := q.MetricTags("alice", "c1"), q.MetricTags("alice", "c2"); a != b {
		t.Fatalf("user quota: %+v and %+v differ", a, b)
	}
	c := NewQuotaEntities()
	c.Set(QuotaEntity{ClientKind: quotaEntityDefault}, 1)
	if a, b := c.MetricTags("alice", "c1"), c.MetricTags("bob", "c1"); a != b {
		t.Fatalf("client quota: %+v and %+v differ", a, b)
	}
	if a, b := c.MetricTags("alice", "c1"), c.MetricTags("alice", "c2"); a == b {
		t.Fatalf("client quota: different clients share %+v", a)
	}
}

func TestParseQuotaEntityPath(t *testing.T) {
	for _, tc := range []struct {
		typ, name string
		want      QuotaEntity
		bad       bool
	}{
		{typ: "clients", name: "my%20app", want: QuotaEntity{ClientKind: quotaEntityNamed, ClientID: "my app"}},
		{typ: "clients", name: "<default>", want: QuotaEntity{ClientKind: quotaEntityDefault}},
		{typ: "users", name: "CN%3Dx", want: QuotaEntity{UserKind: quotaEntityNamed, User: "CN%3Dx"}},
		{typ: "users", name: "<default>/clients/<default>", want: QuotaEntity{UserKind: quotaEntityDefault, ClientKind: quotaEntityDefault}},
		{typ: "users", name: "u/clients/c", want: QuotaEntity{UserKind: quotaEntityNamed, User: "u", ClientKind: quotaEntityNamed, ClientID: "c"}},
		{typ: "users", name: "u/c", bad: true},
		{typ: "topics", name: "t", bad: true},
	} {
		got, err := ParseQuotaEntityPath(tc.typ, tc.name)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("%s/%s: %+v, %v", tc.typ, tc.name, got, err)
		}
	}
}

// The request quota applies to every API through the dispatcher: a client over its
// request_percentage gets throttle_time_ms (capped at one window) and a muted connection;
// cluster actions are exempt.
func TestRequestQuotaThrottlesAnyAPI(t *testing.T) {
	e := newDataEnv(t)
	q, err := NewQuotaManagers(e.cfg, nil, e.log)
	if err != nil {
		t.Fatal(err)
	}
	e.apis.Quotas = q
	q.Request.Entities().Set(QuotaEntity{ClientKind: quotaEntityDefault}, 1e-9)

	rc := &RequestContext{ClientID: "c", APIKey: 3, APIVersion: 12, Log: e.log}
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	resp, err := e.apis.Handle(context.Background(), rc, req)
	if err != nil {
		t.Fatal(err)
	}
	got := resp.(*kmsg.MetadataResponse).ThrottleMillis
	if got != 1000 || rc.muteFor != time.Second {
		t.Fatalf("metadata over request quota: throttle %d ms, mute %v; want the 1 s cap", got, rc.muteFor)
	}
	if n, _ := q.Request.ThrottleStats(); n != 1 {
		t.Fatalf("throttles counted: %d", n)
	}
	exemptAPIsUnthrottled(t, e)
}

// exemptAPIsUnthrottled sends UpdateMetadata (a cluster action) for a client far over
// quota: no throttle.
func exemptAPIsUnthrottled(t *testing.T, e *dataEnv) {
	t.Helper()
	rc := &RequestContext{ClientID: "c", APIKey: 6, APIVersion: 7, Log: e.log}
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.Version = 7
	req.ControllerID, req.ControllerEpoch = 1, 1
	if _, err := e.apis.Handle(context.Background(), rc, req); err != nil {
		t.Fatal(err)
	}
	if rc.muteFor != 0 {
		t.Errorf("UpdateMetadata throttled %v", rc.muteFor)
	}
}
