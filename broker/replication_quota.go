package broker

// replication_quota.go mirrors kafka.server.ReplicationQuotaManager: the leader's and the
// follower's replication throttles (KIP-73).
//
//   - Which replicas are throttled comes from the topic configs
//     leader.replication.throttled.replicas / follower.replication.throttled.replicas: "*"
//     (every replica of the topic) or "partition:broker,..." of which this broker keeps the
//     partitions naming itself (ConfigHandler.parseThrottledPartitions). They are read from
//     the hosted log's config, which the topic config handler keeps current.
//   - How fast: leader.replication.throttled.rate / follower.replication.throttled.rate, in
//     bytes/s, per-broker dynamic configs (/config/brokers/<id>; BrokerConfigHandler reads
//     them from that znode only, so neither <default> nor the static file sets them). Unset
//     means Long.MaxValue, i.e. no limit.
//   - The rate is Kafka's SimpleRate over replication.quota.window.num windows of
//     replication.quota.window.size.seconds; recording never refuses, checking tells whether
//     the measured rate is above the bound.
//   - The leader (ReplicaManager.readFromLog) answers a follower that is out of the ISR with
//     no records for a throttled partition while its leader quota is exceeded, and records
//     the bytes of every throttled partition it sends (KafkaApis.sizeOfThrottledPartitions);
//     the follower (ReplicaFetcherThread.buildFetch) leaves a throttled partition that is not
//     caught up out of its fetches while its follower quota is exceeded, and records the
//     bytes it appends for throttled partitions.
// Deviation: the leader records the records' bytes, not the encoded partition entries.

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/logstore"
)

// The keys ReassignPartitionsCommand sets and clears.
const (
	leaderThrottledRateKey       = "leader.replication.throttled.rate"
	followerThrottledRateKey     = "follower.replication.throttled.rate"
	leaderThrottledReplicasKey   = "leader.replication.throttled.replicas"
	followerThrottledReplicasKey = "follower.replication.throttled.replicas"
)

// ReplicaQuota is Kafka's ReplicaQuota: what the fetch paths ask of a replication quota.
type ReplicaQuota interface {
	Record(bytes int64)
	IsThrottled(tp logstore.TopicPartition) bool
	IsQuotaExceeded() bool
}

// replicationRate is Kafka's SimpleRate over a SampledStat: samples of windowMs each, at
// most num of them, a sample older than num windows forgotten; the rate divides the sum by
// the time since the oldest sample began, but by at least one window.
type replicationRate struct {
	num      int
	windowMs int64
	samples  []replicationSample
	current  int
}

type replicationSample struct {
	startMs int64
	value   float64
}

func (r *replicationRate) record(v float64, nowMs int64) {
	if len(r.samples) == 0 {
		r.samples = append(r.samples, replicationSample{startMs: nowMs})
	}
	s := &r.samples[r.current]
	if nowMs-s.startMs >= r.windowMs { // SampledStat.advance
		r.current = (r.current + 1) % r.num
		if r.current >= len(r.samples) {
			r.samples = append(r.samples, replicationSample{startMs: nowMs})
		} else {
			r.samples[r.current] = replicationSample{startMs: nowMs}
		}
		s = &r.samples[r.current]
	}
	s.value += v
}

// measure is Rate.measure in units per second.
func (r *replicationRate) measure(nowMs int64) float64 {
	if len(r.samples) == 0 {
		r.samples = append(r.samples, replicationSample{startMs: nowMs})
	}
	expire := int64(r.num) * r.windowMs
	total, oldest := 0.0, r.samples[0].startMs
	for i := range r.samples {
		if nowMs-r.samples[i].startMs >= expire { // purgeObsoleteSamples
			r.samples[i] = replicationSample{startMs: nowMs}
		}
		total += r.samples[i].value
		oldest = min(oldest, r.samples[i].startMs)
	}
	elapsed := max(nowMs-oldest, r.windowMs)
	return total / (float64(elapsed) / 1000)
}

// throttledReplicas is a parsed throttled-replicas value for one broker.
type throttledReplicas struct {
	all        bool
	partitions []int32
}

// throttledReplicaList is ThrottledReplicaListValidator's accepted form.
var throttledReplicaList = regexp.MustCompile(`^([0-9]+:[0-9]+)?$`)

