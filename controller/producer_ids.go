package controller

// AllocateProducerIds (API 67) on the controller: KafkaController.processAllocateProducerIds
// + ZkProducerIdManager.getNewProducerIdBlock (Kafka 3.7, ZK mode). A broker asks for a
// block of 1000 producer ids; the controller checks the broker's registration epoch and
// takes the block after the one in /latest_producer_id_block with a conditional setData on
// the znode's version (zkmeta.AllocateProducerIDBlock), retrying on a conflict.
//
// Deviation: Kafka queues this as a controller event; here it runs in the caller's
// goroutine after the same checks (active controller, broker epoch read from the broker's
// /brokers/ids znode, which is what the controller context caches). Uniqueness never
// depended on the event queue: it comes from the conditional update, which also holds
// across controller failover (an old and a new controller racing both re-read on BADVERSION).

import (
	"context"
	"errors"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// producerIDStore is the ZooKeeper call behind AllocateProducerIds.
type producerIDStore interface {
	AllocateProducerIDBlock(brokerID int32) (zkmeta.ProducerIDBlock, error)
}

// AllocateProducerIDs serves a broker's AllocateProducerIds request. A broker that is not
// the active controller answers NOT_CONTROLLER (the requester retries against the new one).
func (c *Controller) AllocateProducerIDs(ctx context.Context, req *kmsg.AllocateProducerIDsRequest) *kmsg.AllocateProducerIDsResponse {
	resp := kmsg.NewPtrAllocateProducerIDsResponse()
	resp.SetVersion(req.GetVersion())
	fail := func(code int16) *kmsg.AllocateProducerIDsResponse {
		resp.ErrorCode = code
		return resp
	}
	if !c.IsActive() {
		return fail(notControllerCode)
	}
	if ctx.Err() != nil {
		return fail(kerr.RequestTimedOut.Code)
	}
	pids, ok := c.zk.(producerIDStore)
	if !ok {
		return fail(kerr.UnknownServerError.Code)
	}
	log := c.log.WithFields(logrus.Fields{"broker_id": req.BrokerID, "broker_epoch": req.BrokerEpoch})
	info, err := c.zk.GetBroker(req.BrokerID)
	switch {
	case errors.Is(err, zkmeta.ErrNoNode):
		return fail(kerr.BrokerIDNotRegistered.Code)
	case err != nil:
		log.WithError(err).Warn("cannot read the broker registration for AllocateProducerIds")
		return fail(kerr.UnknownServerError.Code)
	case info.Epoch != req.BrokerEpoch:
		log.WithField("current_broker_epoch", info.Epoch).Info("stale broker epoch in AllocateProducerIds")
		return fail(kerr.StaleBrokerEpoch.Code)
	}
	block, err := pids.AllocateProducerIDBlock(req.BrokerID)
	if err != nil {
		log.WithError(err).Error("failed to allocate a producer id block")
		return fail(kerr.UnknownServerError.Code)
	}
	// A controller that lost its session while writing still wrote a block nobody else
	// has (the update was conditional): handing it out is safe.
	resp.ProducerIDStart = block.BlockStart
	resp.ProducerIDLen = int32(block.BlockEnd - block.BlockStart + 1)
	log.WithFields(logrus.Fields{"block_start": block.BlockStart, "block_end": block.BlockEnd}).
		Info("allocated producer id block")
	return resp
}
