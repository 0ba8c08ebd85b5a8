package broker

// 67_allocate_producer_ids.go — AllocateProducerIds v0 (KafkaApis.handleAllocateProducerIdsRequest,
// ZK mode): a broker's ProducerIdManager asks the controller for a block of producer ids. Only
// the active controller serves it (controller.AllocateProducerIDs); elsewhere NOT_CONTROLLER.
// CLUSTER_ACTION on the cluster, else CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 0, (*APIs).handleAllocateProducerIDs) }

func (a *APIs) handleAllocateProducerIDs(ctx context.Context, rc *RequestContext, req *kmsg.AllocateProducerIDsRequest) (kmsg.Response, error) {
	if !a.authorizeCluster(rc, kmsg.ACLOperationClusterAction) { // KafkaApis: CLUSTER_ACTION
		resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	ad := a.admin()
	if ad == nil || ad.controller == nil {
		resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	resp := ad.controller.AllocateProducerIDs(ctx, req)
	resp.SetVersion(req.GetVersion())
	return resp, nil
}
