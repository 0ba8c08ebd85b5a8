package controller

// This file mirrors kafka.controller.ControllerContext and the partition/replica states of
// PartitionStateMachine and ReplicaStateMachine (Kafka 3.7).

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

func compareTP(a, b TopicPartition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// PartitionState is a partition's state in the PartitionStateMachine.
type PartitionState int8

// Kafka's partition states.
const (
	NonExistentPartition PartitionState = iota
	NewPartition
	OnlinePartition
	OfflinePartition
)

func (s PartitionState) String() string {
	switch s {
	case NewPartition:
		return "NewPartition"
	case OnlinePartition:
		return "OnlinePartition"
	case OfflinePartition:
		return "OfflinePartition"
	default:
		return "NonExistentPartition"
	}
}

// controllerContext is Kafka's ControllerContext: the controller's cache of the cluster.
// Owned by the event loop goroutine; never shared.
type controllerContext struct {
	epoch          int32
	epochZkVersion int32

	// liveBrokers are the registered brokers (Kafka's liveOrShuttingDownBrokers), with
	// Epoch = czxid; shuttingDown those in a controlled shutdown, never chosen as leaders.
	liveBrokers  map[int32]zkmeta.BrokerInfo
	shuttingDown map[int32]bool
	topics       map[string]*topicInfo
	// partitionLeadership is the last known state znode of each partition (with
	// PartitionEpoch = zkVersion); absent for partitions that have none yet.
	partitionLeadership map[TopicPartition]zkmeta.PartitionState
	partitionStates     map[TopicPartition]PartitionState
	topicsToDelete      map[string]bool
	// deletion tracks started topic deletions: the replicas whose StopReplica(delete=true)
	// has not yet succeeded (TopicDeletionManager's ReplicaDeletionStarted replicas).
	deletion map[string]map[TopicPartition]map[int32]bool
	// reassigning is partitionsBeingReassigned; zkReassigning those started from
	// /admin/reassign_partitions (removed from the znode when they complete).
	partitionsReassigning map[TopicPartition]bool
	zkReassigning         map[TopicPartition]bool
	// replicasOnOfflineDirs are, per live broker, the replicas it answered KAFKA_STORAGE_ERROR
	// for (their log dir failed). They count as offline until the broker registers again.
	replicasOnOfflineDirs map[int32]map[TopicPartition]bool
}

type topicInfo struct {
	id         [16]byte
	zkVersion  int32
	assignment map[int32][]int32
	adding     map[int32][]int32
	removing   map[int32][]int32
	unclean    *bool // unclean.leader.election.enable topic override; nil = broker default
}

func newControllerContext(epoch, epochZkVersion int32) *controllerContext {
	return &controllerContext{
		epoch:                 epoch,
		epochZkVersion:        epochZkVersion,
		liveBrokers:           map[int32]zkmeta.BrokerInfo{},
		shuttingDown:          map[int32]bool{},
		topics:                map[string]*topicInfo{},
		partitionLeadership:   map[TopicPartition]zkmeta.PartitionState{},
		partitionStates:       map[TopicPartition]PartitionState{},
		topicsToDelete:        map[string]bool{},
		deletion:              map[string]map[TopicPartition]map[int32]bool{},
		partitionsReassigning: map[TopicPartition]bool{},
		zkReassigning:         map[TopicPartition]bool{},
		replicasOnOfflineDirs: map[int32]map[TopicPartition]bool{},
	}
}

// isLive is Kafka's liveBrokerIds membership: registered and not shutting down. Elections
// and ISR eligibility use it.
func (c *controllerContext) isLive(id int32) bool { return c.isRegistered(id) && !c.shuttingDown[id] }

// isRegistered is liveOrShuttingDownBrokerIds membership: the broker gets requests.
func (c *controllerContext) isRegistered(id int32) bool { _, ok := c.liveBrokers[id]; return ok }

// isReplicaOnline is ControllerContext.isReplicaOnline: the broker is live (not shutting
// down) and the replica is not on one of its failed log dirs. Elections use it.
func (c *controllerContext) isReplicaOnline(id int32, tp TopicPartition) bool {
	return c.isLive(id) && !c.replicasOnOfflineDirs[id][tp]
}

// isReplicaOnlineOrShuttingDown is isReplicaOnline with includeShuttingDownBrokers.
func (c *controllerContext) isReplicaOnlineOrShuttingDown(id int32, tp TopicPartition) bool {
	return c.isRegistered(id) && !c.replicasOnOfflineDirs[id][tp]
}

// onlineFor returns isReplicaOnline for one partition, in the shape the election functions take.
func (c *controllerContext) onlineFor(tp TopicPartition) func(int32) bool {
	return func(id int32) bool { return c.isReplicaOnline(id, tp) }
}

func (c *controllerContext) liveOrShuttingDownBrokerIDs() []int32 {
	ids := make([]int32, 0, len(c.liveBrokers))
	for id := range c.liveBrokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (c *controllerContext) replicas(tp TopicPartition) []int32 {
	t := c.topics[tp.Topic]
	if t == nil {
		return nil
	}
	return t.assignment[tp.Partition]
}

// allPartitions returns every known partition, sorted.
func (c *controllerContext) allPartitions() []TopicPartition {
	var out []TopicPartition
	for name, t := range c.topics {
		for p := range t.assignment {
			out = append(out, TopicPartition{name, p})
		}
	}
	slices.SortFunc(out, compareTP)
	return out
}

// partitionsOnBroker returns the partitions with a replica on broker id, sorted.
func (c *controllerContext) partitionsOnBroker(id int32) []TopicPartition {
	var out []TopicPartition
	for _, tp := range c.allPartitions() {
		if slices.Contains(c.replicas(tp), id) {
			out = append(out, tp)
		}
	}
	return out
}

// partitionsLedBy returns the partitions whose current leader is broker id, sorted.
func (c *controllerContext) partitionsLedBy(id int32) []TopicPartition {
	var out []TopicPartition
	for _, tp := range c.allPartitions() {
		if s, ok := c.partitionLeadership[tp]; ok && s.Leader == id {
			out = append(out, tp)
		}
	}
	return out
}

// partitionsInStates returns partitions whose PartitionStateMachine state is one of states, sorted.
func (c *controllerContext) partitionsInStates(states ...PartitionState) []TopicPartition {
	var out []TopicPartition
	for _, tp := range c.allPartitions() {
		if slices.Contains(states, c.partitionStates[tp]) {
			out = append(out, tp)
		}
	}
	return out
}

// offlineReplicas are the assigned replicas on brokers that are not live or on a failed log
// dir (UpdateMetadata's offline_replicas).
func (c *controllerContext) offlineReplicas(tp TopicPartition) []int32 {
	var out []int32
	for _, r := range c.replicas(tp) {
		if !c.isReplicaOnlineOrShuttingDown(r, tp) {
			out = append(out, r)
		}
	}
	return out
}