// parseThrottledReplicas is ConfigHandler.parseThrottledPartitions: the partitions of value
// throttled on brokerID. An invalid value throttles nothing.
func parseThrottledReplicas(value string, brokerID int32) (throttledReplicas, error) {
	value = strings.TrimSpace(value)
	switch value {
	case "":
		return throttledReplicas{}, nil
	case "*":
		return throttledReplicas{all: true}, nil
	}
	var out throttledReplicas
	for _, e := range strings.Split(value, ",") {
		e = strings.TrimSpace(e)
		if !throttledReplicaList.MatchString(e) {
			return throttledReplicas{}, fmt.Errorf("%q must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...", value)
		}
		if e == "" {
			continue
		}
		p, b, _ := strings.Cut(e, ":")
		pid, perr := strconv.ParseInt(p, 10, 32)
		bid, berr := strconv.ParseInt(b, 10, 32)
		if perr != nil || berr != nil {
			return throttledReplicas{}, fmt.Errorf("%q: replica %q out of range", value, e)
		}
		if int32(bid) == brokerID {
			out.partitions = append(out.partitions, int32(pid))
		}
	}
	return out, nil
}

// ReplicationQuotaManager is one of the two replication quotas (LeaderReplication or
// FollowerReplication). Safe for concurrent use.
type ReplicationQuotaManager struct {
	kind     string // "LeaderReplication" or "FollowerReplication", Kafka's QuotaType
	brokerID int32
	// throttledValue is the topic's throttled-replicas value for tp ("" when none or not hosted).
	throttledValue func(tp logstore.TopicPartition) string
	now            func() time.Time
	log            *logrus.Entry

	mu     sync.Mutex
	bound  float64 // bytes/s; +Inf: no quota
	rate   replicationRate
	parsed map[string]throttledReplicas // throttled-replicas values seen, parsed
}

func newReplicationQuotaManager(kind string, brokerID int32, windows int, window time.Duration,
	throttledValue func(tp logstore.TopicPartition) string, now func() time.Time, log *logrus.Entry) *ReplicationQuotaManager {
	return &ReplicationQuotaManager{kind: kind, brokerID: brokerID, throttledValue: throttledValue, now: now,
		log: log.WithField("quota", kind), bound: math.Inf(1),
		rate:   replicationRate{num: max(windows, 1), windowMs: max(window.Milliseconds(), 1)},
		parsed: map[string]throttledReplicas{}}
}

// UpdateQuota sets the bound in bytes/s; math.MaxInt64 (Kafka's default) removes it.
func (q *ReplicationQuotaManager) UpdateQuota(bytesPerSec int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if bytesPerSec == math.MaxInt64 {
		q.bound = math.Inf(1)
	} else {
		q.bound = float64(bytesPerSec)
	}
}

// UpperBound is the quota in bytes/s, math.MaxInt64 when unlimited.
func (q *ReplicationQuotaManager) UpperBound() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if math.IsInf(q.bound, 1) {
		return math.MaxInt64
	}
	return int64(q.bound)
}

// Record adds bytes to the measured rate; it never refuses (Sensor.record without a check).
func (q *ReplicationQuotaManager) Record(bytes int64) {
	if bytes <= 0 {
		return
	}
	q.mu.Lock()
	q.rate.record(float64(bytes), q.now().UnixMilli())
	q.mu.Unlock()
}

// IsQuotaExceeded is Sensor.checkQuotas: whether the measured rate is above the bound.
func (q *ReplicationQuotaManager) IsQuotaExceeded() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if math.IsInf(q.bound, 1) {
		return false
	}
	return q.rate.measure(q.now().UnixMilli()) > q.bound
}

// Rate is the measured rate in bytes/s.
func (q *ReplicationQuotaManager) Rate() float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.rate.measure(q.now().UnixMilli())
}

// IsThrottled reports whether the topic's throttled-replicas list names tp on this broker.
func (q *ReplicationQuotaManager) IsThrottled(tp logstore.TopicPartition) bool {
	if q == nil || q.throttledValue == nil {
		return false
	}
	v := q.throttledValue(tp)
	if v == "" {
		return false
	}
	q.mu.Lock()
	t, ok := q.parsed[v]
	if !ok {
		var err error
		if t, err = parseThrottledReplicas(v, q.brokerID); err != nil {
			q.log.WithError(err).WithField("topic", tp.Topic).Warn("ignoring an invalid throttled replicas list")
		}
		if len(q.parsed) >= 1024 { // values are few; keep the cache from growing without end
			clear(q.parsed)
		}
		q.parsed[v] = t
	}
	q.mu.Unlock()
	return t.all || slices.Contains(t.partitions, tp.Partition)
}

// ReplicationQuotas are the broker's leader and follower replication quotas (QuotaFactory's
// leader and follower) and the Reconfigurable that applies the per-broker rates.
type ReplicationQuotas struct {
	Leader   *ReplicationQuotaManager
	Follower *ReplicationQuotaManager
	dynamic  *DynamicBrokerConfig // nil: the rates come from the configuration given
	log      *logrus.Entry
}

var _ Reconfigurable = (*ReplicationQuotas)(nil)

