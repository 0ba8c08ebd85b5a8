package broker

// 07_controlled_shutdown.go — ControlledShutdown v0-3 (KafkaApis.handleControlledShutdownRequest),
// sent by a broker that is shutting down to the controller. Only the active controller
// handles it (controller.ControlledShutdown, in order with its other events); elsewhere the
// answer is STALE_CONTROLLER_EPOCH, as Kafka's doControlledShutdown throws
// ControllerMovedException on a broker that is not the controller (the sender retries).
// v0 comes with request header v0 (conn.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 3, (*APIs).handleControlledShutdown) }

func (a *APIs) handleControlledShutdown(ctx context.Context, rc *RequestContext, req *kmsg.ControlledShutdownRequest) (kmsg.Response, error) {
	if !a.authorizeCluster(rc, kmsg.ACLOperationClusterAction) { // KafkaApis: CLUSTER_ACTION
		resp := req.ResponseKind().(*kmsg.ControlledShutdownResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	ad := a.admin()
	if ad == nil || ad.controller == nil {
		resp := req.ResponseKind().(*kmsg.ControlledShutdownResponse)
		resp.ErrorCode = kerr.StaleControllerEpoch.Code
		return resp, nil
	}
	resp := ad.controller.ControlledShutdown(ctx, req)
	resp.SetVersion(req.GetVersion())
	return resp, nil
}
