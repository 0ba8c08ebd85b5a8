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
	// KafkaApis: CLUSTER_ACTION, else StopReplicaRequest.getErrorResponse (every partition).
	if !a.authorizeCluster(rc, kmsg.ACLOperationClusterAction) {
		resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.Partitions = []kmsg.StopReplicaResponsePartition{}
		add := func(topic string, p int32) {
			rp := kmsg.NewStopReplicaResponsePartition()
			rp.Topic, rp.Partition, rp.ErrorCode = topic, p, kerr.ClusterAuthorizationFailed.Code
			resp.Partitions = append(resp.Partitions, rp)
		}
		for _, t := range req.Topics {
			switch {
			case req.Version == 0:
				add(t.Topic, t.Partition)
			case req.Version <= 2:
				for _, p := range t.Partitions {
					add(t.Topic, p)
				}
			default:
				for _, ps := range t.PartitionStates {
					add(t.Topic, ps.Partition)
				}
			}
		}
		return resp, nil
	}
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
	a.Metrics.partitionsStopped(a.Replicas, resp) // BrokerTopicMetrics of topics gone (metrics_api.go)
	// KafkaApis.handleStopReplicaRequest: the group coordinator unloads the
	// __consumer_offsets partitions stopped without error, the transaction coordinator the
	// __transaction_state ones, with the request's leader epoch when it has one (onResignation).
	if resp.ErrorCode == 0 {
		for _, rp := range resp.Partitions {
			if rp.ErrorCode != 0 {
				continue
			}
			switch rp.Topic {
			case GroupMetadataTopicName:
				a.OnOffsetsLeadershipChange(logstore.TopicPartition{Topic: rp.Topic, Partition: rp.Partition}, false, -1)
			case TransactionStateTopicName:
				a.OnTxnStateLeadershipChange(logstore.TopicPartition{Topic: rp.Topic, Partition: rp.Partition}, false,
					stopReplicaLeaderEpoch(req, rp.Topic, rp.Partition))
			}
		}
	}
	return resp, nil
}

// stopReplicaLeaderEpoch is the leader epoch a StopReplica v3+ carries for a partition, or -1
// (v0-2, or the -1/-2 sentinels: no epoch).
func stopReplicaLeaderEpoch(req *kmsg.StopReplicaRequest, topic string, partition int32) int32 {
	for _, t := range req.Topics {
		if t.Topic != topic {
			continue
		}
		for _, ps := range t.PartitionStates {
			if ps.Partition == partition && ps.LeaderEpoch >= 0 {
				return ps.LeaderEpoch
			}
		}
	}
	return -1
}
