package broker

import (
	"context"
	"errors"
	"math"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// connQuotaConfig is a listener-only config (nothing dials ZooKeeper) with overrides.
func connQuotaConfig(t *testing.T, overrides map[string]string) *config.Config {
	t.Helper()
	raw := map[string]string{
		"broker.id":         "1",
		"zookeeper.connect": "127.0.0.1:1",
		"listeners":         "PLAINTEXT://127.0.0.1:0",
		"log.dirs":          t.TempDir(),
	}
	for k, v := range overrides {
		raw[k] = v
	}
	cfg, _, err := config.FromMap(raw)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// apiVersionsOnly answers ApiVersions and nothing else: enough to tell a served connection.
type apiVersionsOnly struct{}

func (apiVersionsOnly) Handle(_ context.Context, _ *RequestContext, req kmsg.Request) (kmsg.Response, error) {
	resp := req.ResponseKind()
	if r, ok := resp.(*kmsg.ApiVersionsResponse); ok {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MaxVersion = 18, 3
		r.ApiKeys = append(r.ApiKeys, k)
	}
	return resp, nil
}

// serveWithQuotas serves apiVersionsOnly on a loopback listener named listener with q.
func serveWithQuotas(t *testing.T, listener string, q *ConnectionQuotas) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewSocketServer(l, listener, apiVersionsOnly{}, 1<<20, adminLogger(t))
	s.Quotas = q
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background()) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return l.Addr().String()
}

// served reports whether tc gets an ApiVersions answer (false: the broker closed it).
func (tc *testClient) served() bool {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "probe", "1"
	tc.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := tc.c.Write(encodeFrame(req, 1)); err != nil {
		return false
	}
	_, err := tc.readFrame()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		tc.t.Fatalf("connection neither served nor closed: %v", err)
	}
	return err == nil
}

