package controller

// Preferred-replica leader election and the auto leader rebalance task (KafkaController's
// AutoPreferredReplicaLeaderElection, checkAndTriggerAutoLeaderRebalance, onReplicaElection;
// Kafka 3.7). With auto.leader.rebalance.enable (default true) the controller checks every
// leader.imbalance.check.interval.seconds (first check 5 s after failover) and moves
// leadership back to preferred replicas when a broker's imbalance exceeds
// leader.imbalance.per.broker.percentage.

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// autoPreferredReplicaLeaderElectionEvent is the periodic rebalance check.
type autoPreferredReplicaLeaderElectionEvent struct{}

func (autoPreferredReplicaLeaderElectionEvent) String() string {
	return "AutoPreferredReplicaLeaderElection"
}

// firstRebalanceDelay is Kafka's delay of the first check after failover.
const firstRebalanceDelay = 5 * time.Second

// scheduleAutoRebalance arms the next rebalance check (no-op when disabled).
func (l *eventLoop) scheduleAutoRebalance(d time.Duration) {
	if l.cfg.DisableAutoLeaderRebalance {
		return
	}
	if l.rebalanceTimer != nil {
		l.rebalanceTimer.Stop()
	}
	l.rebalanceTimer = time.AfterFunc(d, func() { l.queue.put(autoPreferredReplicaLeaderElectionEvent{}) })
}

func (l *eventLoop) onAutoPreferredReplicaLeaderElection() error {
	defer l.scheduleAutoRebalance(l.cfg.LeaderImbalanceCheckInterval)
	candidates := l.ctx.autoRebalanceCandidates(l.cfg.LeaderImbalancePerBrokerPercentage)
	if len(candidates) == 0 {
		return nil
	}
	l.log.WithField("partitions", len(candidates)).Info("auto leader rebalance: preferred replica election")
	return l.preferredReplicaElection(candidates)
}

// preferredReplicaElection is onReplicaElection with the preferred strategy (re-reading the
// states first, retrying BADVERSION conflicts).
func (l *eventLoop) preferredReplicaElection(tps []TopicPartition) error {
	b := newRequestBatch()
	for attempt := 0; len(tps) > 0 && attempt < maxElectionAttempts; attempt++ {
		if err := l.refreshPartitionStates(tps); err != nil {
			return err
		}
		ups, failed := l.ctx.decidePreferredElection(tps)
		for _, f := range failed {
			l.stateLog.WithFields(logrus.Fields{"topic": f.tp.Topic, "partition": f.tp.Partition, "reason": f.why}).
				Info("preferred replica election not possible")
		}
		retry, err := l.applyUpdates(ups, b)
		if err != nil {
			return err
		}
		tps = retry
	}
	l.sendBatch(b)
	return nil
}

// electLeadersEvent is an admin's ElectLeaders request (Kafka: ReplicaLeaderElection).
type electLeadersEvent struct {
	req   *kmsg.ElectLeadersRequest
	reply chan *kmsg.ElectLeadersResponse
}

func (electLeadersEvent) String() string { return "ReplicaLeaderElection" }

// ElectLeaders handles ElectLeaders (API 43) on the controller broker: a preferred or
// unclean election for the listed partitions (all partitions when the list is null),
// processed in order with the other controller events. A broker that is not the active
// controller answers NOT_CONTROLLER for every partition.
func (c *Controller) ElectLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) *kmsg.ElectLeadersResponse {
	resp, code := askLoop(ctx, c, kerr.NotController.Code, func(reply chan *kmsg.ElectLeadersResponse) event {
		return electLeadersEvent{req: req, reply: reply}
	})
	if code != 0 {
		return electLeadersError(req, code)
	}
	return resp
}

// electLeadersError answers every listed partition with code.
func electLeadersError(req *kmsg.ElectLeadersRequest, code int16) *kmsg.ElectLeadersResponse {
	resp := kmsg.NewPtrElectLeadersResponse()
	resp.SetVersion(req.GetVersion())
	for _, t := range req.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// Election types of ElectLeaders v1+.
const (
	electionPreferred int8 = 0
	electionUnclean   int8 = 1
)

// onElectLeaders is processReplicaLeaderElection / onReplicaElection for an admin request.
func (l *eventLoop) onElectLeaders(req *kmsg.ElectLeadersRequest) (*kmsg.ElectLeadersResponse, error) {
	electionType := electionPreferred
	if req.GetVersion() >= 1 {
		electionType = req.ElectionType
	}
	var tps []TopicPartition
	if req.Topics == nil {
		tps = l.ctx.allPartitions()
	} else {
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				tps = append(tps, TopicPartition{t.Topic, p})
			}
		}
	}
	type result struct {
		code int16
		msg  string
	}
	results := map[TopicPartition]result{}
	var candidates []TopicPartition
	for _, tp := range tps {
		st, hasState := l.ctx.partitionLeadership[tp]
		replicas := l.ctx.replicas(tp)
		switch {
		case len(replicas) == 0 || l.ctx.topicsToDelete[tp.Topic]:
			results[tp] = result{kerr.UnknownTopicOrPartition.Code, "The partition does not exist."}
		case electionType == electionPreferred && hasState && st.Leader == replicas[0]:
			results[tp] = result{kerr.ElectionNotNeeded.Code, "Leader election not needed for topic partition."}
		case electionType == electionUnclean && hasState && l.ctx.isLive(st.Leader):
			results[tp] = result{kerr.ElectionNotNeeded.Code, "Leader election not needed for topic partition."}
		default:
			candidates = append(candidates, tp)
		}
	}
	if len(candidates) > 0 {
		if electionType == electionUnclean {
			b := newRequestBatch()
			if err := l.electOffline(candidates, true, b); err != nil {
				return nil, err
			}
			l.sendBatch(b)
		} else if err := l.preferredReplicaElection(candidates); err != nil {
			return nil, err
		}
	}
	for _, tp := range candidates {
		st, ok := l.ctx.partitionLeadership[tp]
		switch {
		case electionType == electionUnclean && ok && l.ctx.isLive(st.Leader):
			results[tp] = result{}
		case electionType == electionUnclean:
			results[tp] = result{kerr.EligibleLeadersNotAvailable.Code, "Failed to elect leader for partition " + tp.String() + " under strategy OfflinePartitionLeaderElectionStrategy(true)"}
		case ok && st.Leader == l.ctx.replicas(tp)[0]:
			results[tp] = result{}
		default:
			results[tp] = result{kerr.PreferredLeaderNotAvailable.Code, "Failed to elect leader for partition " + tp.String() + " under strategy PreferredReplicaPartitionLeaderElectionStrategy"}
		}
	}
	resp := kmsg.NewPtrElectLeadersResponse()
	resp.SetVersion(req.GetVersion())
	idx := map[string]int{}
	for _, tp := range tps {
		i, ok := idx[tp.Topic]
		if !ok {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = tp.Topic
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
			idx[tp.Topic] = i
		}
		r := results[tp]
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition, rp.ErrorCode = tp.Partition, r.code
		if r.msg != "" {
			msg := r.msg
			rp.ErrorMessage = &msg
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp, nil
}
