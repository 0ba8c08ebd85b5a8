package broker

// metrics_api.go — metrics the request handlers mark: kafka.server BrokerTopicMetrics, as
// Kafka's BrokerTopicStats keeps them (broker-wide and per topic). Kafka marks the produce
// meters in ReplicaManager.appendToLocalLog, the fetch meters in ReplicaManager.readFromLog
// and KafkaApis.handleFetchRequest (bytes out, when the response is built), the conversion
// meters in KafkaApis.updateRecordConversionStats, bytes rejected and the invalid-record
// meters in UnifiedLog. samsa marks them in the handlers (00_produce.go, 01_fetch.go,
// produce_legacy.go, fetch_downconvert.go), which see every partition's outcome.

import (
	"errors"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/metrics"
	"github.com/samsa-kafka/samsa/logstore"
)

// apiMetrics are the meters the handlers mark. A nil *apiMetrics (APIs built by hand in
// tests) marks nothing: every method is nil-safe.
type apiMetrics struct {
	messagesIn, bytesIn, bytesOut, bytesRejected        *metrics.TopicMeter
	failedProduce, failedFetch                          *metrics.TopicMeter
	totalProduce, totalFetch                            *metrics.TopicMeter
	produceConversions, fetchConversions                *metrics.TopicMeter
	replicationBytesOut, invalidCRC, invalidOffsetOrSeq prometheus.Counter

	// requests are kafka.network RequestMetrics and RequestChannel (metrics_request.go).
	requests *requestMetrics
}

// newAPIMetrics registers the handlers' metrics and, when the broker has quota managers,
// their sensors' rates.
func newAPIMetrics(reg *metrics.Registry, a *APIs) *apiMetrics {
	registerQuotaMetrics(reg, a.Quotas)
	tm := func(name, help string) *metrics.TopicMeter {
		return reg.TopicMeter("server", "BrokerTopicMetrics", name, help)
	}
	// Broker-wide only, as Kafka (BrokerTopicMetrics with no topic tag).
	wide := func(name, help string) prometheus.Counter {
		return reg.Meter("server", "BrokerTopicMetrics", name, help).WithLabelValues()
	}
	m := &apiMetrics{
		messagesIn:          tm("MessagesInPerSec", "Records appended to leader logs by produce requests"),
		bytesIn:             tm("BytesInPerSec", "Bytes of record batches appended to leader logs by produce requests"),
		bytesOut:            tm("BytesOutPerSec", "Record bytes sent to consumers in fetch responses"),
		bytesRejected:       tm("BytesRejectedPerSec", "Bytes of produced batches rejected as too large"),
		failedProduce:       tm("FailedProduceRequestsPerSec", "Partition appends that failed for an unexpected reason (not leader, unknown partition, too large and corrupt are not counted, as in Kafka)"),
		failedFetch:         tm("FailedFetchRequestsPerSec", "Partition reads that failed for an unexpected reason (not leader, unknown partition, fenced epoch, out of range are not counted, as in Kafka)"),
		totalProduce:        tm("TotalProduceRequestsPerSec", "Partition appends attempted by produce requests"),
		totalFetch:          tm("TotalFetchRequestsPerSec", "Partition reads by fetch requests (consumers and followers)"),
		produceConversions:  tm("ProduceMessageConversionsPerSec", "Records of Produce v0-v2 message sets up-converted to record batches"),
		fetchConversions:    tm("FetchMessageConversionsPerSec", "Records down-converted for Fetch v0-v3"),
		replicationBytesOut: wide("ReplicationBytesOutPerSec", "Record bytes sent to follower replicas in fetch responses"),
		invalidCRC:          wide("InvalidMessageCrcRecordsPerSec", "Produced batches rejected for a bad CRC"),
		invalidOffsetOrSeq:  wide("InvalidOffsetOrSequenceRecordsPerSec", "Produced batches rejected for invalid offsets or sequence numbers"),
		requests:            newRequestMetrics(reg),
	}
	if a.Replicas != nil { // the follower fetchers mark it (fetcher.go)
		a.Replicas.replicationBytesIn = wide("ReplicationBytesInPerSec", "Record bytes appended to follower replicas from their leaders' fetch responses")
	}
	return m
}