// newReplicationQuotas builds both quotas for rm's partitions, applies the rates cfg holds
// and, with dyn, registers for their live changes.
func newReplicationQuotas(rm *ReplicaManager, cfg *config.Config, dyn *DynamicBrokerConfig) *ReplicationQuotas {
	var props map[string]string
	if cfg != nil {
		props = cfg.Props
	}
	windows := int(propInt(props, "replication.quota.window.num", 11))
	window := time.Duration(propInt(props, "replication.quota.window.size.seconds", 1)) * time.Second
	topicValue := func(key string) func(tp logstore.TopicPartition) string {
		return func(tp logstore.TopicPartition) string {
			p, err := rm.Partition(tp)
			if err != nil {
				return ""
			}
			l := p.Log()
			if l == nil {
				return ""
			}
			c := l.Config()
			if key == leaderThrottledReplicasKey {
				return c.LeaderReplicationThrottled
			}
			return c.FollowerReplicationThrottled
		}
	}
	log := rm.log.WithField("component", "replication.quota")
	now := rm.cfg.Now
	q := &ReplicationQuotas{
		Leader:   newReplicationQuotaManager("LeaderReplication", rm.cfg.BrokerID, windows, window, topicValue(leaderThrottledReplicasKey), now, log),
		Follower: newReplicationQuotaManager("FollowerReplication", rm.cfg.BrokerID, windows, window, topicValue(followerThrottledReplicasKey), now, log),
		dynamic:  dyn,
		log:      log,
	}
	if cfg != nil {
		q.apply(cfg)
	}
	if dyn != nil {
		dyn.AddReconfigurable(q)
	}
	return q
}

// ReconfigurableConfigs are the two per-broker rates.
func (q *ReplicationQuotas) ReconfigurableConfigs() []string {
	return []string{leaderThrottledRateKey, followerThrottledRateKey}
}

// ValidateReconfiguration refuses a rate that is not a long >= 0 (DynamicConfig.Broker).
func (q *ReplicationQuotas) ValidateReconfiguration(newCfg *config.Config) error {
	for _, k := range q.ReconfigurableConfigs() {
		v, ok := newCfg.Props[k]
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil || n < 0 {
			return fmt.Errorf("Invalid value %s for configuration %s: must be a long at least 0", v, k)
		}
	}
	return nil
}

// Reconfigure applies the new rates (BrokerConfigHandler.processConfigChanges).
func (q *ReplicationQuotas) Reconfigure(_, newCfg *config.Config) { q.apply(newCfg) }

// apply sets both bounds from the per-broker dynamic layer (Kafka reads only
// /config/brokers/<id>); without a dynamic config (tests) from cfg's properties.
func (q *ReplicationQuotas) apply(cfg *config.Config) {
	props := cfg.Props
	if q.dynamic != nil {
		_, _, props = q.dynamic.Layers()
	}
	for _, m := range []struct {
		key string
		q   *ReplicationQuotaManager
	}{{leaderThrottledRateKey, q.Leader}, {followerThrottledRateKey, q.Follower}} {
		rate := int64(math.MaxInt64)
		if v, ok := props[m.key]; ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < 0 {
				q.log.WithField("config", m.key).WithField("value", v).Warn("ignoring an invalid replication throttle rate")
			} else {
				rate = n
			}
		}
		if rate != m.q.UpperBound() {
			q.log.WithFields(logrus.Fields{"config": m.key, "bytes_per_second": rate}).Info("replication throttle rate updated")
		}
		m.q.UpdateQuota(rate)
	}
}

// shouldLeaderThrottle is ReplicaManager.shouldLeaderThrottle: a follower out of the ISR
// fetching a throttled partition while the leader quota is exceeded gets no records.
func (rm *ReplicaManager) shouldLeaderThrottle(p *Partition, replicaID int32) bool {
	q := rm.replicationQuotas.Leader
	if !q.IsThrottled(p.tp) {
		return false
	}
	p.mu.RLock()
	inSync := slices.Contains(p.mu.isr, replicaID)
	p.mu.RUnlock()
	return !inSync && q.IsQuotaExceeded()
}

// recordLeaderReplication is KafkaApis' leader-side recording after a follower fetch: the
// bytes sent for throttled partitions count against the leader quota, in sync or not.
func (rm *ReplicaManager) recordLeaderReplication(reqs []FetchPartitionRequest, results []FetchPartitionResult) {
	q := rm.replicationQuotas.Leader
	var n int64
	for i := range results {
		if results[i].Records.Size > 0 && q.IsThrottled(reqs[i].TP) {
			n += results[i].Records.Size
		}
	}
	q.Record(n)
}

// ReplicationQuotas are the broker's leader and follower replication quotas.
func (rm *ReplicaManager) ReplicationQuotas() *ReplicationQuotas { return rm.replicationQuotas }
