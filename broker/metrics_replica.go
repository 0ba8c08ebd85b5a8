package broker

// metrics_replica.go — the replica and log metrics: kafka.server ReplicaManager (partition,
// leader and ISR health gauges, ISR change meters, ProducerIdCount), kafka.cluster Partition
// (per partition), ReplicaFetcherManager (MaxLag, MinFetchRate), DelayedOperationPurgatory
// (waiting produces, fetches and DeleteRecords), kafka.log Log (per partition), LogManager
// (offline dirs), LogFlushStats, LogCleaner / LogCleanerManager, and KafkaServer BrokerState.
// Gauges read the components' state at scrape time, as Kafka's Gauge.value does; only the
// ISR meters, the fetchers' request rate and the flush timer are marked as things happen.

import (
	"context"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/samsa-kafka/samsa/internal/metrics"
	"github.com/samsa-kafka/samsa/logstore"
)

// registerReplicaMetrics registers this piece's metrics (called from registerMetrics).
func (b *Broker) registerReplicaMetrics(reg *metrics.Registry) {
	if b.replicas != nil {
		b.replicas.registerMetrics(reg)
	}
	if b.logs != nil {
		registerLogMetrics(reg, b.logs)
		registerCleanerMetrics(reg, b.logs)
	}
	flush := reg.Histogram("log", "LogFlushStats", "LogFlushRateAndTimeMs",
		"Segment flush time in ms (fsync of the .log and its indexes), every broker of the process")
	flush.Declare()
	stop := logstore.ObserveSegmentFlushes(func(d time.Duration) { flush.Observe(float64(d) / float64(time.Millisecond)) })
	if b.runCtx != nil {
		context.AfterFunc(b.runCtx, stop) // Shutdown cancels runCtx
	}
	reg.GaugeFunc("server", "KafkaServer", "BrokerState",
		"Broker state: 1 starting, 3 running, 7 shutting down (Kafka's BrokerState ids)", b.brokerStateValue)
}

// brokerStateValue is Kafka's BrokerState id: STARTING (1) until Start returned, RUNNING (3),
// SHUTTING_DOWN (7) once Shutdown began. Metrics are registered after log recovery, so
// RECOVERY (2) is never seen; PENDING_CONTROLLED_SHUTDOWN (6) is reported as 7.
func (b *Broker) brokerStateValue() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.mu.stopping != nil:
		return 7
	case b.mu.starting == nil:
		return 1
	}
	select {
	case <-b.mu.starting:
		return 3
	default:
		return 1
	}
}

// isrMeters are ReplicaManager's isrExpandRate, isrShrinkRate and failedIsrUpdatesRate,
// which Partition marks through its AlterPartitionListener.
type isrMeters struct {
	expands, shrinks, failed prometheus.Counter
}

// markISRResult marks the meters for one AlterPartition outcome (Partition's
// handleAlterPartitionUpdate / handleAlterPartitionError): a committed proposal marks an
// expand or a shrink, anything else a failed update. Nil-safe (no metrics registered).
func (h *partitionHooks) markISRResult(committed, expand bool) {
	m := h.isrMeters.Load()
	switch {
	case m == nil:
	case !committed:
		m.failed.Inc()
	case expand:
		m.expands.Inc()
	default:
		m.shrinks.Inc()
	}
}

// partitionHealth is what the ReplicaManager gauges count for one hosted partition.
type partitionHealth struct {
	leader, underReplicated, underMinISR, atMinISR, reassigning bool
	isr, replicationFactor                                      int // 0 when not leader
}

