package broker

// 22_init_producer_id.go — InitProducerId v0-4 (KafkaApis.handleInitProducerIdRequest +
// TransactionCoordinator.handleInitProducerId) for idempotent producers.
//
// With a null transactional id Kafka "blindly accepts" the request: a fresh producer id from
// the ProducerIdManager with epoch 0, whatever producer id/epoch a v3+ request carries (an
// idempotent producer bumps its epoch on its own, KIP-360, and partition leaders accept the
// bump at sequence 0). A producer id without an epoch, or the reverse, is INVALID_REQUEST.
//
// Deviation: samsa has no transaction coordinator yet, so a transactional id is answered
// COORDINATOR_NOT_AVAILABLE (what a client sees while no broker can coordinate transactions);
// clients retry, so transactional producers cannot start.

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
	if (req.ProducerID == -1) != (req.ProducerEpoch == -1) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	if req.TransactionalID != nil {
		if *req.TransactionalID == "" {
			resp.ErrorCode = kerr.InvalidRequest.Code // as TransactionCoordinator: an empty id is invalid
		} else {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
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
