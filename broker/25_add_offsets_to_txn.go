package broker

// 25_add_offsets_to_txn.go — AddOffsetsToTxn v0-3 (KafkaApis.handleAddOffsetsToTxnRequest):
// the group's __consumer_offsets partition (GroupCoordinator.partitionFor, from
// offsets.topic.num.partitions) is added to the transaction like any partition, so that the
// transaction's markers reach the offsets the producer commits with TxnOffsetCommit. v0-1
// get INVALID_PRODUCER_EPOCH instead of PRODUCER_FENCED (KIP-588).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/coordinator/group"
)

func init() { registerAPI(0, 3, (*APIs).handleAddOffsetsToTxn) }

func (a *APIs) handleAddOffsetsToTxn(ctx context.Context, rc *RequestContext, req *kmsg.AddOffsetsToTxnRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	// KafkaApis: WRITE on the transactional id, then READ on the group.
	if !a.authorize(rc, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	if !a.authorize(rc, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	p := group.PartitionFor(req.Group, a.groupConfig().NumPartitions)
	code := a.txnCoordinator().HandleAddPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch,
		map[string][]int32{GroupMetadataTopicName: {p}})
	resp.ErrorCode = fencedForVersion(code, req.Version, 2)
	return resp, nil
}