// health evaluates Partition.isUnderReplicated, isUnderMinIsr, isAtMinIsr and isReassigning
// (Kafka 3.7): under-replicated when leader and the ISR is smaller than the replication
// factor (replicas minus those being added by a reassignment).
func (p *Partition) health() partitionHealth {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var h partitionHealth
	if p.mu.leaderID != p.localBrokerID {
		return h
	}
	h.leader = true
	h.reassigning = len(p.mu.adding) > 0 || len(p.mu.removing) > 0
	h.isr, h.replicationFactor = len(p.mu.isr), len(p.mu.replicas)-len(p.mu.adding)
	h.underReplicated = h.replicationFactor-h.isr > 0
	if p.mu.log != nil {
		minISR := p.effectiveMinISRLocked()
		h.underMinISR = len(p.mu.isr) < minISR
		h.atMinISR = len(p.mu.isr) == minISR
	}
	return h
}

// replicaCounts are the ReplicaManager gauges' values at one moment.
type replicaCounts struct {
	partitions, leaders, offline, underReplicated, underMinISR, atMinISR, reassigning int
}

// counts walks the hosted partitions once. A partition whose log dir is offline counts as
// offline only (Kafka's HostedPartition.Offline is in no online or leader iterator).
func (rm *ReplicaManager) counts() replicaCounts {
	var c replicaCounts
	for _, p := range rm.Partitions() {
		c.partitions++
		if rm.cfg.Logs != nil && rm.cfg.Logs.LogDirOffline(p.tp) {
			c.offline++
			continue
		}
		h := p.health()
		if !h.leader {
			continue
		}
		c.leaders++
		c.underReplicated += b2i(h.underReplicated)
		c.underMinISR += b2i(h.underMinISR)
		c.atMinISR += b2i(h.atMinISR)
		c.reassigning += b2i(h.reassigning)
	}
	return c
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// registerMetrics registers kafka.server ReplicaManager, ReplicaFetcherManager and
// DelayedOperationPurgatory metrics for this ReplicaManager.
func (rm *ReplicaManager) registerMetrics(reg *metrics.Registry) {
	gauge := func(name, help string, pick func(replicaCounts) int) {
		reg.GaugeFunc("server", "ReplicaManager", name, help, func() float64 { return float64(pick(rm.counts())) })
	}
	gauge("PartitionCount", "Partitions hosted by this broker", func(c replicaCounts) int { return c.partitions })
	gauge("LeaderCount", "Partitions this broker leads", func(c replicaCounts) int { return c.leaders })
	gauge("OfflineReplicaCount", "Hosted partitions whose log dir is offline", func(c replicaCounts) int { return c.offline })
	gauge("UnderReplicatedPartitions", "Led partitions whose ISR is smaller than the replication factor",
		func(c replicaCounts) int { return c.underReplicated })
	gauge("UnderMinIsrPartitionCount", "Led partitions whose ISR is below min.insync.replicas (capped at the replication factor)",
		func(c replicaCounts) int { return c.underMinISR })
	gauge("AtMinIsrPartitionCount", "Led partitions whose ISR is exactly min.insync.replicas (capped at the replication factor)",
		func(c replicaCounts) int { return c.atMinISR })
	gauge("ReassigningPartitions", "Led partitions with a reassignment in progress (adding or removing replicas)",
		func(c replicaCounts) int { return c.reassigning })

	reg.GaugeFunc("server", "ReplicaManager", "ProducerIdCount", "Producer ids in the producer state of the online hosted partitions",
		rm.producerIDCount)
	rm.registerPartitionMetrics(reg)

	m := &isrMeters{
		expands: reg.Meter("server", "ReplicaManager", "IsrExpandsPerSec", "ISR expansions committed by the controller").WithLabelValues(),
		shrinks: reg.Meter("server", "ReplicaManager", "IsrShrinksPerSec", "ISR shrinks committed by the controller").WithLabelValues(),
		failed: reg.Meter("server", "ReplicaManager", "FailedIsrUpdatesPerSec",
			"AlterPartition proposals refused or answered for another epoch").WithLabelValues(),
	}
	rm.partHooks.isrMeters.Store(m)

	// The exporter's rule for a Value with one key makes clientId a label.
	reg.GaugeSet("server", "ReplicaFetcherManager", "MaxLag",
		"Largest lag (leader high watermark minus fetch offset) over the partitions this broker follows",
		[]string{"clientId"}, func(emit func(metrics.Sample)) {
			emit(metrics.Sample{LabelValues: []string{"Replica"}, Value: float64(rm.fetchers.maxLag())})
		})

	reg.GaugeSet("server", "ReplicaFetcherManager", "MinFetchRate",
		"Lowest one-minute rate of fetch requests over this broker's replica fetchers (0 with none)",
		[]string{"clientId"}, func(emit func(metrics.Sample)) {
			emit(metrics.Sample{LabelValues: []string{"Replica"}, Value: rm.fetchers.minFetchRate(time.Now())})
		})

	purgatory := func(name, help string, pick func(purgatoryCount) int) {
		reg.GaugeSet("server", "DelayedOperationPurgatory", name, help, []string{"delayedOperation"},
			func(emit func(metrics.Sample)) {
				counts := rm.purgatoryCounts()
				for op := delayedProduce; op < numDelayedOps; op++ {
					emit(metrics.Sample{LabelValues: []string{op.String()}, Value: float64(pick(counts[op]))})
				}
			})
	}
	purgatory("PurgatorySize", "Partition watches of waiting requests (a request waits on each of its partitions)",
		func(c purgatoryCount) int { return c.watches })
	purgatory("NumDelayedOperations", "Requests waiting (acks=all produces, fetches below min.bytes, DeleteRecords)",
		func(c purgatoryCount) int { return c.ops })
}

// registerPartitionMetrics registers kafka.cluster Partition's per-partition gauges (labels
// topic and partition) for every hosted partition; as in Kafka, all but LastStableOffsetLag
// are 0 where this broker is not the leader.
func (rm *ReplicaManager) registerPartitionMetrics(reg *metrics.Registry) {
	perPartition := func(name, help string, value func(p *Partition, h partitionHealth) float64) {
		reg.GaugeSet("cluster", "Partition", name, help, []string{"topic", "partition"}, func(emit func(metrics.Sample)) {
			for _, p := range rm.Partitions() {
				emit(metrics.Sample{LabelValues: []string{p.tp.Topic, strconv.Itoa(int(p.tp.Partition))}, Value: value(p, p.health())})
			}
		})
	}
	perPartition("UnderReplicated", "1 if this broker leads the partition and its ISR is smaller than the replication factor",
		func(_ *Partition, h partitionHealth) float64 { return float64(b2i(h.underReplicated)) })
	perPartition("UnderMinIsr", "1 if this broker leads the partition and its ISR is below min.insync.replicas",
		func(_ *Partition, h partitionHealth) float64 { return float64(b2i(h.underMinISR)) })
	perPartition("AtMinIsr", "1 if this broker leads the partition and its ISR is exactly min.insync.replicas",
		func(_ *Partition, h partitionHealth) float64 { return float64(b2i(h.atMinISR)) })
	perPartition("InSyncReplicasCount", "ISR size where this broker leads, else 0",
		func(p *Partition, h partitionHealth) float64 { return float64(h.isr) })
	perPartition("ReplicasCount", "Replication factor where this broker leads, else 0",
		func(p *Partition, h partitionHealth) float64 { return float64(h.replicationFactor) })
	perPartition("LastStableOffsetLag", "High watermark minus last stable offset (records held back by open transactions)",
		func(p *Partition, _ partitionHealth) float64 {
			if l := p.Log(); l != nil {
				return float64(max(0, l.HighWatermark()-l.LastStableOffset()))
			}
			return 0
		})
}

// producerIDCount is ReplicaManager.producerIdCount: the sum over online partitions.
func (rm *ReplicaManager) producerIDCount() float64 {
	n := 0
	for _, p := range rm.Partitions() {
		if l := p.Log(); l != nil && (rm.cfg.Logs == nil || !rm.cfg.Logs.LogDirOffline(p.tp)) {
			n += l.ProducerIDCount()
		}
	}
	return float64(n)
}

// fetchers snapshots the running fetchers.
func (m *ReplicaFetcherManager) snapshot() []*replicaFetcher {
	m.mu.Lock()
	defer m.mu.Unlock()
	fs := make([]*replicaFetcher, 0, len(m.fetchers))
	for _, f := range m.fetchers {
		fs = append(fs, f)
	}
	return fs
}

// minFetchRate is AbstractFetcherManager's MinFetchRate: the lowest one-minute request
// rate over the fetchers, 0 when there is none.
func (m *ReplicaFetcherManager) minFetchRate(now time.Time) float64 {
	rate := -1.0
	for _, f := range m.snapshot() {
		if r := f.requestRate.oneMinute(now); rate < 0 || r < rate {
			rate = r
		}
	}
	return max(rate, 0)
}

// ewmaRate is a Yammer Meter's one-minute rate: an exponentially weighted moving average
// of the events per second, ticked every 5 s (lazily, on mark and read).
type ewmaRate struct {
	mu        sync.Mutex
	rate      float64
	ready     bool // the first tick sets rate outright
	uncounted int64
	lastTick  time.Time
}

const ewmaTick = 5 * time.Second

var ewmaAlpha1m = 1 - math.Exp(-5.0/60)

func (e *ewmaRate) mark(now time.Time) {
	e.mu.Lock()
	e.tickLocked(now)
	e.uncounted++
	e.mu.Unlock()
}

func (e *ewmaRate) oneMinute(now time.Time) float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.tickLocked(now)
	return e.rate
}

