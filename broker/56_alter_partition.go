package broker

// 56_alter_partition.go — AlterPartition v0-3 (KafkaApis.handleAlterPartitionRequest), sent by
// partition leaders to the controller to change an ISR. Only the active controller handles it
// (controller.AlterPartition, in order with its other events); elsewhere the controller
// package answers NOT_CONTROLLER.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 3, (*APIs).handleAlterPartition) }

func (a *APIs) handleAlterPartition(ctx context.Context, rc *RequestContext, req *kmsg.AlterPartitionRequest) (kmsg.Response, error) {
	if !a.authorizeCluster(rc, kmsg.ACLOperationClusterAction) { // KafkaApis: CLUSTER_ACTION
		resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	ad := a.admin()
	if ad == nil || ad.controller == nil {
		resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	resp := ad.controller.AlterPartition(ctx, req)
	resp.SetVersion(req.GetVersion())
	return resp, nil
}
