package broker

// 46_list_partition_reassignments.go — ListPartitionReassignments v0
// (KafkaApis.handleListPartitionReassignmentsRequest, ZK mode): the active controller lists
// the partitions being reassigned (all, or those named) with their replicas, adding and
// removing replicas; other brokers answer NOT_CONTROLLER. Deviation: no authorizer.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 0, (*APIs).handleListPartitionReassignments) }

func (a *APIs) handleListPartitionReassignments(ctx context.Context, rc *RequestContext, req *kmsg.ListPartitionReassignmentsRequest) (kmsg.Response, error) {
	ad := a.admin()
	if ad == nil || ad.controller == nil || !ad.controller.IsActive() {
		resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	resp := ad.controller.ListPartitionReassignments(ctx, req)
	resp.SetVersion(req.GetVersion())
	return resp, nil
}
