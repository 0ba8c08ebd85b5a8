package broker

// 27_write_txn_markers.go — WriteTxnMarkers (key 27) v0-1, as KafkaApis.handleWriteTxnMarkersRequest:
// the transaction coordinator (or an admin's abortTransaction) asks the leaders of a
// transaction's partitions to close it with a COMMIT or ABORT control batch.
//   - Per marker and partition: a partition without a local log here is
//     UNKNOWN_TOPIC_OR_PARTITION (Kafka's getMagic finds no log); otherwise the marker is
//     appended as leader with origin COORDINATOR and acks=-1 (NOT_LEADER_OR_FOLLOWER on a
//     follower, NOT_ENOUGH_REPLICAS below min.insync.replicas), and the answer waits for the
//     high watermark to pass it, up to request.timeout.ms (REQUEST_TIMED_OUT).
//   - The log fences stale writers: a producer epoch older than the partition's is
//     INVALID_PRODUCER_EPOCH, a coordinator epoch older than the last marker's is
//     TRANSACTION_COORDINATOR_FENCED.
//   - Markers of all entries are appended first and waited for together, as Kafka's
//     per-marker appends run concurrently in the purgatory.
//   - After the markers on __consumer_offsets partitions succeed, the group coordinator
//     applies (commit) or drops (abort) the producer's pending transactional offsets
//     (GroupCoordinator.onTransactionCompleted).
//   - The response has one entry per producer id (Kafka keys its result map by producer id,
//     so two markers of one producer share an entry), in request order here.
//   - Only brokers write markers: CLUSTER_ACTION on the cluster, else every partition
//     answers CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

func init() { registerAPI(0, 1, (*APIs).handleWriteTxnMarkers) }

func (a *APIs) handleWriteTxnMarkers(ctx context.Context, rc *RequestContext, req *kmsg.WriteTxnMarkersRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)

	var entries []TxnMarkerEntry
	type slot struct{ marker, entry int } // request marker, entries index (-1: no append)
	type result struct {
		tp   logstore.TopicPartition
		code int16
	}
	perMarker := make([][]result, len(req.Markers))
	var slots [][]slot
	// KafkaApis: only brokers (CLUSTER_ACTION) write markers; otherwise every partition
	// answers CLUSTER_AUTHORIZATION_FAILED (WriteTxnMarkersRequest.getErrorResponse).
	denied := !a.authorizeCluster(rc, kmsg.ACLOperationClusterAction)
	for mi, m := range req.Markers {
		var ms []slot
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				tp := logstore.TopicPartition{Topic: t.Topic, Partition: p}
				perMarker[mi] = append(perMarker[mi], result{tp: tp})
				if denied {
					perMarker[mi][len(perMarker[mi])-1].code = kerr.ClusterAuthorizationFailed.Code
					ms = append(ms, slot{mi, -1})
					continue
				}
				if !a.Replicas.hasLocalLog(tp) {
					perMarker[mi][len(perMarker[mi])-1].code = ErrorCode(fmt.Errorf("%s: no local log: %w", tp, ErrUnknownTopicOrPartition))
					ms = append(ms, slot{mi, -1})
					continue
				}
				ms = append(ms, slot{mi, len(entries)})
				entries = append(entries, TxnMarkerEntry{TP: tp, ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
					Commit: m.Committed, CoordinatorEpoch: m.CoordinatorEpoch})
			}
		}
		slots = append(slots, ms)
	}

	if len(entries) > 0 {
		results := a.Replicas.AppendTxnMarkers(ctx, a.txnMarkerTimeout(), entries)
		for mi := range req.Markers {
			var offsetsParts []int32
			for j, s := range slots[mi] {
				if s.entry < 0 {
					continue
				}
				r := results[s.entry]
				perMarker[mi][j].code = ErrorCode(r.Err)
				if r.Err != nil {
					rc.Log.WithError(r.Err).WithFields(logrus.Fields{"topic": r.TP.Topic, "partition": r.TP.Partition,
						"producer_id": req.Markers[mi].ProducerID}).Debug("transaction marker append failed")
					continue
				}
				if r.TP.Topic == GroupMetadataTopicName {
					offsetsParts = append(offsetsParts, r.TP.Partition)
				}
			}
			if len(offsetsParts) > 0 {
				// As soon as the marker is written for transactional offset commits, the group
				// coordinator materializes (or drops) the producer's pending offsets.
				m := req.Markers[mi]
				a.onTxnOffsetsMarker(m.ProducerID, offsetsParts, m.Committed)
			}
		}
	}

	// One response entry per producer id, topics in order of first appearance.
	byPID := map[int64]int{}
	for mi, m := range req.Markers {
		i, ok := byPID[m.ProducerID]
		if !ok {
			i = len(resp.Markers)
			byPID[m.ProducerID] = i
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			resp.Markers = append(resp.Markers, rm)
		}
		rm := &resp.Markers[i]
		for _, r := range perMarker[mi] {
			ti := -1
			for k := range rm.Topics {
				if rm.Topics[k].Topic == r.tp.Topic {
					ti = k
					break
				}
			}
			if ti < 0 {
				rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				rt.Topic = r.tp.Topic
				rm.Topics = append(rm.Topics, rt)
				ti = len(rm.Topics) - 1
			}
			parts := rm.Topics[ti].Partitions
			pi := -1
			for k := range parts {
				if parts[k].Partition == r.tp.Partition {
					pi = k
					break
				}
			}
			if pi >= 0 { // the same partition again for this producer: the later result wins, as in Kafka's map
				parts[pi].ErrorCode = r.code
				continue
			}
			rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
			rp.Partition, rp.ErrorCode = r.tp.Partition, r.code
			rm.Topics[ti].Partitions = append(parts, rp)
		}
	}
	return resp, nil
}

