package zkmeta

// metrics.go — the ZooKeeper client's metrics (Kafka 3.7's ZooKeeperClient, registered by
// KafkaZkClient): kafka.server SessionExpireListener ZooKeeper<Event>PerSec, one meter per
// connection state change, and kafka.server ZooKeeperClientMetrics ZooKeeperRequestLatencyMs.
//
// SessionState is not exported: Kafka's gauge value is the state's name (a string), which
// the JMX exporter drops; Client.State gives it to the web view instead.

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/samsa-kafka/samsa/internal/metrics"
)

// stateMeters are ZooKeeperClient.stateToMeterMap: the meter each KeeperState marks. samsa's
// session (go-zookeeper's HasSession) is ZooKeeper's SyncConnected.
var stateMeters = []struct {
	state zk.State
	name  string
}{
	{zk.StateDisconnected, "ZooKeeperDisconnectsPerSec"},
	{zk.StateHasSession, "ZooKeeperSyncConnectsPerSec"},
	{zk.StateAuthFailed, "ZooKeeperAuthFailuresPerSec"},
	{zk.StateConnectedReadOnly, "ZooKeeperReadOnlyConnectsPerSec"},
	{zk.StateSaslAuthenticated, "ZooKeeperSaslAuthenticationsPerSec"},
	{zk.StateExpired, "ZooKeeperExpiresPerSec"},
}

// clientStats counts state changes from the client's start (the first connection happens
// before a broker registers its metrics) and feeds the meters once registered.
type clientStats struct {
	mu      sync.Mutex
	counts  map[zk.State]int
	metrics atomic.Pointer[clientMetrics] // nil until RegisterMetrics
}

type clientMetrics struct {
	states  map[zk.State]prometheus.Counter
	latency *metrics.Histogram
}

// RegisterMetrics registers the client's metrics in reg, state changes seen so far counted in.
func (c *Client) RegisterMetrics(reg *metrics.Registry) {
	m := &clientMetrics{states: map[zk.State]prometheus.Counter{}}
	for _, s := range stateMeters {
		m.states[s.state] = reg.Meter("server", "SessionExpireListener", s.name,
			"ZooKeeper connection state changes to "+s.state.String()).WithLabelValues()
	}
	m.latency = reg.Histogram("server", "ZooKeeperClientMetrics", "ZooKeeperRequestLatencyMs",
		"Latency of ZooKeeper requests, in ms (each attempt; a multi counts once)")
	m.latency.Declare()
	s := &c.stats
	s.mu.Lock()
	defer s.mu.Unlock()
	for st, n := range s.counts {
		if ctr := m.states[st]; ctr != nil {
			ctr.Add(float64(n))
		}
	}
	s.metrics.Store(m)
}

// counted marks the meter of a state change and returns the state.
func (s *clientStats) counted(st zk.State) zk.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts == nil {
		s.counts = map[zk.State]int{}
	}
	s.counts[st]++
	if m := s.metrics.Load(); m != nil {
		if ctr := m.states[st]; ctr != nil {
			ctr.Inc()
		}
	}
	return st
}

// timed runs one request attempt and records its latency (ZooKeeperRequestLatencyMs).
func (s *clientStats) timed(op func() error) error {
	m := s.metrics.Load()
	if m == nil {
		return op()
	}
	start := time.Now()
	err := op()
	m.latency.Observe(float64(time.Since(start).Microseconds()) / 1000)
	return err
}
