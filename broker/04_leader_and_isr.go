package broker

// 04_leader_and_isr.go — LeaderAndIsr v0-7 (KafkaApis.handleLeaderAndIsrRequest), sent by
// the controller. A broker epoch older than this broker's registration (czxid) gets
// STALE_BROKER_EPOCH for every partition (the request was meant for an earlier
// incarnation); -1 (v0-1, or unknown) is accepted. The controller-epoch fence and the
// leader/follower transitions are ReplicaManager.BecomeLeaderOrFollower.

import (
	"context"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 7, (*APIs).handleLeaderAndIsr) }

func (a *APIs) handleLeaderAndIsr(ctx context.Context, rc *RequestContext, req *kmsg.LeaderAndISRRequest) (kmsg.Response, error) {
	ad := a.admin()
	if ad != nil && ad.isBrokerEpochStale(req.BrokerEpoch) {
		ad.log.WithFields(logrus.Fields{"broker_epoch": req.BrokerEpoch, "current_broker_epoch": ad.brokerEpoch.Load(),
			"controller_id": req.ControllerID}).Info("received LeaderAndIsr request with a stale broker epoch")
		return leaderAndIsrErrorResponse(req, kerr.StaleBrokerEpoch), nil
	}
	if a.Replicas == nil {
		return leaderAndIsrErrorResponse(req, kerr.UnknownServerError), nil
	}
	return a.Replicas.BecomeLeaderOrFollower(req), nil
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