func (e *ewmaRate) tickLocked(now time.Time) {
	if e.lastTick.IsZero() {
		e.lastTick = now
		return
	}
	ticks := int(now.Sub(e.lastTick) / ewmaTick)
	if ticks > 1000 { // idle for over an hour: the average has decayed to nothing
		e.rate, e.uncounted, e.lastTick = 0, 0, e.lastTick.Add(time.Duration(ticks)*ewmaTick)
		return
	}
	for range ticks {
		instant := float64(e.uncounted) / ewmaTick.Seconds()
		e.uncounted = 0
		if e.ready {
			e.rate += ewmaAlpha1m * (instant - e.rate)
		} else {
			e.rate, e.ready = instant, true
		}
		e.lastTick = e.lastTick.Add(ewmaTick)
	}
}

// maxLag is AbstractFetcherManager's MaxLag: the largest known PartitionFetchState lag over
// every fetcher's partitions.
func (m *ReplicaFetcherManager) maxLag() int64 {
	var lag int64
	for _, f := range m.snapshot() {
		f.mu.Lock()
		for _, st := range f.partitions {
			if st.lagKnown {
				lag = max(lag, st.lag)
			}
		}
		f.mu.Unlock()
	}
	return lag
}

// delayedOp names the purgatory a waiter belongs to (Kafka's purgatory names).
type delayedOp uint8

