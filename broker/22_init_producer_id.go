package broker

// 22_init_producer_id.go — InitProducerId v0-4 (KafkaApis.handleInitProducerIdRequest +
// TransactionCoordinator.handleInitProducerId) for idempotent producers.
//
// With a null transactional id Kafka "blindly accepts" the request: a fresh producer id from
// the ProducerIdManager with epoch 0, whatever producer id/epoch a v3+ request carries (an
// idempotent producer bumps its epoch on its own, KIP-360, and partition leaders accept the
// bump at sequence 0). A producer id without an epoch, or the reverse, is INVALID_REQUEST.
//
// With a transactional id the transaction coordinator answers
// (TransactionCoordinator.handleInitProducerId: a new producer id, or the id's producer with
// its epoch bumped, fencing the previous producer; v3+ with the producer's current id and
// epoch for the KIP-360 bump); v0-3 get INVALID_PRODUCER_EPOCH instead of PRODUCER_FENCED
// (KIP-588). An empty transactional id is INVALID_REQUEST.

import (
	"context"
	"errors"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(0, 4, (*APIs).handleInitProducerID) }

func (a *APIs) handleInitProducerID(ctx context.Context, rc *RequestContext, req *kmsg.InitProducerIDRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	// KafkaApis: WRITE on the transactional id; without one, IDEMPOTENT_WRITE on the
	// cluster or WRITE on some topic.
	if req.TransactionalID != nil {
		if !a.authorize(rc, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, *req.TransactionalID) {
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return resp, nil
		}
	} else if !a.authorizeCluster(rc, kmsg.ACLOperationIdempotentWrite) &&
		!a.authorizeByResourceType(rc, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if (req.ProducerID == -1) != (req.ProducerEpoch == -1) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	if req.TransactionalID != nil {
		if *req.TransactionalID == "" {
			resp.ErrorCode = kerr.InvalidRequest.Code // as TransactionCoordinator: an empty id is invalid
			return resp, nil
		}
		pid, epoch, code := a.txnCoordinator().HandleInitProducerID(ctx, *req.TransactionalID, req.TransactionTimeoutMillis,
			req.ProducerID, req.ProducerEpoch)
		resp.ErrorCode = fencedForVersion(code, req.Version, 4)
		if code == 0 {
			resp.ProducerID, resp.ProducerEpoch = pid, epoch
		}
		if rc != nil && rc.Log != nil {
			rc.Log.WithFields(logrus.Fields{"transactional_id": *req.TransactionalID, "producer_id": pid, "producer_epoch": epoch,
				"error_code": code}).Debug("InitProducerId with a transactional id")
		}
		return resp, nil
	}
	id, err := a.producerIDManager().GenerateProducerID()
	if err != nil {
		var ke *kerr.Error
		if errors.As(err, &ke) {
			resp.ErrorCode = ke.Code
		} else {
			resp.ErrorCode = kerr.UnknownServerError.Code
		}
		if rc != nil && rc.Log != nil {
			rc.Log.WithError(err).Debug("InitProducerId failed")
		}
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	if rc != nil && rc.Log != nil {
		rc.Log.WithFields(logrus.Fields{"producer_id": id}).Debug("initialized producer id")
	}
	return resp, nil
}
