package broker

// 01_fetch.go — Fetch (key 1) v4-16, as KafkaApis.handleFetchRequest and
// ReplicaManager.fetchMessages:
//   - Consumers (replica id -1) read up to the high watermark; read_committed
//     (isolation_level 1) up to the last stable offset, with the aborted transactions of
//     the data returned (from the .txnindex files) so the consumer can drop their records;
//     LastStableOffset is always the LSO. Followers
//     (replica id >= 0; v15+ from ReplicaState) read up to the log end offset and report
//     their fetch offset.
//   - max_wait_ms and min_bytes are honoured through purgatory.go (no polling); max_bytes
//     and partition_max_bytes limit the response, except that the first batch of the first
//     non-empty partition is always returned (KIP-74).
//   - Fetch sessions (KIP-227, v7+): fetch_session.go (full/incremental contexts, the
//     session cache sized by max.incremental.fetch.session.cache.slots).
//   - v12+ LastFetchedEpoch: a fetcher whose last fetched epoch diverges from the log gets
//     DivergingEpoch and no records (KIP-595 truncate-on-fetch, used by followers).
//   - v13+ topics by id (UNKNOWN_TOPIC_ID; INCONSISTENT_TOPIC_ID when the id differs from
//     the hosted partition's, fetch_session.go); v16 CurrentLeader and NodeEndpoints on
//     NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH (KIP-951).
//   - v11+ rack_id (KIP-392, replica_selector.go): a follower serves consumers up to its high
//     watermark; the leader's replica.selector.class may answer preferred_read_replica.
//   - Authorization (authz.go): followers need CLUSTER_ACTION, consumers READ on each topic;
//     otherwise TOPIC_AUTHORIZATION_FAILED for the partition.
//   - v0-v3 (fetch_downconvert.go): records down-converted to magic 0 (v0-v1) or 1 (v2-v3),
//     lazily; v0-v2 have no KIP-74 (a batch over the limit comes back cut). Below v10, zstd
//     topics answer UNSUPPORTED_COMPRESSION_TYPE.
// On plain TCP the record bytes go to the socket with sendfile (zerocopy.go); elsewhere
// (direct Handle calls, TLS later) they are pread into the response.

