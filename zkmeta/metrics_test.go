package zkmeta

import (
	"errors"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/samsa-kafka/samsa/internal/metrics"
	"github.com/samsa-kafka/samsa/internal/zktest"
)

// counterOrCount reads an unlabelled counter, or a histogram's _count, from reg.
func counterOrCount(t *testing.T, reg *metrics.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) > 0 && f.GetType() == dto.MetricType_COUNTER {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return -1 // absent
}

// The SessionExpireListener meters count the state changes (the first connection, made
// before registration, included) and ZooKeeperRequestLatencyMs counts requests; a session
// expiry marks Disconnects, Expires and a second SyncConnects.
func TestClientMetrics(t *testing.T) {
	log, _ := testLogger(t)
	proxy := zktest.StartProxy(t, zkServer.Addr())
	c := connectTo(t, proxy.Connect(chrootFor(t)), time.Second, log)
	other := connectTo(t, zkServer.Connect(chrootFor(t)), 4*time.Second, log)
	reg := metrics.NewRegistry()
	c.RegisterMetrics(reg)
	const (
		syncConnects = "kafka_server_sessionexpirelistener_zookeepersyncconnects_total"
		expires      = "kafka_server_sessionexpirelistener_zookeeperexpires_total"
		disconnects  = "kafka_server_sessionexpirelistener_zookeeperdisconnects_total"
		latency      = "kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms_count"
	)
	if v := counterOrCount(t, reg, syncConnects); v != 1 {
		t.Fatalf("%s = %v after connecting, want 1", syncConnects, v)
	}
	if v := counterOrCount(t, reg, expires); v != 0 {
		t.Fatalf("%s = %v, want 0", expires, v)
	}
	if err := c.CreateTopLevelPaths(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterBroker(t.Context(), BrokerInfo{ID: 7, Endpoints: []Endpoint{{"PLAINTEXT", "h", 1, "PLAINTEXT"}}}); err != nil {
		t.Fatal(err)
	}
	n := counterOrCount(t, reg, latency)
	if n < 2 {
		t.Fatalf("%s = %v after several requests, want ≥ 2", latency, n)
	}
	if _, _, err := c.Get(BrokerIDsPath); err != nil {
		t.Fatal(err)
	}
	if v := counterOrCount(t, reg, latency); v != n+1 {
		t.Fatalf("%s = %v after one Get, want %v", latency, v, n+1)
	}

	events := c.SessionEvents()
	proxy.Partition()
	waitFor(t, 10*time.Second, "the server to expire the session", func() bool {
		_, err := other.GetBroker(7)
		return errors.Is(err, ErrNoNode)
	})
	proxy.Heal()
	if ev := recvSession(t, events, 10*time.Second); ev.Type != SessionExpired {
		t.Fatalf("session event %+v, want SessionExpired", ev)
	}
	waitFor(t, 10*time.Second, "a new session", func() bool { return counterOrCount(t, reg, syncConnects) == 2 })
	if v := counterOrCount(t, reg, expires); v != 1 {
		t.Errorf("%s = %v after one expiry, want 1", expires, v)
	}
	if v := counterOrCount(t, reg, disconnects); v < 1 {
		t.Errorf("%s = %v after a partition, want ≥ 1", disconnects, v)
	}
}
