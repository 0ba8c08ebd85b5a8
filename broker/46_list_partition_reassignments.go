package broker

// 46_list_partition_reassignments.go — ListPartitionReassignments v0
// (KafkaApis.handleListPartitionReassignmentsRequest, ZK mode): the active controller lists
// the partitions being reassigned (all, or those named) with their replicas, adding and
// removing replicas; other brokers answer NOT_CONTROLLER. DESCRIBE on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED. Deviations: none.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 0, (*APIs).handleListPartitionReassignments) }

func (a *APIs) handleListPartitionReassignments(ctx context.Context, rc *RequestContext, req *kmsg.ListPartitionReassignmentsRequest) (kmsg.Response, error) {
	if !a.authorizeCluster(rc, kmsg.ACLOperationDescribe) {
		// KafkaApis: DESCRIBE on the cluster; the error response lists the partitions asked
		// for with nothing about them.
		resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
		resp.ErrorCode, resp.ErrorMessage = apiErrorParts(clusterAuthorizationError(rc))
		for _, t := range req.Topics {
			rt := kmsg.NewListPartitionReassignmentsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
				rp.Partition = p
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
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
