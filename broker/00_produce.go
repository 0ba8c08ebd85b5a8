package broker

// 00_produce.go — Produce (key 0) v0-10, as KafkaApis.handleProduceRequest and
// ReplicaManager.appendRecords:
//   - acks must be -1, 0 or 1 (else INVALID_REQUIRED_ACKS for every partition).
//   - v3+: exactly one magic-2 batch per partition (INVALID_RECORD); zstd needs v7+
//     (UNSUPPORTED_COMPRESSION_TYPE). Batch validation (CRC, sizes, timestamps) is the log's.
//   - v0-v2: magic 0/1 message sets are validated and up-converted to one magic-2 batch
//     (produce_legacy.go, counted in APIs.Conversions); v1 adds throttle_time_ms, v2
//     log_append_time.
//   - Internal topics only accept the admin client id "__admin_client" (INVALID_TOPIC_EXCEPTION).
//   - acks=0 gets no response; if any partition failed the connection is closed instead,
//     so the client learns something went wrong.
//   - acks=-1 waits (DelayedProduce) for the high watermark, up to timeout_ms.
//   - v8+: ErrorMessage; v10: CurrentLeader and NodeEndpoints on NOT_LEADER_OR_FOLLOWER (KIP-951).
//   - Authorization (authz.go): WRITE on each topic (TOPIC_AUTHORIZATION_FAILED).
//   - Transactions: transactional records need the request's transactional_id and WRITE on
//     it (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition, as KafkaApis); with
//     transaction.partition.verification.enable (default true) the leader verifies a
//     producer's first transactional batch on a partition with the transaction coordinator
//     (KIP-890 part 1, txn_verification.go) and answers INVALID_TXN_STATE when it was not
//     added, NOT_ENOUGH_REPLICAS when the coordinator could not tell (retriable). Control
//     batches from clients are INVALID_RECORD.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

func init() { registerAPI(0, 10, (*APIs).handleProduce) }

// adminClientID is AdminUtils.ADMIN_CLIENT_ID: the only client allowed to produce to
// internal topics.
const adminClientID = "__admin_client"

var errConnCloseAcks0 = errors.New("broker: acks=0 produce failed; closing connection")

