package controller

// AlterPartition (API 56) on the controller: KafkaController.processAlterPartition (Kafka 3.7,
// ZK mode). The leader proposes a new ISR; the controller accepts it only for the current
// leader epoch and partition epoch, writes the state znode conditionally on its zkVersion,
// answers with the new state and sends UpdateMetadata.

import (
	"slices"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// alterPartitionDecision is the pure part: validate one proposed partition change against
// the context. ok=false with an error code when rejected; when accepted, next is the state to
// write (PartitionEpoch = expected zkVersion). alreadyApplied: the proposal equals the current
// state (a retry whose write succeeded): answer with the current state, write nothing.
func (c *controllerContext) decideAlterPartition(version int16, brokerID int32, tp TopicPartition, leaderEpoch int32, newISR []int32, recovery int8, partitionEpoch int32) (next zkmeta.PartitionState, code int16, alreadyApplied bool) {
	cur, ok := c.partitionLeadership[tp]
	if !ok || c.topics[tp.Topic] == nil {
		return cur, kerr.UnknownTopicOrPartition.Code, false
	}
	if leaderEpoch != cur.LeaderEpoch {
		return cur, kerr.FencedLeaderEpoch.Code, false
	}
	if cur.Leader == brokerID && slices.Equal(newISR, cur.ISR) && int32(recovery) == cur.LeaderRecoveryState {
		return cur, 0, true
	}
	if partitionEpoch != cur.PartitionEpoch {
		return cur, kerr.InvalidUpdateVersion.Code, false
	}
	if recovery == LeaderRecovering && len(newISR) > 1 {
		return cur, kerr.InvalidRequest.Code, false
	}
	if cur.LeaderRecoveryState == int32(LeaderRecovered) && recovery == LeaderRecovering {
		return cur, kerr.InvalidRequest.Code, false
	}
	for _, r := range newISR {
		if !c.isLive(r) {
			if version > 1 {
				return cur, kerr.IneligibleReplica.Code, false
			}
			return cur, kerr.OperationNotAttempted.Code, false
		}
	}
	next = cur
	next.ISR = slices.Clone(newISR)
	next.LeaderRecoveryState = int32(recovery)
	next.ControllerEpoch = c.epoch
	return next, 0, false
}

func (l *eventLoop) onAlterPartition(req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	resp := kmsg.NewPtrAlterPartitionResponse()
	resp.SetVersion(req.GetVersion())
	if info, ok := l.ctx.liveBrokers[req.BrokerID]; !ok || (req.BrokerEpoch != -1 && info.Epoch > req.BrokerEpoch) {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp, nil
	}
	byID := map[[16]byte]string{}
	for name, t := range l.ctx.topics {
		byID[t.id] = name
	}
	b := newRequestBatch()
	var updated []TopicPartition
	for _, rt := range req.Topics {
		name := rt.Topic
		if req.GetVersion() >= 2 {
			name = byID[rt.TopicID]
		}
		ot := kmsg.NewAlterPartitionResponseTopic()
		ot.Topic, ot.TopidID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			op := kmsg.NewAlterPartitionResponseTopicPartition()
			op.Partition = rp.Partition
			tp := TopicPartition{name, rp.Partition}
			if name == "" {
				op.ErrorCode = kerr.UnknownTopicID.Code
				ot.Partitions = append(ot.Partitions, op)
				continue
			}
			isr := rp.NewISR
			if req.GetVersion() >= 3 {
				isr = nil
				for _, e := range rp.NewEpochISR {
					isr = append(isr, e.BrokerID)
				}
			}
			next, code, applied := l.ctx.decideAlterPartition(req.GetVersion(), req.BrokerID, tp, rp.LeaderEpoch, isr, rp.LeaderRecoveryState, rp.PartitionEpoch)
			if code == 0 && !applied {
				v, err := l.zk.UpdatePartitionState(tp.Topic, tp.Partition, next, next.PartitionEpoch, l.ctx.epochZkVersion)
				switch {
				case err == nil:
					next.PartitionEpoch = v
					l.ctx.partitionLeadership[tp] = next
					updated = append(updated, tp)
					if l.ctx.partitionsReassigning[tp] {
						l.queue.put(partitionReassignmentIsrChangeEvent{tp: tp})
					}
					l.stateLog.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "leader": next.Leader,
						"leader_epoch": next.LeaderEpoch, "isr": next.ISR, "partition_epoch": v}).Info("ISR changed by AlterPartition")
				case isFatal(err):
					return nil, err
				default:
					// BADVERSION: the znode moved under us; the leader will get the new state.
					code = kerr.InvalidUpdateVersion.Code
				}
			}
			op.ErrorCode = code
			if code == 0 {
				op.LeaderID, op.LeaderEpoch, op.ISR = next.Leader, next.LeaderEpoch, slices.Clone(next.ISR)
				op.LeaderRecoveryState = int8(next.LeaderRecoveryState)
				op.PartitionEpoch = next.PartitionEpoch
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	if len(updated) > 0 {
		b.addUpdateMetadata(l.ctx.liveOrShuttingDownBrokerIDs(), updated)
		l.sendBatch(b)
	}
	return resp, nil
}

// alterPartitionError is a response with only a top-level error, as Kafka sends for
// NOT_CONTROLLER and STALE_BROKER_EPOCH.
func alterPartitionError(req *kmsg.AlterPartitionRequest, code int16) *kmsg.AlterPartitionResponse {
	resp := kmsg.NewPtrAlterPartitionResponse()
	resp.SetVersion(req.GetVersion())
	resp.ErrorCode = code
	return resp
}
