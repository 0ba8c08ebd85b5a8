package broker

// 26_end_txn.go — EndTxn v0-3 (KafkaApis.handleEndTxnRequest →
// TransactionCoordinator.handleEndTransaction): commit or abort the producer's ongoing
// transaction. The answer comes once PrepareCommit/PrepareAbort is in __transaction_state
// with acks=-1; the markers are written afterwards. v0-1 get INVALID_PRODUCER_EPOCH instead
// of PRODUCER_FENCED (KIP-588).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 3, (*APIs).handleEndTxn) }

func (a *APIs) handleEndTxn(ctx context.Context, rc *RequestContext, req *kmsg.EndTxnRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if !a.authorize(rc, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID) { // KafkaApis
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	code := a.txnCoordinator().HandleEndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
	resp.ErrorCode = fencedForVersion(code, req.Version, 2)
	return resp, nil
}