import (
	"context"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

func init() { registerAPI(0, 16, (*APIs).handleFetch) }

func (a *APIs) handleFetch(ctx context.Context, rc *RequestContext, req *kmsg.FetchRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.SessionID = 0

	replicaID, replicaEpoch := req.ReplicaID, int64(-1)
	if req.Version >= 15 {
		replicaID, replicaEpoch = req.ReplicaState.ID, req.ReplicaState.Epoch
	}
	// Fetch sessions (fetch_session.go): an incremental fetch reads every partition of its
	// session and answers only those that changed.
	fctx := a.fetchSessions().newFetchContext(req, replicaID >= 0, a.nowMs())
	if fctx.errCode != 0 {
		resp.ErrorCode = fctx.errCode
		return resp, nil
	}
	params := FetchParams{
		ReplicaID:         replicaID,
		ReplicaEpoch:      replicaEpoch,
		MaxWait:           time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond,
		MinBytes:          req.MinBytes,
		MaxBytes:          min(req.MaxBytes, a.fetchMaxBytes()),
		IsolationLevel:    req.IsolationLevel,
		HardMaxBytesLimit: req.Version <= 2, // FetchParams.hardMaxBytesLimit
	}
	if req.Version >= 11 { // KIP-392: followers may serve this consumer (replica_selector.go)
		params.Client = &ClientMetadata{RackID: req.Rack, ClientID: rc.ClientID, ClientAddr: rc.RemoteAddr, ListenerName: rc.ListenerName}
	}
	if replicaID >= 0 {
		params.IsolationLevel = 0
	} else if a.Quotas != nil && a.Quotas.Fetch.Enabled() {
		// KafkaApis: a consumer never gets more than its quota allows in one window, so a
		// single response cannot be throttled for certain (getMaxValueInQuotaWindow).
		if m := a.Quotas.Fetch.MaxValueInQuotaWindow(quotaUser(rc), rc.ClientID); m < float64(params.MaxBytes) {
			params.MaxBytes = int32(max(m, 0))
		}
		params.MinBytes = min(params.MinBytes, params.MaxBytes)
	}

	// KafkaApis: a follower needs CLUSTER_ACTION for everything it fetches; a consumer
	// needs READ on each topic (an unknown topic id is answered UNKNOWN_TOPIC_ID first).
	followerAllowed := replicaID < 0 || a.authorizeCluster(rc, kmsg.ACLOperationClusterAction)
	readable := authzSet{}
	if replicaID < 0 {
		readable = a.filterAuthorized(rc, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, func(add func(string)) {
			for _, rt := range fctx.topics {
				if req.Version < 13 {
					add(rt.Topic)
				} else if name, ok := a.Metadata.TopicName(rt.TopicID); ok {
					add(name)
				}
			}
		})
	}

	type slot struct{ ti, pi int }
	var (
		reqs  []FetchPartitionRequest
		slots []slot
	)
	for _, rt := range fctx.topics {
		topic := rt.Topic
		known := true
		if req.Version >= 13 {
			topic, known = a.Metadata.TopicName(rt.TopicID)
		}
		respTopic := kmsg.NewFetchResponseTopic()
		respTopic.Topic, respTopic.TopicID = topic, rt.TopicID
		ti := len(resp.Topics)
		for _, rp := range rt.Partitions {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = rp.Partition
			// Kafka sends empty (never null) records for every partition, errors included;
			// librdkafka rejects a null MessageSet.
			p.RecordBatches = []byte{}
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = -1, -1, -1
			if !known {
				p.ErrorCode = kerr.UnknownTopicID.Code
				if !followerAllowed { // KafkaApis denies an unauthorized follower before resolving ids
					p.ErrorCode = kerr.TopicAuthorizationFailed.Code
				}
				respTopic.Partitions = append(respTopic.Partitions, p)
				continue
			}
			if !followerAllowed || !readable.has(topic) {
				p.ErrorCode = kerr.TopicAuthorizationFailed.Code
				respTopic.Partitions = append(respTopic.Partitions, p)
				continue
			}
			if req.Version >= 13 && a.inconsistentTopicID(logstore.TopicPartition{Topic: topic, Partition: rp.Partition}, rt.TopicID) {
				p.ErrorCode = kerr.InconsistentTopicID.Code
				respTopic.Partitions = append(respTopic.Partitions, p)
				continue
			}
			slots = append(slots, slot{ti, len(respTopic.Partitions)})
			respTopic.Partitions = append(respTopic.Partitions, p)
			reqs = append(reqs, FetchPartitionRequest{
				TP:                 logstore.TopicPartition{Topic: topic, Partition: rp.Partition},
				FetchOffset:        rp.FetchOffset,
				LogStartOffset:     rp.LogStartOffset,
				MaxBytes:           rp.PartitionMaxBytes,
				CurrentLeaderEpoch: rp.CurrentLeaderEpoch,
				LastFetchedEpoch:   lastFetchedEpoch(req.Version, rp.LastFetchedEpoch),
			})
		}
		resp.Topics = append(resp.Topics, respTopic)
	}

	results := a.Replicas.FetchMessages(ctx, params, reqs)
	a.Metrics.fetchResults(reqs, results) // BrokerTopicMetrics (metrics_api.go)
	if replicaID < 0 && a.Quotas != nil {
		if throttle := a.fetchThrottleMs(ctx, rc, results); throttle > 0 {
			// Over quota: an empty answer with the throttle time (getThrottledResponse); the
			// records read are not sent and were taken back from the quota.
			return fctx.throttledResponse(resp, throttle), nil
		}
	}
	a.Metrics.fetchSent(replicaID >= 0, reqs, results) // bytes out, once not throttled
	includeBrokers := false
	var legacy *legacyFetch // v0-v3 down-conversion (fetch_downconvert.go)
	for i, r := range results {
		p := &resp.Topics[slots[i].ti].Partitions[slots[i].pi]
		if a.fetchConvertPartition(rc, req.Version, replicaID, &legacy, reqs[i], r, slots[i].ti, slots[i].pi, p) {
			continue
		}
		if r.Err != nil {
			p.ErrorCode = fetchErrorCode(req.Version, r.Err)
			if req.Version >= 16 && (p.ErrorCode == kerr.NotLeaderForPartition.Code || p.ErrorCode == kerr.FencedLeaderEpoch.Code) {
				if pm, ok := a.Metadata.Partition(reqs[i].TP); ok && pm.Leader >= 0 {
					p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = pm.Leader, pm.LeaderEpoch
					includeBrokers = true
				}
			}
			continue
		}
		p.HighWatermark, p.LastStableOffset, p.LogStartOffset = r.HighWatermark, r.LastStableOffset, r.LogStartOffset
		if r.Diverging {
			p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = r.DivergingEpoch, r.DivergingEndOffset
		}
		if r.HasPreferred {
			p.PreferredReadReplica = r.PreferredReadReplica
		}
		if params.IsolationLevel == 1 && !r.HasPreferred { // Kafka reads nothing, sends null
			// Set before the records are parked for sendfile: both paths encode it.
			p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{} // empty, not null
			if len(r.AbortedTransactions) > 0 {
				p.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, 0, len(r.AbortedTransactions))
			}
			for _, at := range r.AbortedTransactions {
				a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
				a.ProducerID, a.FirstOffset = at.ProducerID, at.FirstOffset
				p.AbortedTransactions = append(p.AbortedTransactions, a)
			}
		}
		if r.Records.Size > 0 && rc.zeroCopy != nil { // plain TCP: sent with sendfile (zerocopy.go)
			rc.zeroCopy.add(slots[i].ti, slots[i].pi, r.Records)
			continue
		}
		if r.Records.Size > 0 {
			b, err := r.Records.Bytes()
			if err != nil {
				// The segment went away under the read (retention, truncation): an empty
				// answer makes the client fetch again and find out what moved.
				rc.Log.WithError(err).WithField("topic", reqs[i].TP.Topic).Debug("fetch read failed")
				continue
			}
			p.RecordBatches = b
		}
	}
	if replicaID >= 0 {
		// A follower's bytes of throttled partitions count against the leader replication
		// quota (replication_quota.go).
		a.Replicas.recordLeaderReplication(reqs, results)
	}
	if includeBrokers {
		for _, b := range a.nodeEndpoints(rc.ListenerName, func(add func(int32)) {
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if p.CurrentLeader.LeaderID >= 0 {
						add(p.CurrentLeader.LeaderID)
					}
				}
			}
		}) {
			fb := kmsg.NewFetchResponseBroker()
			fb.NodeID, fb.Host, fb.Port, fb.Rack = b.NodeID, b.Host, b.Port, b.Rack
			resp.Brokers = append(resp.Brokers, fb)
		}
	}
	fctx.finish(resp, rc.zeroCopy, a.nowMs())
	if legacy != nil {
		legacy.timing = requestTimingOf(ctx)
	}
	return legacy.response(resp), nil
}