const (
	delayedNone delayedOp = iota // not counted
	delayedProduce
	delayedFetch
	delayedDeleteRecords
	numDelayedOps
)

func (o delayedOp) String() string {
	switch o {
	case delayedProduce:
		return "Produce"
	case delayedFetch:
		return "Fetch"
	case delayedDeleteRecords:
		return "DeleteRecords"
	}
	return "none"
}

type purgatoryCount struct{ watches, ops int }

// purgatoryCounts counts the waiters on the hosted partitions by purgatory: Kafka's
// PurgatorySize counts watch entries (one per key an operation watches),
// NumDelayedOperations the operations.
func (rm *ReplicaManager) purgatoryCounts() [numDelayedOps]purgatoryCount {
	var out [numDelayedOps]purgatoryCount
	seen := map[*waiter]struct{}{}
	for _, p := range rm.Partitions() {
		p.watchMu.Lock()
		for w := range p.watchers {
			out[w.op].watches++
			if _, ok := seen[w]; !ok {
				seen[w] = struct{}{}
				out[w.op].ops++
			}
		}
		p.watchMu.Unlock()
	}
	return out
}

// logLister is the part of logstore.Manager the log metrics read.
type logLister interface {
	AllLogs() []*logstore.Log
	OfflineDirs() []string
}

