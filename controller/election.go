package controller

// This file mirrors kafka.controller.Election / PartitionLeaderElectionAlgorithms (Kafka 3.7):
// pure functions of the assignment, the ISR and the set of live brokers. The assignment
// order is the preference order.

import "slices"

// Leader recovery states (KIP-704), as in the partition state znode and LeaderAndIsr.
const (
	LeaderRecovered  int8 = 0
	LeaderRecovering int8 = 1
)

// NoLeader is LeaderAndIsr.NoLeader: the partition has no leader.
const NoLeader int32 = -1

// electionResult is the outcome of one successful election: the new leader and ISR.
type electionResult struct {
	Leader  int32
	ISR     []int32
	Unclean bool // chosen outside the ISR: leader_recovery_state becomes RECOVERING
}

// offlinePartitionLeaderElection is PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection:
// the first assigned replica that is live and in the ISR; when none is and unclean election
// is allowed, the first live assigned replica. The new ISR is the live part of the old ISR,
// or just the leader after an unclean election.
func offlinePartitionLeaderElection(assignment, isr []int32, live func(int32) bool, uncleanEnabled bool) (electionResult, bool) {
	for _, r := range assignment {
		if live(r) && slices.Contains(isr, r) {
			newISR := make([]int32, 0, len(isr))
			for _, i := range isr {
				if live(i) {
					newISR = append(newISR, i)
				}
			}
			return electionResult{Leader: r, ISR: newISR}, true
		}
	}
	if uncleanEnabled {
		for _, r := range assignment {
			if live(r) {
				return electionResult{Leader: r, ISR: []int32{r}, Unclean: true}, true
			}
		}
	}
	return electionResult{}, false
}

// preferredReplicaPartitionLeaderElection: assignment[0] if it is live and in the ISR; the
// ISR is unchanged.
func preferredReplicaPartitionLeaderElection(assignment, isr []int32, live func(int32) bool) (electionResult, bool) {
	if len(assignment) == 0 {
		return electionResult{}, false
	}
	p := assignment[0]
	if live(p) && slices.Contains(isr, p) {
		return electionResult{Leader: p, ISR: slices.Clone(isr)}, true
	}
	return electionResult{}, false
}

// reassignPartitionLeaderElection: the first target replica that is live and in the ISR; ISR unchanged.
func reassignPartitionLeaderElection(targetReplicas, isr []int32, live func(int32) bool) (electionResult, bool) {
	for _, r := range targetReplicas {
		if live(r) && slices.Contains(isr, r) {
			return electionResult{Leader: r, ISR: slices.Clone(isr)}, true
		}
	}
	return electionResult{}, false
}

// controlledShutdownPartitionLeaderElection: the first assigned replica that is live, in the
// ISR and not shutting down; the new ISR drops the shutting-down brokers.
func controlledShutdownPartitionLeaderElection(assignment, isr []int32, live func(int32) bool, shuttingDown func(int32) bool) (electionResult, bool) {
	for _, r := range assignment {
		if live(r) && slices.Contains(isr, r) && !shuttingDown(r) {
			newISR := make([]int32, 0, len(isr))
			for _, i := range isr {
				if !shuttingDown(i) {
					newISR = append(newISR, i)
				}
			}
			return electionResult{Leader: r, ISR: newISR}, true
		}
	}
	return electionResult{}, false
}

// initialLeaderAndISR is NewPartition → OnlinePartition: leader = first live assigned
// replica, ISR = all live assigned replicas.
func initialLeaderAndISR(assignment []int32, live func(int32) bool) (electionResult, bool) {
	var isr []int32
	for _, r := range assignment {
		if live(r) {
			isr = append(isr, r)
		}
	}
	if len(isr) == 0 {
		return electionResult{}, false
	}
	return electionResult{Leader: isr[0], ISR: isr}, true
}

// removeReplicaFromISR is ReplicaStateMachine.doRemoveReplicasFromIsr for one partition whose
// ISR contains replica: the leader becomes NoLeader if it was that replica, and the replica
// leaves the ISR unless it is the last member (Kafka never writes an empty ISR).
func removeReplicaFromISR(leader int32, isr []int32, replica int32) (newLeader int32, newISR []int32) {
	newLeader = leader
	if leader == replica {
		newLeader = NoLeader
	}
	if len(isr) == 1 {
		return newLeader, slices.Clone(isr)
	}
	for _, r := range isr {
		if r != replica {
			newISR = append(newISR, r)
		}
	}
	return newLeader, newISR
}
