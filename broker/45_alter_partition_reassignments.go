package broker

// 45_alter_partition_reassignments.go — AlterPartitionReassignments v0
// (KafkaApis.handleAlterPartitionReassignmentsRequest, ZK mode): served by the active
// controller only (top-level NOT_CONTROLLER elsewhere, so the admin client retries at the
// controller). Per-partition errors come from KafkaController: INVALID_REPLICA_ASSIGNMENT
// (empty, duplicate, negative or dead new replicas), UNKNOWN_TOPIC_OR_PARTITION,
// NO_REASSIGNMENT_IN_PROGRESS (cancel without one). ALTER on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED. Deviations: none.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 0, (*APIs).handleAlterPartitionReassignments) }

func (a *APIs) handleAlterPartitionReassignments(ctx context.Context, rc *RequestContext, req *kmsg.AlterPartitionAssignmentsRequest) (kmsg.Response, error) {
	if !a.authorizeCluster(rc, kmsg.ACLOperationAlter) {
		// KafkaApis: ALTER on the cluster; the request's error response puts the
		// ClusterAuthorizationException at the top and on every partition.
		resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		code, msg := apiErrorParts(clusterAuthorizationError(rc))
		resp.ErrorCode, resp.ErrorMessage = code, msg
		for _, t := range req.Topics {
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	ad := a.admin()
	if ad == nil || ad.controller == nil || !ad.controller.IsActive() {
		resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	resp := ad.controller.AlterPartitionReassignments(ctx, req)
	resp.SetVersion(req.GetVersion())
	return resp, nil
}