// registerLogMetrics registers kafka.log Log (per partition; labels topic and partition, the
// exporter's two-key rule) and LogManager OfflineLogDirectoryCount. Future logs (a replica
// moving between dirs) are left out: Kafka tags them is-future, which the exporter's rules do
// not map.
func registerLogMetrics(reg *metrics.Registry, logs logLister) {
	perLog := func(name, help string, value func(l *logstore.Log) float64) {
		reg.GaugeSet("log", "Log", name, help, []string{"topic", "partition"}, func(emit func(metrics.Sample)) {
			for _, l := range logs.AllLogs() {
				tp := l.TopicPartition()
				emit(metrics.Sample{LabelValues: []string{tp.Topic, strconv.Itoa(int(tp.Partition))}, Value: value(l)})
			}
		})
	}
	perLog("LogEndOffset", "Offset of the next record appended to the partition's log",
		func(l *logstore.Log) float64 { return float64(l.LogEndOffset()) })
	perLog("LogStartOffset", "First offset kept in the partition's log",
		func(l *logstore.Log) float64 { return float64(l.LogStartOffset()) })
	perLog("Size", "Bytes in the partition's log segments", func(l *logstore.Log) float64 { return float64(l.Size()) })
	perLog("NumLogSegments", "Segments in the partition's log",
		func(l *logstore.Log) float64 { return float64(l.NumberOfSegments()) })
	reg.GaugeFunc("log", "LogManager", "OfflineLogDirectoryCount", "Log dirs taken offline after an I/O error",
		func() float64 { return float64(len(logs.OfflineDirs())) })
}

// registerCleanerMetrics registers kafka.log LogCleaner and LogCleanerManager gauges (the
// exporter turns the MBeans' hyphens into underscores). Kafka reports the maximum over its
// cleaner threads' last passes; samsa reports the last pass of any thread.
func registerCleanerMetrics(reg *metrics.Registry, logs *logstore.Manager) {
	pct := func(name, help string, value func(c logstore.CleanerMetrics) float64) {
		reg.GaugeFunc("log", "LogCleaner", name, help, func() float64 { return math.Floor(value(logs.CleanerMetrics())) })
	}
	pct("max_buffer_utilization_percent", "Offset map fill of the last cleaning pass, percent",
		func(c logstore.CleanerMetrics) float64 { return 100 * c.BufferUtilization })
	pct("cleaner_recopy_percent", "Bytes written over bytes read by the last cleaning pass, percent",
		func(c logstore.CleanerMetrics) float64 { return 100 * c.RecopyRatio })
	pct("max_clean_time_secs", "Duration of the last cleaning pass, seconds",
		func(c logstore.CleanerMetrics) float64 { return c.LastCleanTime.Seconds() })
	reg.GaugeFunc("log", "LogCleanerManager", "max_dirty_percent",
		"Highest dirty ratio over the compacted logs at the last selection, percent (kafka.log:type=LogCleanerManager,name=max-dirty-percent)",
		func() float64 { return math.Floor(100 * logs.CleanerMetrics().MaxDirtyRatio) })
	reg.GaugeSet("log", "LogCleanerManager", "uncleanable_partitions_count",
		"Partitions whose last cleaning pass failed, per log dir (samsa retries them; Kafka stops cleaning them)",
		[]string{"logDirectory"}, func(emit func(metrics.Sample)) {
			for dir, n := range logs.CleanerMetrics().Uncleanable {
				emit(metrics.Sample{LabelValues: []string{dir}, Value: float64(n)})
			}
		})
}
