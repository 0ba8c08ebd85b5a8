package broker

// 04_leader_and_isr.go — LeaderAndIsr v0-7 (KafkaApis.handleLeaderAndIsrRequest), sent by
// the controller. A broker epoch older than this broker's registration (czxid) gets
// STALE_BROKER_EPOCH for every partition (the request was meant for an earlier
// incarnation); -1 (v0-1, or unknown) is accepted. The controller-epoch fence and the
// leader/follower transitions are ReplicaManager.BecomeLeaderOrFollower; then the group
// coordinator loads or unloads the __consumer_offsets partitions that changed, and the
// transaction coordinator the __transaction_state ones (coordinator epoch = leader epoch).

import (
	"context"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

func init() { registerAPI(0, 7, (*APIs).handleLeaderAndIsr) }

func (a *APIs) handleLeaderAndIsr(ctx context.Context, rc *RequestContext, req *kmsg.LeaderAndISRRequest) (kmsg.Response, error) {
	// KafkaApis: only the controller's principal (CLUSTER_ACTION) may send this.
	if !a.authorizeCluster(rc, kmsg.ACLOperationClusterAction) {
		return leaderAndIsrErrorResponse(req, kerr.ClusterAuthorizationFailed), nil
	}
	ad := a.admin()
	if ad != nil && ad.isBrokerEpochStale(req.BrokerEpoch) {
		ad.log.WithFields(logrus.Fields{"broker_epoch": req.BrokerEpoch, "current_broker_epoch": ad.brokerEpoch.Load(),
			"controller_id": req.ControllerID}).Info("received LeaderAndIsr request with a stale broker epoch")
		return leaderAndIsrErrorResponse(req, kerr.StaleBrokerEpoch), nil
	}
	if a.Replicas == nil {
		return leaderAndIsrErrorResponse(req, kerr.UnknownServerError), nil
	}
	resp := a.Replicas.BecomeLeaderOrFollower(req)
	a.onCoordinatorLeadershipChange(req, resp, GroupMetadataTopicName)
	a.onCoordinatorLeadershipChange(req, resp, TransactionStateTopicName)
	return resp, nil
}

// onCoordinatorLeadershipChange is KafkaApis' onLeadershipChange callback for one
// coordinator topic (__consumer_offsets: group coordinator, __transaction_state: transaction
// coordinator): every partition of topic answered without error is loaded if this broker now
// leads it (onElection) and unloaded otherwise (onResignation).
func (a *APIs) onCoordinatorLeadershipChange(req *kmsg.LeaderAndISRRequest, resp *kmsg.LeaderAndISRResponse, topic string) {
	if resp.ErrorCode != 0 {
		return
	}
	var states []kmsg.LeaderAndISRRequestTopicPartition
	var topicID [16]byte
	if req.Version < 2 {
		for _, ps := range req.PartitionStates {
			if ps.Topic == topic {
				states = append(states, ps)
			}
		}
	}
	for _, ts := range req.TopicStates {
		if ts.Topic == topic {
			states, topicID = ts.PartitionStates, ts.TopicID
		}
	}
	if len(states) == 0 {
		return
	}
	failed := map[int32]bool{}
	for _, rp := range resp.Partitions { // v0-4
		if rp.Topic == topic && rp.ErrorCode != 0 {
			failed[rp.Partition] = true
		}
	}
	for _, rt := range resp.Topics { // v5+
		if rt.TopicID == topicID {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					failed[rp.Partition] = true
				}
			}
		}
	}
	for _, ps := range states {
		if !failed[ps.Partition] {
			tp := logstore.TopicPartition{Topic: topic, Partition: ps.Partition}
			if topic == TransactionStateTopicName {
				a.OnTxnStateLeadershipChange(tp, ps.Leader == a.BrokerID, ps.LeaderEpoch)
			} else {
				a.OnOffsetsLeadershipChange(tp, ps.Leader == a.BrokerID, ps.LeaderEpoch)
			}
		}
	}
}

// leaderAndIsrErrorResponse is LeaderAndIsrRequest.getErrorResponse: the code at the top and
// on every partition.
func leaderAndIsrErrorResponse(req *kmsg.LeaderAndISRRequest, code *kerr.Error) *kmsg.LeaderAndISRResponse {
	resp := req.ResponseKind().(*kmsg.LeaderAndISRResponse)
	resp.ErrorCode = code.Code
	if req.Version < 5 {
		parts := req.PartitionStates
		if req.Version >= 2 {
			parts = nil
			for _, ts := range req.TopicStates {
				for _, ps := range ts.PartitionStates {
					ps.Topic = ts.Topic
					parts = append(parts, ps)
				}
			}
		}
		for _, ps := range parts {
			rp := kmsg.NewLeaderAndISRResponseTopicPartition()
			rp.Topic, rp.Partition, rp.ErrorCode = ps.Topic, ps.Partition, code.Code
			resp.Partitions = append(resp.Partitions, rp)
		}
		return resp
	}
	for _, ts := range req.TopicStates {
		rt := kmsg.NewLeaderAndISRResponseTopic()
		rt.TopicID = ts.TopicID
		for _, ps := range ts.PartitionStates {
			rp := kmsg.NewLeaderAndISRResponseTopicPartition()
			rp.Partition, rp.ErrorCode = ps.Partition, code.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