// markReplicationBytesIn marks n record bytes a follower fetched
// (BrokerTopicStats.updateReplicationBytesIn in ReplicaFetcherThread.processPartitionData).
func (rm *ReplicaManager) markReplicationBytesIn(n int) {
	if c := rm.replicationBytesIn; c != nil {
		c.Add(float64(n))
	}
}

// produceAppended marks one partition's successful local append (n records of size bytes).
func (m *apiMetrics) produceAppended(topic string, records int, size int) {
	if m == nil {
		return
	}
	m.totalProduce.Add(topic, 1)
	m.messagesIn.Add(topic, float64(records))
	m.bytesIn.Add(topic, float64(size))
}

// produceFailed marks one partition's append that failed with err (size bytes offered),
// sorting the error as appendToLocalLog and UnifiedLog do.
func (m *apiMetrics) produceFailed(topic string, size int, err error) {
	if m == nil {
		return
	}
	m.totalProduce.Add(topic, 1)
	switch ErrorCode(err) {
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code:
		m.bytesRejected.Add(topic, float64(size))
	case kerr.CorruptMessage.Code:
		if errors.Is(err, logstore.ErrCorruptMessage) && strings.Contains(err.Error(), "crc") {
			m.invalidCRC.Inc()
		}
	case kerr.InvalidRecord.Code:
		if msg := err.Error(); strings.Contains(msg, "offset") || strings.Contains(msg, "sequence") {
			m.invalidOffsetOrSeq.Inc()
		}
	}
	if !expectedProduceError(err) {
		m.failedProduce.Add(topic, 1)
	}
}

// expectedProduceError is appendToLocalLog's list of exceptions that are not failures of
// the broker (not counted in FailedProduceRequestsPerSec).
func expectedProduceError(err error) bool {
	switch ErrorCode(err) {
	case kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code, kerr.MessageTooLarge.Code,
		kerr.RecordListTooLarge.Code, kerr.CorruptMessage.Code, kerr.KafkaStorageError.Code:
		return true
	}
	return false
}

// fetchRead marks one partition read (ReplicaManager.readFromLog) with its error.
func (m *apiMetrics) fetchRead(topic string, err error) {
	if m == nil {
		return
	}
	m.totalFetch.Add(topic, 1)
	if err == nil {
		return
	}
	switch ErrorCode(err) {
	case kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code, kerr.UnknownLeaderEpoch.Code,
		kerr.FencedLeaderEpoch.Code, kerr.ReplicaNotAvailable.Code, kerr.KafkaStorageError.Code,
		kerr.InconsistentTopicID.Code, kerr.OffsetOutOfRange.Code:
		return
	}
	m.failedFetch.Add(topic, 1)
}

// fetchBytesOut marks record bytes sent for topic (BrokerTopicStats.updateBytesOut):
// per topic to consumers, broker-wide replication bytes to followers.
func (m *apiMetrics) fetchBytesOut(topic string, follower bool, n int64) {
	if m == nil || n <= 0 {
		return
	}
	if follower {
		m.replicationBytesOut.Add(float64(n))
		return
	}
	m.bytesOut.Add(topic, float64(n))
}

// produceConverted marks records up-converted for topic (Produce v0-v2).
func (m *apiMetrics) produceConverted(topic string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.produceConversions.Add(topic, float64(n))
}

// fetchConverted marks records down-converted for topic (Fetch v0-v3).
func (m *apiMetrics) fetchConverted(topic string, n int64) {
	if m == nil || n <= 0 {
		return
	}
	m.fetchConversions.Add(topic, float64(n))
}

// removeTopic drops a deleted topic's series (BrokerTopicStats.removeMetrics).
func (m *apiMetrics) removeTopic(topic string) {
	if m == nil {
		return
	}
	for _, t := range []*metrics.TopicMeter{m.messagesIn, m.bytesIn, m.bytesOut, m.bytesRejected, m.failedProduce,
		m.failedFetch, m.totalProduce, m.totalFetch, m.produceConversions, m.fetchConversions} {
		t.RemoveTopic(topic)
	}
}

