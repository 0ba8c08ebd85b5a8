package broker

// 05_stop_replica.go — StopReplica v0-4 (KafkaApis.handleStopReplicaRequest), sent by the
// controller. A stale broker epoch gets STALE_BROKER_EPOCH with no partitions, as Kafka
// answers; the controller-epoch fence and the stopping/deleting are
// ReplicaManager.StopReplicas.

import (
	"context"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

func init() { registerAPI(0, 4, (*APIs).handleStopReplica) }

func (a *APIs) handleStopReplica(ctx context.Context, rc *RequestContext, req *kmsg.StopReplicaRequest) (kmsg.Response, error) {
	ad := a.admin()
	if ad != nil && ad.isBrokerEpochStale(req.BrokerEpoch) {
		ad.log.WithFields(logrus.Fields{"broker_epoch": req.BrokerEpoch, "current_broker_epoch": ad.brokerEpoch.Load(),
			"controller_id": req.ControllerID}).Info("received StopReplica request with a stale broker epoch")
		resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp, nil
	}
	if a.Replicas == nil {
		resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil
	}
	resp := a.Replicas.StopReplicas(req)
	// KafkaApis.handleStopReplicaRequest: the group coordinator unloads the
	// __consumer_offsets partitions stopped without error (onResignation).
	if resp.ErrorCode == 0 {
		for _, rp := range resp.Partitions {
			if rp.Topic == GroupMetadataTopicName && rp.ErrorCode == 0 {
				a.OnOffsetsLeadershipChange(logstore.TopicPartition{Topic: rp.Topic, Partition: rp.Partition}, false, -1)
			}
		}
	}
	return resp, nil
}
