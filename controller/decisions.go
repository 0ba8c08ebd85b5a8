package controller

// The controller's decisions: plain functions of the controllerContext returning the partition
// state znode writes to make (the writes decide which LeaderAndIsr requests follow). They do no
// I/O; the event loop (loop.go) reads ZooKeeper before calling them and performs the writes after.
// Kafka counterparts: PartitionStateMachine.initializeLeaderAndIsrForPartitions and
// doElectLeaderForPartitions, ReplicaStateMachine.doRemoveReplicasFromIsr.

import (
	"slices"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// partitionUpdate is one decided write of a partition state znode.
type partitionUpdate struct {
	tp     TopicPartition
	create bool // NewPartition → OnlinePartition: create the znode (fails if it exists)
	// state is the new value; for an update, state.PartitionEpoch is the expected zkVersion.
	state zkmeta.PartitionState
	// recipients get LeaderAndIsr once the write succeeds (filtered to live brokers).
	recipients []int32
	isNew      bool
	// after is the PartitionStateMachine state once written (OnlinePartition for elections,
	// unchanged for ISR shrinks).
	after PartitionState
	why   string // for the state-change log
}

// failedPartition is a partition the decision could not move, and why.
type failedPartition struct {
	tp  TopicPartition
	why string
}

// decideNewPartitions is NewPartition → OnlinePartition: leader = first live assigned replica,
// ISR = live assigned replicas, leader epoch 0.
func (c *controllerContext) decideNewPartitions(tps []TopicPartition) ([]partitionUpdate, []failedPartition) {
	var ups []partitionUpdate
	var failed []failedPartition
	for _, tp := range tps {
		replicas := c.replicas(tp)
		res, ok := initialLeaderAndISR(replicas, c.onlineFor(tp))
		if !ok {
			failed = append(failed, failedPartition{tp, "no assigned replica is alive"})
			continue
		}
		ups = append(ups, partitionUpdate{
			tp:     tp,
			create: true,
			state: zkmeta.PartitionState{
				LeaderAndIsr:    zkmeta.LeaderAndIsr{Leader: res.Leader, LeaderEpoch: 0, ISR: res.ISR},
				ControllerEpoch: c.epoch,
			},
			recipients: slices.Clone(replicas),
			isNew:      true,
			after:      OnlinePartition,
			why:        "new partition",
		})
	}
	return ups, failed
}

// decideOfflineElection is OfflinePartition/OnlinePartition → OnlinePartition with the offline
// strategy, from the partition states in the context (read from ZooKeeper just before).
// uncleanDefault is the broker's unclean.leader.election.enable; a topic override wins;
// forceUnclean (ElectLeaders with UNCLEAN) allows it regardless.
func (c *controllerContext) decideOfflineElection(tps []TopicPartition, uncleanDefault, forceUnclean bool) ([]partitionUpdate, []failedPartition) {
	var ups []partitionUpdate
	var failed []failedPartition
	for _, tp := range tps {
		st, ok := c.partitionLeadership[tp]
		if !ok {
			failed = append(failed, failedPartition{tp, "no partition state in zookeeper"})
			continue
		}
		if st.ControllerEpoch > c.epoch {
			failed = append(failed, failedPartition{tp, "partition state written by a newer controller"})
			continue
		}
		unclean := uncleanDefault
		if t := c.topics[tp.Topic]; t != nil && t.unclean != nil {
			unclean = *t.unclean
		}
		unclean = unclean || forceUnclean
		replicas := c.replicas(tp)
		res, ok := offlinePartitionLeaderElection(replicas, st.ISR, c.onlineFor(tp), unclean)
		if !ok {
			failed = append(failed, failedPartition{tp, "no replica in the ISR is alive"})
			continue
		}
		next := st
		next.Leader = res.Leader
		next.ISR = res.ISR
		next.LeaderEpoch = st.LeaderEpoch + 1
		next.ControllerEpoch = c.epoch
		if res.Unclean {
			next.LeaderRecoveryState = int32(LeaderRecovering)
		}
		why := "offline partition election"
		if res.Unclean {
			why = "unclean offline partition election"
		}
		ups = append(ups, partitionUpdate{tp: tp, state: next, recipients: slices.Clone(replicas), after: OnlinePartition, why: why})
	}
	return ups, failed
}

// decideRemoveReplicaFromISR is the OfflineReplica transition of replica for tps: partitions
// whose ISR holds it lose it (the leader becomes -1 if it led; a last ISR member stays), leader
// epoch + 1. LeaderAndIsr goes to the other replicas.
func (c *controllerContext) decideRemoveReplicaFromISR(replica int32, tps []TopicPartition) []partitionUpdate {
	var ups []partitionUpdate
	for _, tp := range tps {
		st, ok := c.partitionLeadership[tp]
		if !ok || !slices.Contains(st.ISR, replica) || st.ControllerEpoch > c.epoch {
			continue
		}
		next := st
		next.Leader, next.ISR = removeReplicaFromISR(st.Leader, st.ISR, replica)
		next.LeaderEpoch = st.LeaderEpoch + 1
		next.ControllerEpoch = c.epoch
		var recipients []int32
		for _, r := range c.replicas(tp) {
			if r != replica {
				recipients = append(recipients, r)
			}
		}
		after := c.partitionStates[tp]
		ups = append(ups, partitionUpdate{tp: tp, state: next, recipients: recipients, after: after,
			why: "replica offline: removed from ISR"})
	}
	return ups
}

// initialPartitionState is PartitionStateMachine.initializePartitionState at failover: a
// partition with a live leader is Online, with a state znode but no live leader Offline,
// without one New.
func (c *controllerContext) initialPartitionState(tp TopicPartition) PartitionState {
	st, ok := c.partitionLeadership[tp]
	switch {
	case !ok:
		return NewPartition
	case c.isReplicaOnline(st.Leader, tp):
		return OnlinePartition
	default:
		return OfflinePartition
	}
}

// decideControlledShutdownElection moves leadership of tps away from brokers shutting down
// (PartitionStateMachine with ControlledShutdownPartitionLeaderElectionStrategy): the first
// assigned replica that is registered, in the ISR and not shutting down; the ISR loses the
// shutting-down brokers; leader epoch + 1. LeaderAndIsr goes to every registered replica.
func (c *controllerContext) decideControlledShutdownElection(tps []TopicPartition) ([]partitionUpdate, []failedPartition) {
	var ups []partitionUpdate
	var failed []failedPartition
	shutting := func(id int32) bool { return c.shuttingDown[id] }
	for _, tp := range tps {
		st, ok := c.partitionLeadership[tp]
		if !ok {
			failed = append(failed, failedPartition{tp, "no partition state in zookeeper"})
			continue
		}
		if st.ControllerEpoch > c.epoch {
			failed = append(failed, failedPartition{tp, "partition state written by a newer controller"})
			continue
		}
		replicas := c.replicas(tp)
		online := func(id int32) bool { return c.isReplicaOnlineOrShuttingDown(id, tp) }
		res, ok := controlledShutdownPartitionLeaderElection(replicas, st.ISR, online, shutting)
		if !ok {
			failed = append(failed, failedPartition{tp, "no other replica in the ISR is alive"})
			continue
		}
		next := st
		next.Leader, next.ISR = res.Leader, res.ISR
		next.LeaderEpoch = st.LeaderEpoch + 1
		next.ControllerEpoch = c.epoch
		var recipients []int32
		for _, r := range replicas {
			if c.isRegistered(r) {
				recipients = append(recipients, r)
			}
		}
		ups = append(ups, partitionUpdate{tp: tp, state: next, recipients: recipients, after: OnlinePartition,
			why: "controlled shutdown election"})
	}
	return ups, failed
}

// decidePreferredElection is OnlinePartition → OnlinePartition with the preferred-replica
// strategy: assignment[0] becomes leader if it is live and in the ISR; the ISR is unchanged;
// leader epoch + 1. Partitions already led by their preferred replica are not moved.
func (c *controllerContext) decidePreferredElection(tps []TopicPartition) ([]partitionUpdate, []failedPartition) {
	var ups []partitionUpdate
	var failed []failedPartition
	for _, tp := range tps {
		st, ok := c.partitionLeadership[tp]
		if !ok {
			failed = append(failed, failedPartition{tp, "no partition state in zookeeper"})
			continue
		}
		replicas := c.replicas(tp)
		if len(replicas) > 0 && st.Leader == replicas[0] {
			continue // election not needed
		}
		if st.ControllerEpoch > c.epoch {
			failed = append(failed, failedPartition{tp, "partition state written by a newer controller"})
			continue
		}
		res, ok := preferredReplicaPartitionLeaderElection(replicas, st.ISR, c.onlineFor(tp))
		if !ok {
			failed = append(failed, failedPartition{tp, "preferred replica is not alive or not in the ISR"})
			continue
		}
		next := st
		next.Leader, next.ISR = res.Leader, res.ISR
		next.LeaderEpoch = st.LeaderEpoch + 1
		next.ControllerEpoch = c.epoch
		ups = append(ups, partitionUpdate{tp: tp, state: next, recipients: slices.Clone(replicas), after: OnlinePartition,
			why: "preferred replica election"})
	}
	return ups, failed
}

// autoRebalanceCandidates is checkAndTriggerAutoLeaderRebalance's choice: for each broker,
// the partitions whose preferred replica it is; if more than imbalancePct percent of them are
// led by someone else, those whose preferred replica can lead now (live, in the ISR).
func (c *controllerContext) autoRebalanceCandidates(imbalancePct int) []TopicPartition {
	byPreferred := map[int32][]TopicPartition{}
	for _, tp := range c.allPartitions() {
		if c.topicsToDelete[tp.Topic] {
			continue
		}
		if rs := c.replicas(tp); len(rs) > 0 {
			byPreferred[rs[0]] = append(byPreferred[rs[0]], tp)
		}
	}
	var out []TopicPartition
	for _, b := range sortedKeys(byPreferred) {
		tps := byPreferred[b]
		var notPreferred []TopicPartition
		for _, tp := range tps {
			if st, ok := c.partitionLeadership[tp]; ok && st.Leader != b {
				notPreferred = append(notPreferred, tp)
			}
		}
		if float64(len(notPreferred))/float64(len(tps)) <= float64(imbalancePct)/100 {
			continue
		}
		for _, tp := range notPreferred {
			st := c.partitionLeadership[tp]
			if _, ok := preferredReplicaPartitionLeaderElection(c.replicas(tp), st.ISR, c.onlineFor(tp)); ok {
				out = append(out, tp)
			}
		}
	}
	slices.SortFunc(out, compareTP)
	return out
}