func (a *APIs) handleProduce(ctx context.Context, rc *RequestContext, req *kmsg.ProduceRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)

	// Allocations per request do not grow with the records in a batch, and only by a
	// little with the partitions: the record bytes stay in the connection's read buffer,
	// every topic's response partitions share one array, and the append lists of a small
	// request live on the stack (produce_alloc_test.go pins this).
	type slot struct{ ti, pi int } // position in resp
	n := 0
	for i := range req.Topics {
		n += len(req.Topics[i].Partitions)
	}
	const small = 8
	var (
		tpsBuf  [small]logstore.TopicPartition
		recBuf  [small][]byte
		slotBuf [small]slot
		tps     = tpsBuf[:0]
		records = recBuf[:0]
		slots   = slotBuf[:0]
	)
	if n > small {
		tps, records, slots = make([]logstore.TopicPartition, 0, n), make([][]byte, 0, n), make([]slot, 0, n)
	}
	resp.Topics = make([]kmsg.ProduceResponseTopic, 0, len(req.Topics))
	respParts := make([]kmsg.ProduceResponseTopicPartition, 0, n)
	// KafkaApis: transactional records need a transactional id and WRITE on it; without
	// them the whole request fails. Then each topic needs WRITE.
	var reqErr error
	if hasTransactionalRecords(req) {
		if req.TransactionID == nil {
			reqErr = fmt.Errorf("transactional records without a transactional id: %w", kerr.TransactionalIDAuthorizationFailed)
		} else if !a.authorize(rc, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, *req.TransactionID) {
			reqErr = errTxnIDAuthorization
		}
	}
	var conv legacyConversion // Produce v0-v2 up-conversions
	writable := a.filterAuthorized(rc, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, func(add func(string)) {
		for i := range req.Topics {
			add(req.Topics[i].Topic)
		}
	})
	for _, rt := range req.Topics {
		respTopic := kmsg.NewProduceResponseTopic()
		respTopic.Topic = rt.Topic
		ti := len(resp.Topics)
		first := len(respParts)
		for _, rp := range rt.Partitions {
			p := kmsg.NewProduceResponseTopicPartition()
			p.Partition = rp.Partition
			p.BaseOffset = -1
			pi := len(respParts) - first
			respParts = append(respParts, p)

			tp := logstore.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			var err error
			var batch []byte
			switch {
			case reqErr != nil:
				err = reqErr
			case !writable.has(rt.Topic):
				err = errTopicAuthorization
			case req.Acks != -1 && req.Acks != 0 && req.Acks != 1:
				err = fmt.Errorf("acks=%d: %w", req.Acks, ErrInvalidRequiredAcks)
			case isInternalTopicName(rt.Topic) && rc.ClientID != adminClientID:
				err = fmt.Errorf("cannot append to internal topic %s: %w", rt.Topic, ErrInvalidTopic)
				a.Metrics.produceRejectedInternal(rt.Topic) // BrokerTopicMetrics (metrics_api.go)
			case req.Version < 3:
				batch, err = a.legacyProduceRecords(tp, req.Acks, rp.Records, &conv)
				if err != nil && !errors.Is(err, errNoLegacyEntries) {
					a.Metrics.produceFailed(rt.Topic, len(rp.Records), err) // the log's checks, made here
				}
			default:
				batch, err = validateProduceRecords(req.Version, rp.Records)
			}
			if errors.Is(err, errNoLegacyEntries) {
				continue // nothing to append: NONE with base offset -1, as Kafka
			}
			if err != nil {
				setProduceError(&respParts[first+pi], req.Version, err)
				continue
			}
			tps = append(tps, tp)
			records = append(records, batch)
			slots = append(slots, slot{ti, pi})
		}
		respTopic.Partitions = respParts[first:len(respParts):len(respParts)]
		resp.Topics = append(resp.Topics, respTopic)
	}
	conv.record(&a.Conversions, requestTimingOf(ctx))

	if len(tps) > 0 {
		timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
		results := a.Replicas.AppendRecordsWith(ctx, timeout, req.Acks, tps, records, AppendParams{TransactionalID: req.TransactionID})
		for i, r := range results {
			p := &resp.Topics[slots[i].ti].Partitions[slots[i].pi]
			a.Metrics.produceResult(r, len(records[i])) // BrokerTopicMetrics (metrics_api.go)
			if r.Err != nil {
				setProduceError(p, req.Version, r.Err)
				continue
			}
			p.BaseOffset = r.Info.FirstOffset
			p.LogAppendTime = r.Info.LogAppendTime
			p.LogStartOffset = r.Info.LogStartOffset
		}
	}

	includeBrokers := false
	failed := 0
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			if p.ErrorCode == 0 {
				continue
			}
			failed++
			if p.ErrorCode == kerr.NotLeaderForPartition.Code && req.Version >= 10 {
				if pm, ok := a.Metadata.Partition(logstore.TopicPartition{Topic: t.Topic, Partition: p.Partition}); ok && pm.Leader >= 0 {
					p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = pm.Leader, pm.LeaderEpoch
					includeBrokers = true
				}
			}
		}
	}
	if failed > 0 {
		rc.Log.WithFields(logrus.Fields{"acks": req.Acks, "failed_partitions": failed}).Debug("produce had partition errors")
	}
	if includeBrokers {
		resp.Brokers = a.nodeEndpoints(rc.ListenerName, func(add func(int32)) {
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if p.CurrentLeader.LeaderID >= 0 {
						add(p.CurrentLeader.LeaderID)
					}
				}
			}
		})
	}
	// Client quotas (KafkaApis): the request's bytes count against the produce quota and,
	// unless acks=0, its time against the request quota; the longer throttle is answered
	// and the connection muted for it (KIP-219).
	if throttle := a.produceThrottleMs(ctx, rc, req); throttle > 0 {
		resp.ThrottleMillis = throttle
	}
	if req.Acks == 0 {
		if failed > 0 {
			return nil, errConnCloseAcks0
		}
		return nil, nil
	}
	return resp, nil
}

// produceThrottleMs records the produce (and, for acks != 0, the request) quota of req and
// mutes the connection for the longer throttle, which it returns.
func (a *APIs) produceThrottleMs(ctx context.Context, rc *RequestContext, req *kmsg.ProduceRequest) int32 {
	if a.Quotas == nil {
		return 0
	}
	var bandwidth, request int32
	if a.Quotas.Produce.Enabled() {
		size := rc.Size
		if size <= 0 { // not off a connection: count the record bytes
			for i := range req.Topics {
				for j := range req.Topics[i].Partitions {
					size += int32(len(req.Topics[i].Partitions[j].Records))
				}
			}
		}
		bandwidth = a.Quotas.Produce.RecordAndGetThrottleTimeMs(quotaUser(rc), rc.ClientID, float64(size), a.nowMs())
	}
	if req.Acks != 0 {
		request = a.requestQuotaThrottleMs(ctx, rc)
	} else if st, _ := ctx.Value(requestQuotaKey{}).(*requestQuotaState); st != nil {
		st.recorded = true // acks=0 is exempt from the request quota
	}
	if bandwidth > request {
		a.Quotas.Produce.throttle(rc, bandwidth)
		return bandwidth
	}
	a.Quotas.Request.throttle(rc, request)
	return request
}