// produceResult marks one partition's AppendRecords outcome: appended (an acks=-1 timeout
// after the append still counts as appended, as Kafka marks before waiting) or failed.
func (m *apiMetrics) produceResult(r ProduceResult, size int) {
	if m == nil {
		return
	}
	if r.Err == nil || r.Info.NumRecords > 0 {
		m.produceAppended(r.TP.Topic, r.Info.NumRecords, size)
		return
	}
	m.produceFailed(r.TP.Topic, size, r.Err)
}

// produceRejectedInternal marks an append to an internal topic refused to a client: in the
// total, not a failure (appendToLocalLog).
func (m *apiMetrics) produceRejectedInternal(topic string) {
	if m == nil {
		return
	}
	m.totalProduce.Add(topic, 1)
}

// fetchResults marks each partition read of a fetch (ReplicaManager.readFromLog).
func (m *apiMetrics) fetchResults(reqs []FetchPartitionRequest, results []FetchPartitionResult) {
	if m == nil {
		return
	}
	for i := range results {
		m.fetchRead(reqs[i].TP.Topic, results[i].Err)
	}
}

// fetchSent marks the record bytes of a fetch response about to be sent
// (KafkaApis.handleFetchRequest, BrokerTopicStats.updateBytesOut). Down-converted
// partitions count their bytes as read from the log.
func (m *apiMetrics) fetchSent(follower bool, reqs []FetchPartitionRequest, results []FetchPartitionResult) {
	if m == nil {
		return
	}
	for i := range results {
		if results[i].Err == nil {
			m.fetchBytesOut(reqs[i].TP.Topic, follower, int64(results[i].Records.Size))
		}
	}
}

// registerQuotaMetrics exports each client quota sensor as the JMX exporter names Kafka's
// kafka.server:type=Produce|Fetch|Request,user=<user>,client-id=<id> MBeans
// (kafka_server_quota_<attribute>{resource,user,clientId}): byte-rate for Produce and
// Fetch, request-time (percent of a thread) for Request, over the quota window. Sensors
// exist only once a quota of their type was set, as Kafka records only then; Kafka's
// per-client throttle-time average is not kept (QuotaManagers count throttles broker-wide).
func registerQuotaMetrics(reg *metrics.Registry, q *QuotaManagers) {
	if q == nil {
		return
	}
	labels := []string{"resource", "user", "clientId"}
	reg.GaugeSet("server", "quota", "byte_rate", "Bytes per second of a client's produce or fetch quota sensor (kafka.server:type=Produce|Fetch,user=,client-id= byte-rate)",
		labels, func(emit func(metrics.Sample)) {
			q.Produce.emitRates("Produce", emit)
			q.Fetch.emitRates("Fetch", emit)
		})
	reg.GaugeSet("server", "quota", "request_time", "Percent of a request thread a client used (kafka.server:type=Request,user=,client-id= request-time)",
		labels, func(emit func(metrics.Sample)) { q.Request.emitRates("Request", emit) })
}

// emitRates emits each sensor's current rate.
func (m *ClientQuotaManager) emitRates(resource string, emit func(metrics.Sample)) {
	if m == nil {
		return
	}
	now := time.Now().UnixMilli()
	type sample struct {
		tags QuotaTags
		s    *quotaSensor
	}
	m.mu.Lock()
	sensors := make([]sample, 0, len(m.sensors))
	for t, s := range m.sensors {
		sensors = append(sensors, sample{t, s})
	}
	m.mu.Unlock()
	for _, x := range sensors {
		x.s.mu.Lock()
		v := x.s.rate.measure(m.cfg, now)
		x.s.mu.Unlock()
		emit(metrics.Sample{LabelValues: []string{resource, x.tags.User, x.tags.ClientID}, Value: v})
	}
}

// partitionsStopped drops the per-topic series of each topic in resp of which rm hosts
// no partition any more (ReplicaManager.maybeRemoveTopicMetrics after StopReplica).
func (m *apiMetrics) partitionsStopped(rm *ReplicaManager, resp *kmsg.StopReplicaResponse) {
	if m == nil || len(resp.Partitions) == 0 {
		return
	}
	stopped := map[string]bool{}
	for _, p := range resp.Partitions {
		if p.ErrorCode == 0 {
			stopped[p.Topic] = true
		}
	}
	for _, p := range rm.Partitions() {
		delete(stopped, p.tp.Topic)
	}
	for t := range stopped {
		m.removeTopic(t)
	}
}
