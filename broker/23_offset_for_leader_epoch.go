package broker

// 23_offset_for_leader_epoch.go — OffsetForLeaderEpoch (key 23) v0-4
// (KafkaApis.handleOffsetForLeaderEpochRequest, ReplicaManager.lastOffsetForLeaderEpoch,
// Partition.lastOffsetForLeaderEpoch): for each partition the largest epoch <= the asked
// one and its end offset from the leader epoch cache (KIP-101/279), as followers use it to
// truncate and consumers to detect log truncation (KIP-320).
//   - The leader answers; any replica answers the debugging replica id -2 (v3+).
//   - v2+ CurrentLeaderEpoch is checked: FENCED_LEADER_EPOCH if older, UNKNOWN_LEADER_EPOCH
//     if newer than this broker's.
//   - An epoch the cache cannot place gives leader epoch -1 and end offset -1 with no error.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

func init() { registerAPI(0, 4, (*APIs).handleOffsetForLeaderEpoch) }

func (a *APIs) handleOffsetForLeaderEpoch(ctx context.Context, rc *RequestContext, req *kmsg.OffsetForLeaderEpochRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	replicaID := int32(-1)
	if req.Version >= 3 {
		replicaID = req.ReplicaID
	}
	fetchOnlyFromLeader := replicaID != debuggingReplicaID
	// KafkaApis: CLUSTER_ACTION (followers) covers every topic; otherwise DESCRIBE on each
	// topic (consumers checking for truncation, KIP-320).
	describable := authzSet{}
	if !a.authorizeCluster(rc, kmsg.ACLOperationClusterAction) {
		describable = a.filterAuthorized(rc, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, func(add func(string)) {
			for _, rt := range req.Topics {
				add(rt.Topic)
			}
		})
	}
	for _, rt := range req.Topics {
		ot := kmsg.NewOffsetForLeaderEpochResponseTopic()
		ot.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			op := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			op.Partition = rp.Partition
			if !describable.has(rt.Topic) {
				op.ErrorCode = kerr.TopicAuthorizationFailed.Code
				ot.Partitions = append(ot.Partitions, op)
				continue
			}
			current := int32(-1)
			if req.Version >= 2 {
				current = rp.CurrentLeaderEpoch
			}
			epoch, end, err := a.Replicas.LastOffsetForLeaderEpoch(logstore.TopicPartition{Topic: rt.Topic, Partition: rp.Partition},
				current, rp.LeaderEpoch, fetchOnlyFromLeader)
			op.ErrorCode = ErrorCode(err)
			op.LeaderEpoch, op.EndOffset = epoch, end
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp, nil
}

// LastOffsetForLeaderEpoch (Partition.lastOffsetForLeaderEpoch) returns (epoch, end offset)
// for leaderEpoch from the local log's epoch cache; (-1, -1) with an error if the partition
// cannot answer.
func (rm *ReplicaManager) LastOffsetForLeaderEpoch(tp logstore.TopicPartition, currentLeaderEpoch, leaderEpoch int32, fetchOnlyFromLeader bool) (int32, int64, error) {
	p, err := rm.Partition(tp)
	if err != nil {
		return -1, -1, err
	}
	p.mu.RLock()
	l, err := p.leaderLogLocked(currentLeaderEpoch, fetchOnlyFromLeader)
	p.mu.RUnlock()
	if err != nil {
		return -1, -1, err
	}
	epoch, end := l.EndOffsetForEpoch(leaderEpoch)
	if end < 0 {
		return -1, -1, nil
	}
	return epoch, end, nil
}