// lastFetchedEpoch is the partition's LastFetchedEpoch from v12 on, else -1 (not sent).
func lastFetchedEpoch(version int16, epoch int32) int32 {
	if version < 12 {
		return -1
	}
	return epoch
}

// defaultFetchMaxBytes is fetch.max.bytes (55 MiB), the broker's cap on a consumer fetch
// response; followers ask for replica.fetch.response.max.bytes (10 MiB) themselves (fetcher.go).
const defaultFetchMaxBytes = 55 << 20

func (a *APIs) fetchMaxBytes() int32 {
	if a.Config != nil {
		if v, ok := a.Config.Props["fetch.max.bytes"]; ok {
			if n, err := strconv.ParseInt(v, 10, 32); err == nil && n > 0 {
				return int32(n)
			}
		}
	}
	return defaultFetchMaxBytes
}

// fetchThrottleMs records a consumer fetch's response bytes against the fetch quota and its
// time against the request quota (KafkaApis.handleFetchRequest); when either is violated
// the bytes are taken back and the connection muted for the longer throttle, returned.
func (a *APIs) fetchThrottleMs(ctx context.Context, rc *RequestContext, results []FetchPartitionResult) int32 {
	var size int64
	for i := range results {
		if results[i].Err == nil {
			size += int64(results[i].Records.Size)
		}
	}
	now := a.nowMs()
	user := quotaUser(rc)
	request := a.requestQuotaThrottleMs(ctx, rc)
	bandwidth := a.Quotas.Fetch.RecordAndGetThrottleTimeMs(user, rc.ClientID, float64(size), now)
	if bandwidth <= 0 && request <= 0 {
		return 0
	}
	a.Quotas.Fetch.Unrecord(user, rc.ClientID, float64(size), now)
	if bandwidth > request {
		a.Quotas.Fetch.throttle(rc, bandwidth)
		return bandwidth
	}
	a.Quotas.Request.throttle(rc, request)
	return request
}
