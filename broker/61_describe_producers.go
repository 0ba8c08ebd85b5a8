package broker

// 61_describe_producers.go — DescribeProducers (key 61) v0, as
// KafkaApis.handleDescribeProducersRequest and Partition.activeProducerState (KIP-664):
// the producers a partition's replica knows, with their epoch, last sequence and timestamp,
// the coordinator epoch of their last marker and the first offset of their open transaction
// (-1 when none), as `kafka-transactions.sh describe-producers` and find-hanging read them.
//   - A topic-partition the metadata cache does not know is UNKNOWN_TOPIC_OR_PARTITION; one
//     known but not hosted here (or without a log) is NOT_LEADER_OR_FOLLOWER. Any replica
//     with a log answers, leader or follower, as in Kafka (the admin client asks the leader
//     unless told a broker id).
// READ on the topic, else TOPIC_AUTHORIZATION_FAILED for its partitions.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

func init() { registerAPI(0, 0, (*APIs).handleDescribeProducers) }

func (a *APIs) handleDescribeProducers(ctx context.Context, rc *RequestContext, req *kmsg.DescribeProducersRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		// KafkaApis: a valid topic name first, then READ on the topic.
		if validateTopicName(t.Topic) == nil && !a.authorize(rc, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, t.Topic) {
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeProducersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		for _, p := range t.Partitions {
			tp := logstore.TopicPartition{Topic: t.Topic, Partition: p}
			rt.Partitions = append(rt.Partitions, a.Replicas.ActiveProducerState(tp))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// ActiveProducerState is ReplicaManager.activeProducerState: one partition's answer to
// DescribeProducers.
func (rm *ReplicaManager) ActiveProducerState(tp logstore.TopicPartition) kmsg.DescribeProducersResponseTopicPartition {
	rp := kmsg.NewDescribeProducersResponseTopicPartition()
	rp.Partition = tp.Partition
	p, err := rm.Partition(tp)
	if err != nil {
		rp.ErrorCode = ErrorCode(err)
		return rp
	}
	l := p.Log()
	if l == nil {
		rp.ErrorCode = kerr.NotLeaderForPartition.Code
		return rp
	}
	rp.ActiveProducers = []kmsg.DescribeProducersResponseTopicPartitionActiveProducer{}
	for _, ps := range l.ActiveProducers() {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID = ps.ProducerID
		ap.ProducerEpoch = int32(ps.ProducerEpoch)
		ap.LastSequence = ps.LastSequence
		ap.LastTimestamp = ps.LastTimestamp
		ap.CoordinatorEpoch = ps.CoordinatorEpoch
		ap.CurrentTxnStartOffset = ps.CurrentTxnFirstOffset
		rp.ActiveProducers = append(rp.ActiveProducers, ap)
	}
	return rp
}
