package broker

// 24_add_partitions_to_txn.go — AddPartitionsToTxn v0-4 (KafkaApis.handleAddPartitionsToTxnRequest
// → TransactionCoordinator.handleAddPartitionsToTransaction / handleVerifyPartitionsInTransaction).
//
// v0-3 come from producers and carry one transaction; v4 (KIP-890) comes from partition
// leaders and batches transactions, each either added or, with VerifyOnly, only checked
// against the coordinator's state (the leader's transaction verification before a producer's
// first transactional batch). As Kafka:
//   - v4+ needs CLUSTER_ACTION (brokers only), v0-3 WRITE on the transactional id
//     (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition);
//   - every partition of a transaction is checked first: a topic without WRITE (v0-3 only;
//     never granted for internal topics) gets TOPIC_AUTHORIZATION_FAILED, an unknown partition UNKNOWN_TOPIC_OR_PARTITION, and the
//     others OPERATION_NOT_ATTEMPTED, without asking the coordinator;
//   - otherwise the coordinator's one error code goes to every partition of the transaction
//     (VerifyOnly: its per-partition codes);
//   - v0-1 get INVALID_PRODUCER_EPOCH instead of PRODUCER_FENCED (KIP-588).

import (
	"context"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

func init() { registerAPI(0, 4, (*APIs).handleAddPartitionsToTxn) }

// txnPartitions is one transaction of an AddPartitionsToTxn request, in request order.
type txnPartitions struct {
	id         string
	pid        int64
	epoch      int16
	verifyOnly bool
	topics     []string
	parts      map[string][]int32
}

func (t *txnPartitions) add(topic string, partitions []int32) {
	if _, ok := t.parts[topic]; !ok {
		t.topics = append(t.topics, topic)
		t.parts[topic] = []int32{}
	}
	// A partition named twice is one partition, as Kafka reads the request into a set.
	for _, p := range partitions {
		if !slices.Contains(t.parts[topic], p) {
			t.parts[topic] = append(t.parts[topic], p)
		}
	}
}

func (a *APIs) handleAddPartitionsToTxn(ctx context.Context, rc *RequestContext, req *kmsg.AddPartitionsToTxnRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version >= 4 && !a.authorizeCluster(rc, kmsg.ACLOperationClusterAction) {
		// v4+ comes from brokers only (KafkaApis: CLUSTER_ACTION); a top-level error.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	var txns []*txnPartitions
	if req.Version < 4 {
		t := &txnPartitions{id: req.TransactionalID, pid: req.ProducerID, epoch: req.ProducerEpoch, parts: map[string][]int32{}}
		for _, rt := range req.Topics {
			t.add(rt.Topic, rt.Partitions)
		}
		txns = append(txns, t)
	} else {
		for _, rt := range req.Transactions {
			t := &txnPartitions{id: rt.TransactionalID, pid: rt.ProducerID, epoch: rt.ProducerEpoch, verifyOnly: rt.VerifyOnly, parts: map[string][]int32{}}
			for _, tt := range rt.Topics {
				t.add(tt.Topic, tt.Partitions)
			}
			txns = append(txns, t)
		}
	}

	// Kafka hands each transaction to the coordinator at once and answers when all are done.
	results := make([]map[string]map[int32]int16, len(txns))
	if len(txns) == 1 {
		results[0] = a.addPartitionsToTxn(ctx, rc, req.Version, txns[0])
	} else {
		var wg sync.WaitGroup
		for i, t := range txns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = a.addPartitionsToTxn(ctx, rc, req.Version, t)
			}()
		}
		wg.Wait()
	}

	for i, t := range txns {
		if req.Version < 4 {
			for _, topic := range t.topics {
				rt := kmsg.NewAddPartitionsToTxnResponseTopic()
				rt.Topic = topic
				for _, p := range t.parts[topic] {
					rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, results[i][topic][p]
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			continue
		}
		rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtx.TransactionalID = t.id
		for _, topic := range t.topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = topic
			for _, p := range t.parts[topic] {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, results[i][topic][p]
				rt.Partitions = append(rt.Partitions, rp)
			}
			rtx.Topics = append(rtx.Topics, rt)
		}
		resp.Transactions = append(resp.Transactions, rtx)
	}
	return resp, nil
}

// addPartitionsToTxn handles one transaction and returns the error of each partition.
func (a *APIs) addPartitionsToTxn(ctx context.Context, rc *RequestContext, version int16, t *txnPartitions) map[string]map[int32]int16 {
	out := make(map[string]map[int32]int16, len(t.topics))
	all := func(code int16) map[string]map[int32]int16 {
		for _, topic := range t.topics {
			m := out[topic]
			if m == nil {
				m = map[int32]int16{}
				out[topic] = m
			}
			for _, p := range t.parts[topic] {
				m[p] = code
			}
		}
		return out
	}
	// KafkaApis: client requests (before v4) need WRITE on the transactional id, then WRITE
	// on each topic (never granted for internal topics).
	if version < 4 && !a.authorize(rc, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, t.id) {
		return all(kerr.TransactionalIDAuthorizationFailed.Code)
	}
	writable := authzSet{}
	if version < 4 {
		writable = a.filterAuthorized(rc, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, func(add func(string)) {
			for _, topic := range t.topics {
				if !isInternalTopicName(topic) {
					add(topic)
				}
			}
		})
	}
	failed := false
	perPartition := map[string]map[int32]int16{}
	for _, topic := range t.topics {
		perPartition[topic] = map[int32]int16{}
		for _, p := range t.parts[topic] {
			code := int16(0)
			switch {
			case version < 4 && (isInternalTopicName(topic) || !writable.has(topic)):
				code = kerr.TopicAuthorizationFailed.Code
			case !a.partitionExists(topic, p):
				code = kerr.UnknownTopicOrPartition.Code
			}
			if code != 0 {
				failed = true
			}
			perPartition[topic][p] = code
		}
	}
	if failed {
		for topic, m := range perPartition {
			for p, code := range m {
				if code == 0 {
					m[p] = kerr.OperationNotAttempted.Code
				}
			}
			out[topic] = m
		}
		return out
	}
	c := a.txnCoordinator()
	if t.verifyOnly {
		got := c.HandleVerifyPartitions(ctx, t.id, t.pid, t.epoch, t.parts)
		// A partition the coordinator did not answer for is not verified.
		all(kerr.InvalidTxnState.Code)
		for topic, m := range got {
			if out[topic] == nil {
				continue // not asked for
			}
			for p, code := range m {
				if _, asked := out[topic][p]; asked {
					out[topic][p] = code
				}
			}
		}
		return out
	}
	code := c.HandleAddPartitions(ctx, t.id, t.pid, t.epoch, t.parts)
	return all(fencedForVersion(code, version, 2))
}

// partitionExists is MetadataCache.contains(TopicPartition).
func (a *APIs) partitionExists(topic string, p int32) bool {
	if a.Metadata == nil {
		return false
	}
	_, ok := a.Metadata.Partition(logstore.TopicPartition{Topic: topic, Partition: p})
	return ok
}