func waitQuota(t *testing.T, what string, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestConnectionQuotasPerIPLimitChangesLive: the connection over max.connections.per.ip is
// closed while the others are served; raising the limit live admits the next one, and an
// override for the address wins over the default.
func TestConnectionQuotasPerIPLimitChangesLive(t *testing.T) {
	cfg := connQuotaConfig(t, map[string]string{"max.connections.per.ip": "2"})
	q, err := NewConnectionQuotas(cfg, nil, adminLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	addr := serveWithQuotas(t, "PLAINTEXT", q)
	a, b := dialTest(t, addr), dialTest(t, addr)
	if !a.served() || !b.served() {
		t.Fatal("the first two connections must be served")
	}
	if c := dialTest(t, addr); c.served() {
		t.Fatal("a third connection from 127.0.0.1 was served with max.connections.per.ip=2")
	}
	if !a.served() || !b.served() {
		t.Fatal("the refused connection affected the served ones")
	}
	waitQuota(t, "the refused connection to be counted down", func() bool { return q.Get("127.0.0.1") == 2 })

	newCfg := connQuotaConfig(t, map[string]string{"max.connections.per.ip": "3"})
	if err := q.ValidateReconfiguration(newCfg); err != nil {
		t.Fatal(err)
	}
	q.Reconfigure(cfg, newCfg)
	c := dialTest(t, addr)
	if !c.served() {
		t.Fatal("a third connection was refused after max.connections.per.ip became 3")
	}
	if d := dialTest(t, addr); d.served() {
		t.Fatal("a fourth connection was served with max.connections.per.ip=3")
	}

	// An override for the address wins over the default.
	overCfg := connQuotaConfig(t, map[string]string{"max.connections.per.ip": "3", "max.connections.per.ip.overrides": "127.0.0.1:4"})
	q.Reconfigure(newCfg, overCfg)
	if d := dialTest(t, addr); !d.served() {
		t.Fatal("a fourth connection was refused with an override of 4")
	}
	// Closing a connection frees its slot.
	a.c.Close()
	waitQuota(t, "a closed connection to be counted down", func() bool { return q.Get("127.0.0.1") == 3 })
	if e := dialTest(t, addr); !e.served() {
		t.Fatal("a connection was refused after another one closed")
	}
}

// TestConnectionQuotasValidation: Kafka's refusals of connection limit values.
func TestConnectionQuotasValidation(t *testing.T) {
	cfg := connQuotaConfig(t, nil)
	q, err := NewConnectionQuotas(cfg, nil, adminLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"max.connections.per.ip": "0"}, "requirement failed: max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set."},
		{map[string]string{"max.connections.per.ip.overrides": "bad host:3"}, "max.connections.per.ip.overrides contains invalid addresses : bad host"},
		{map[string]string{"max.connections": "0"}, "Invalid max.connections 0"},
		{map[string]string{"listener.name.plaintext.max.connection.creation.rate": "0"}, "Invalid max.connection.creation.rate 0"},
	} {
		err := q.ValidateReconfiguration(connQuotaConfig(t, tc.props))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v: got %v, want %q", tc.props, err, tc.want)
		}
	}
	if err := q.ValidateReconfiguration(connQuotaConfig(t, map[string]string{"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "127.0.0.1:5"})); err != nil {
		t.Errorf("zero with overrides: %v", err)
	}
	keys := q.ReconfigurableConfigs()
	want := map[string]bool{"max.connections": true, "listener.name.plaintext.max.connections": true, "listener.name.plaintext.max.connection.creation.rate": true}
	for _, k := range keys {
		delete(want, k)
	}
	if len(want) > 0 {
		t.Errorf("ReconfigurableConfigs %v misses %v", keys, want)
	}
}

// TestConnectionQuotasMaxConnectionsWaitsForSlot: over max.connections the acceptor waits
// (the connection is not served, nor closed) until a slot frees up; the inter-broker listener
// is exempt when there are several listeners, and the other listener sheds its oldest
// connection when the exempt one takes the broker over the limit.
func TestConnectionQuotasMaxConnectionsWaitsForSlot(t *testing.T) {
	cfg := connQuotaConfig(t, map[string]string{
		"listeners":                              "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
		"listener.security.protocol.map":         "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
		"inter.broker.listener.name":             "INTERNAL",
		"max.connections":                        "2",
		"listener.name.internal.max.connections": "5",
	})
	q, err := NewConnectionQuotas(cfg, nil, adminLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	addr := serveWithQuotas(t, "PLAINTEXT", q)
	internal := serveWithQuotas(t, "INTERNAL", q)
	a, b := dialTest(t, addr), dialTest(t, addr)
	if !a.served() || !b.served() {
		t.Fatal("connections under max.connections must be served")
	}
	c := dialTest(t, addr)
	servedC := make(chan bool, 1)
	go func() { servedC <- c.served() }()
	select {
	case <-servedC:
		t.Fatal("a connection over max.connections was answered before a slot freed up")
	case <-time.After(300 * time.Millisecond):
	}
	a.c.Close()
	if !<-servedC {
		t.Fatal("the waiting connection was closed instead of served once a slot freed up")
	}

	// The inter-broker listener is exempt from max.connections...
	ib := dialTest(t, internal)
	if !ib.served() {
		t.Fatal("inter-broker connection was not served")
	}
	// ...and the other listener sheds its oldest connection to get back under the limit.
	waitQuota(t, "the broker to be back at max.connections", func() bool { return q.Total() <= 2 })
	if b.served() {
		t.Fatal("the oldest PLAINTEXT connection should have been closed")
	}
	if !c.served() || !ib.served() {
		t.Fatal("the newer connections should still be served")
	}
}

// TestConnectionQuotasIPCreationRate: /config/ips/<ip> connection_creation_rate, read from
// ZooKeeper through IPConfigChanged: connections over the address's rate are closed
// unserved, and removing the quota live lifts the limit.
func TestConnectionQuotasIPCreationRate(t *testing.T) {
	zk, err := zkmeta.Connect(context.Background(), testZK(t).Connect(testChroot(t)), 6*time.Second, adminLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zk.Close() })
	cfg := connQuotaConfig(t, map[string]string{"quota.window.num": "2", "quota.window.size.seconds": "1"})
	q, err := NewConnectionQuotas(cfg, zk, adminLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zk.SetEntityConfig(zkmeta.ConfigTypeIP, "127.0.0.1", map[string]string{IPConnectionCreationRateConfig: "2"}); err != nil {
		t.Fatal(err)
	}
	if err := q.LoadIPConfigs(); err != nil {
		t.Fatal(err)
	}
	if got := q.ConnectionRateForIP("127.0.0.1"); got != 2 {
		t.Fatalf("rate for 127.0.0.1 = %d, want 2", got)
	}
	if got := q.ConnectionRateForIP("127.0.0.2"); got != math.MaxInt32 {
		t.Fatalf("rate for 127.0.0.2 = %d, want no quota", got)
	}
	addr := serveWithQuotas(t, "PLAINTEXT", q)
	// 2 windows of 1 s at 2/s: the window is at least 1 s long, so the first two of a burst
	// are within quota and the rest of it is over.
	served, refused := 0, 0
	for i := 0; i < 6; i++ {
		if dialTest(t, addr).served() {
			served++
		} else {
			refused++
		}
	}
	if served < 2 || refused == 0 {
		t.Fatalf("burst of 6 at 2/s: %d served, %d refused", served, refused)
	}

	// Removing the quota applies live.
	if _, err := zk.SetEntityConfig(zkmeta.ConfigTypeIP, "127.0.0.1", map[string]string{}); err != nil {
		t.Fatal(err)
	}
	if err := q.IPConfigChanged("127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		if !dialTest(t, addr).served() {
			t.Fatalf("connection %d refused after the ip quota was removed", i)
		}
	}
	// <default> applies to every address.
	if _, err := zk.SetEntityConfig(zkmeta.ConfigTypeIP, "<default>", map[string]string{IPConnectionCreationRateConfig: "0"}); err != nil {
		t.Fatal(err)
	}
	if err := q.IPConfigChanged("<default>"); err != nil {
		t.Fatal(err)
	}
	if dialTest(t, addr).served() {
		t.Fatal("a connection was served with a default ip rate of 0")
	}
}

// TestConnRateMeasuresKafkaRate: the Rate of a sensor and its throttle time follow Kafka's
// formulas (QuotaUtils.throttleTime).
func TestConnRateMeasuresKafkaRate(t *testing.T) {
	r := &connRate{cfg: rateConfig{samples: 11, windowMs: 1000}, bound: 10}
	for i := 0; i < 100; i++ { // 100 events in the first ms: the window counts as 10 s
		if d := r.recordAndThrottle(1000, time.Hour); d != 0 {
			t.Fatalf("event %d throttled for %v at rate %v", i, d, r.measure(1000))
		}
	}
	// The 101st makes 101 over 10 s = 10.1/s: (10.1-10)/10 * 10 s = 100 ms.
	if d := r.recordAndThrottle(1000, time.Hour); d != 100*time.Millisecond {
		t.Fatalf("throttle %v, want 100ms", d)
	}
	if d := r.recordAndThrottle(1000, 50*time.Millisecond); d != 50*time.Millisecond {
		t.Fatalf("capped throttle %v, want 50ms", d)
	}
	// After the whole window has passed every sample is obsolete.
	if v := r.measure(1000 + 11*1000); v != 0 {
		t.Fatalf("rate after the window: %v", v)
	}
}
