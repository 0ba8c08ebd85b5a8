package broker

// 10_find_coordinator.go — FindCoordinator v0-4 (KafkaApis.handleFindCoordinatorRequest).
// Key type 0 (group) answers the leader of the group's __consumer_offsets partition, key
// type 1 (transaction) the leader of the transactional id's __transaction_state partition;
// either topic is created on first use (COORDINATOR_NOT_AVAILABLE until it has leaders, or
// while fewer brokers are alive than its replication factor). v4 batches keys (KIP-699).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 4, (*APIs).handleFindCoordinator) }

func (a *APIs) handleFindCoordinator(ctx context.Context, rc *RequestContext, req *kmsg.FindCoordinatorRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	find := func(key string) (int32, string, int32, *kerr.Error) {
		// KafkaApis.getCoordinator: DESCRIBE on the group or transactional id first.
		switch req.CoordinatorType {
		case 0:
			if !a.authorize(rc, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, key) {
				return -1, "", -1, kerr.GroupAuthorizationFailed
			}
			return a.findGroupCoordinator(ctx, rc, key)
		case 1:
			if !a.authorize(rc, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, key) {
				return -1, "", -1, kerr.TransactionalIDAuthorizationFailed
			}
			return a.findTxnCoordinator(ctx, rc, key)
		}
		return -1, "", -1, kerr.InvalidRequest
	}
	if req.Version >= 4 {
		for _, key := range req.CoordinatorKeys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key = key
			var err *kerr.Error
			c.NodeID, c.Host, c.Port, err = find(key)
			c.ErrorCode = errCode(err)
			if err != nil {
				msg := err.Message
				c.ErrorMessage = &msg
			}
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp, nil
	}
	var err *kerr.Error
	resp.NodeID, resp.Host, resp.Port, err = find(req.CoordinatorKey)
	resp.ErrorCode = errCode(err)
	if err != nil && req.Version >= 1 {
		msg := err.Message
		resp.ErrorMessage = &msg
	}
	return resp, nil
}
