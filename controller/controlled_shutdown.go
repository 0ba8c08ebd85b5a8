package controller

// ControlledShutdown (API 7) on the controller: KafkaController.doControlledShutdown (Kafka
// 3.7). The broker joins the shutting-down set (never elected again while registered); the
// partitions it leads (replication factor > 1) elect another ISR member; for the partitions it
// follows it gets StopReplica(delete=false) and leaves the ISR. The answer lists the
// partitions it still leads, and the broker retries until none remain.

import (
	"context"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type controlledShutdownEvent struct {
	req   *kmsg.ControlledShutdownRequest
	reply chan *kmsg.ControlledShutdownResponse
}

func (controlledShutdownEvent) String() string { return "ControlledShutdown" }

// ControlledShutdown handles a broker's ControlledShutdown request on the controller broker,
// in order with the other controller events. A broker that is not the active controller
// answers STALE_CONTROLLER_EPOCH, as Kafka's doControlledShutdown does (ControllerMovedException).
func (c *Controller) ControlledShutdown(ctx context.Context, req *kmsg.ControlledShutdownRequest) *kmsg.ControlledShutdownResponse {
	resp, code := askLoop(ctx, c, kerr.StaleControllerEpoch.Code, func(reply chan *kmsg.ControlledShutdownResponse) event {
		return controlledShutdownEvent{req: req, reply: reply}
	})
	if code != 0 {
		return controlledShutdownError(req, code)
	}
	return resp
}

func controlledShutdownError(req *kmsg.ControlledShutdownRequest, code int16) *kmsg.ControlledShutdownResponse {
	resp := kmsg.NewPtrControlledShutdownResponse()
	resp.SetVersion(req.GetVersion())
	resp.ErrorCode = code
	return resp
}

func (l *eventLoop) onControlledShutdown(req *kmsg.ControlledShutdownRequest) (*kmsg.ControlledShutdownResponse, error) {
	id := req.BrokerID
	info, ok := l.ctx.liveBrokers[id]
	if !ok {
		return controlledShutdownError(req, kerr.BrokerNotAvailable.Code), nil
	}
	if req.GetVersion() >= 2 && req.BrokerEpoch != -1 && req.BrokerEpoch < info.Epoch {
		return controlledShutdownError(req, kerr.StaleBrokerEpoch.Code), nil
	}
	l.log.WithField("target_broker", id).Info("shutting down broker")
	l.ctx.shuttingDown[id] = true

	var led, followed []TopicPartition
	for _, tp := range l.ctx.partitionsOnBroker(id) {
		st, ok := l.ctx.partitionLeadership[tp]
		if len(l.ctx.replicas(tp)) <= 1 || !ok || l.ctx.topicsToDelete[tp.Topic] {
			continue
		}
		if st.Leader == id {
			led = append(led, tp)
		} else {
			followed = append(followed, tp)
		}
	}
	b := newRequestBatch()
	for attempt := 0; len(led) > 0 && attempt < maxElectionAttempts; attempt++ {
		if err := l.refreshPartitionStates(led); err != nil {
			return nil, err
		}
		ups, failed := l.ctx.decideControlledShutdownElection(led)
		for _, f := range failed {
			l.stateLog.WithFields(logrus.Fields{"topic": f.tp.Topic, "partition": f.tp.Partition, "reason": f.why}).
				Warn("cannot move leadership for controlled shutdown")
		}
		retry, err := l.applyUpdates(ups, b)
		if err != nil {
			return nil, err
		}
		led = retry
	}
	l.sendBatch(b)

	b = newRequestBatch()
	for _, tp := range followed {
		b.addStopReplica(l.ctx, []int32{id}, tp, false)
	}
	l.sendBatch(b)
	if err := l.removeReplicaFromISRs(id, followed); err != nil {
		return nil, err
	}

	resp := kmsg.NewPtrControlledShutdownResponse()
	resp.SetVersion(req.GetVersion())
	// replicatedPartitionsBrokerLeads: RF 1 partitions (left offline) and topics queued for
	// deletion do not hold a shutdown back.
	for _, tp := range l.ctx.partitionsLedBy(id) {
		if len(l.ctx.replicas(tp)) <= 1 || l.ctx.topicsToDelete[tp.Topic] {
			continue
		}
		resp.PartitionsRemaining = append(resp.PartitionsRemaining, kmsg.ControlledShutdownResponsePartitionsRemaining{Topic: tp.Topic, Partition: tp.Partition})
	}
	return resp, nil
}