// onTxnOffsetsMarker hands successful __consumer_offsets markers to the group coordinator
// (GroupCoordinator.onTransactionCompleted → scheduleHandleTxnCompletion).
func (a *APIs) onTxnOffsetsMarker(producerID int64, partitions []int32, commit bool) {
	a.groupCoordinator().ScheduleHandleTxnCompletion(producerID, partitions, commit)
}

// txnMarkerTimeout is request.timeout.ms, the DelayedProduce timeout Kafka gives markers.
func (a *APIs) txnMarkerTimeout() time.Duration {
	if a.Config != nil && a.Config.RequestTimeout > 0 {
		return a.Config.RequestTimeout
	}
	return 30 * time.Second
}

// TxnMarkerEntry is one control batch to write: COMMIT or ABORT of a producer's
// transaction on one partition.
type TxnMarkerEntry struct {
	TP               logstore.TopicPartition
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
}

// hasLocalLog reports whether tp is hosted here with a log (ReplicaManager.getMagic finds one).
func (rm *ReplicaManager) hasLocalLog(tp logstore.TopicPartition) bool {
	p, err := rm.Partition(tp)
	return err == nil && p.Log() != nil
}

// AppendTxnMarkers (ReplicaManager.appendRecords with origin COORDINATOR and acks=-1 for the
// end-transaction markers) appends each marker as leader, then waits until the HW passes
// every appended one, the timeout (REQUEST_TIMED_OUT) or ctx ends.
func (rm *ReplicaManager) AppendTxnMarkers(ctx context.Context, timeout time.Duration, entries []TxnMarkerEntry) []ProduceResult {
	results := make([]ProduceResult, len(entries))
	parts := make([]*Partition, len(entries))
	anyOK := false
	for i, e := range entries {
		results[i].TP = e.TP
		p, err := rm.LeaderPartition(e.TP)
		if err != nil {
			results[i].Err = err
			continue
		}
		info, err := p.appendTxnMarker(e.ProducerID, e.ProducerEpoch, e.Commit, e.CoordinatorEpoch)
		if err != nil {
			results[i].Err = err
			continue
		}
		results[i].Info = info
		parts[i] = p
		anyOK = true
		rm.log.WithFields(logrus.Fields{"topic": e.TP.Topic, "partition": e.TP.Partition, "producer_id": e.ProducerID,
			"producer_epoch": e.ProducerEpoch, "commit": e.Commit, "coordinator_epoch": e.CoordinatorEpoch,
			"offset": info.FirstOffset}).Debug("wrote transaction marker")
	}
	if anyOK {
		waitForProduce(ctx, rm.cfg.Now, timeout, results, parts)
	}
	return results
}
