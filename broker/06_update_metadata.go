package broker

// 06_update_metadata.go — UpdateMetadata v0-8 (KafkaApis.handleUpdateMetadataRequest), sent
// by the controller. A stale broker epoch gets STALE_BROKER_EPOCH; a stale controller epoch
// STALE_CONTROLLER_EPOCH (ReplicaManager.MaybeUpdateMetadataCache's ControllerMovedException).
// After the cache is updated, waiting CreateTopics/CreatePartitions/DeleteTopics requests
// re-check (ZkAdminManager.tryCompleteDelayedTopicOperations).

import (
	"context"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 8, (*APIs).handleUpdateMetadata) }

func (a *APIs) handleUpdateMetadata(ctx context.Context, rc *RequestContext, req *kmsg.UpdateMetadataRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.UpdateMetadataResponse)
	if !a.authorizeCluster(rc, kmsg.ACLOperationClusterAction) { // KafkaApis: CLUSTER_ACTION
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	ad := a.admin()
	if ad != nil && ad.isBrokerEpochStale(req.BrokerEpoch) {
		ad.log.WithFields(logrus.Fields{"broker_epoch": req.BrokerEpoch, "current_broker_epoch": ad.brokerEpoch.Load(),
			"controller_id": req.ControllerID}).Info("received UpdateMetadata request with a stale broker epoch")
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp, nil
	}
	if a.Replicas == nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil
	}
	if _, err := a.Replicas.MaybeUpdateMetadataCache(req); err != nil {
		resp.ErrorCode = ErrorCode(err)
		return resp, nil
	}
	if ad != nil {
		ad.metadataChanged.Notify()
	}
	return resp, nil
}