// hasTransactionalRecords is RequestUtils.hasTransactionalRecords: some partition's first
// batch has the transactional flag (v3+ requests carry one batch per partition).
func hasTransactionalRecords(req *kmsg.ProduceRequest) bool {
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			r := req.Topics[i].Partitions[j].Records
			if len(r) >= batchAttrOffset+2 && r[batchMagicOffset] == 2 &&
				binary.BigEndian.Uint16(r[batchAttrOffset:])&batchAttrTransactional != 0 {
				return true
			}
		}
	}
	return false
}

func setProduceError(p *kmsg.ProduceResponseTopicPartition, version int16, err error) {
	p.ErrorCode = ErrorCode(err)
	p.BaseOffset, p.LogAppendTime, p.LogStartOffset = -1, -1, -1
	if version >= 8 {
		p.ErrorMessage = ErrorMessage(err)
		// Per-record errors (KIP-467), from the log's RecordValidationException.
		var rve *logstore.RecordValidationError
		if errors.As(err, &rve) {
			for _, r := range rve.Records {
				er := kmsg.NewProduceResponseTopicPartitionErrorRecord()
				er.RelativeOffset = r.BatchIndex
				msg := r.Message
				er.ErrorMessage = &msg
				p.ErrorRecords = append(p.ErrorRecords, er)
			}
		}
	}
}

// nodeEndpoints lists the brokers named by each(add) with their endpoint on listener
// (Produce v10 / Fetch v16 NodeEndpoints), each once.
func (a *APIs) nodeEndpoints(listener string, each func(add func(int32))) []kmsg.ProduceResponseBroker {
	var out []kmsg.ProduceResponseBroker
	seen := map[int32]bool{}
	each(func(id int32) {
		if seen[id] {
			return
		}
		seen[id] = true
		b, ok := a.Metadata.Broker(id)
		if !ok {
			return
		}
		ep, ok := b.Endpoint(listener)
		if !ok {
			return
		}
		nb := kmsg.NewProduceResponseBroker()
		nb.NodeID, nb.Host, nb.Port, nb.Rack = id, ep.Host, ep.Port, b.Rack
		out = append(out, nb)
	})
	return out
}

// Record batch header offsets (disk-layout.md §4).
const (
	batchLengthOffset      = 8
	batchMagicOffset       = 16
	batchAttrOffset        = 21
	batchAttrTransactional = 0x10
	batchLogOverhead       = 12 // baseOffset + batchLength
	batchHeaderToMagic     = 17
	minBatchLengthField    = 14 // LegacyRecord.RECORD_OVERHEAD_V0: smaller is corrupt
)

// validateProduceRecords is ProduceRequest.validateRecords for v3+: exactly one batch, magic
// 2, zstd only from v7. It returns the batch bytes (a trailing partial batch is dropped, as
// Kafka's batch iterator ignores it).
func validateProduceRecords(version int16, records []byte) ([]byte, error) {
	if len(records) < batchHeaderToMagic {
		return nil, fmt.Errorf("produce v%d must have at least one record batch per partition: %w", version, logstore.ErrInvalidRecord)
	}
	length := int32(binary.BigEndian.Uint32(records[batchLengthOffset:]))
	if length < minBatchLengthField {
		return nil, fmt.Errorf("record batch length %d is too small: %w", length, logstore.ErrCorruptMessage)
	}
	end := int64(batchLogOverhead) + int64(length)
	if int64(len(records)) < end {
		return nil, fmt.Errorf("produce v%d must have at least one record batch per partition: %w", version, logstore.ErrInvalidRecord)
	}
	if magic := records[batchMagicOffset]; magic != 2 {
		return nil, fmt.Errorf("produce v%d requires magic 2, got %d: %w", version, magic, logstore.ErrInvalidRecord)
	}
	if end >= batchAttrOffset+2 {
		if codec := binary.BigEndian.Uint16(records[batchAttrOffset:]) & 0x7; codec == 4 && version < 7 {
			return nil, fmt.Errorf("zstd needs produce v7+, got v%d: %w", version, ErrUnsupportedCompression)
		}
	}
	rest := records[end:]
	if len(rest) >= batchHeaderToMagic {
		l2 := int32(binary.BigEndian.Uint32(rest[batchLengthOffset:]))
		if l2 < minBatchLengthField {
			return nil, fmt.Errorf("record batch length %d is too small: %w", l2, logstore.ErrCorruptMessage)
		}
		if int64(len(rest)) >= int64(batchLogOverhead)+int64(l2) {
			return nil, fmt.Errorf("produce v%d allows exactly one record batch per partition: %w", version, logstore.ErrInvalidRecord)
		}
	}
	return records[:end], nil
}
