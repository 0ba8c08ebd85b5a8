package controller

// This file mirrors org.apache.kafka.admin.AdminUtils.assignReplicasToBrokers (Kafka 3.7),
// which AdminZkClient uses for CreateTopics, auto-creation and CreatePartitions in ZK mode.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// BrokerMetadata is a broker as replica assignment sees it (kafka.admin.BrokerMetadata).
type BrokerMetadata struct {
	ID   int32
	Rack *string // nil when broker.rack is unset
}

// AssignmentError is a replica-assignment failure. Error() is Kafka's message (for the
// response's ErrorMessage); Unwrap gives the Kafka error code, e.g. kerr.InvalidReplicationFactor.
type AssignmentError struct {
	Code    *kerr.Error
	Message string
}

func (e *AssignmentError) Error() string { return e.Message }
func (e *AssignmentError) Unwrap() error { return e.Code }

// AssignReplicasToBrokers computes the replica lists of nPartitions new partitions numbered
// from startPartitionID (0 for a new topic), exactly as Kafka does. Brokers are sorted by id
// first, as AdminZkClient does before calling it. fixedStartIndex < 0 picks the start index
// and the replica shift at random, as Kafka does for a new topic; fixedStartIndex >= 0 uses it
// for both (AdminZkClient.createPartitions passes the index of the first replica of partition 0).
//
// Errors: nPartitions <= 0 → INVALID_PARTITIONS; rf < 1 or rf > brokers →
// INVALID_REPLICATION_FACTOR; racks on some brokers but not all → UNKNOWN_SERVER_ERROR
// (Kafka's AdminOperationException).
func AssignReplicasToBrokers(brokers []BrokerMetadata, nPartitions int32, rf int16, fixedStartIndex, startPartitionID int32) (map[int32][]int32, error) {
	if nPartitions <= 0 {
		return nil, &AssignmentError{kerr.InvalidPartitions, "Number of partitions must be larger than 0."}
	}
	if rf <= 0 {
		return nil, &AssignmentError{kerr.InvalidReplicationFactor, "Replication factor must be larger than 0."}
	}
	if int(rf) > len(brokers) {
		return nil, &AssignmentError{kerr.InvalidReplicationFactor,
			fmt.Sprintf("Replication factor: %d larger than available brokers: %d.", rf, len(brokers))}
	}
	sorted := slices.Clone(brokers)
	slices.SortFunc(sorted, func(a, b BrokerMetadata) int { return int(a.ID) - int(b.ID) })
	racked := 0
	for _, b := range sorted {
		if b.Rack != nil {
			racked++
		}
	}
	if racked == 0 {
		ids := make([]int32, len(sorted))
		for i, b := range sorted {
			ids[i] = b.ID
		}
		return assignRackUnaware(nPartitions, int(rf), ids, fixedStartIndex, startPartitionID), nil
	}
	if racked != len(sorted) {
		return nil, &AssignmentError{kerr.UnknownServerError, "Not all brokers have rack information for replica rack aware assignment."}
	}
	return assignRackAware(nPartitions, int(rf), sorted, fixedStartIndex, startPartitionID), nil
}

// startAndShift returns Kafka's startIndex and initial nextReplicaShift: both random in
// [0, n) unless fixed (two independent draws, as in Kafka).
func startAndShift(n int, fixedStartIndex int32) (int, int) {
	if fixedStartIndex >= 0 {
		return int(fixedStartIndex), int(fixedStartIndex)
	}
	return rand.IntN(n), rand.IntN(n)
}

func assignRackUnaware(nPartitions int32, rf int, brokers []int32, fixedStartIndex, startPartitionID int32) map[int32][]int32 {
	n := len(brokers)
	ret := make(map[int32][]int32, nPartitions)
	startIndex, shift := startAndShift(n, fixedStartIndex)
	p := max(0, int(startPartitionID))
	for range nPartitions {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := (p + startIndex) % n
		replicas := make([]int32, 0, rf)
		replicas = append(replicas, brokers[first])
		for j := 0; j < rf-1; j++ {
			replicas = append(replicas, brokers[replicaIndex(first, shift, j, n)])
		}
		ret[int32(p)] = replicas
		p++
	}
	return ret
}

func assignRackAware(nPartitions int32, rf int, brokers []BrokerMetadata, fixedStartIndex, startPartitionID int32) map[int32][]int32 {
	rackOf := make(map[int32]string, len(brokers))
	for _, b := range brokers {
		rackOf[b.ID] = *b.Rack
	}
	arranged := RackAlternatedBrokerList(rackOf)
	numRacks := len(racksOf(rackOf))
	n := len(arranged)
	ret := make(map[int32][]int32, nPartitions)
	startIndex, shift := startAndShift(n, fixedStartIndex)
	p := max(0, int(startPartitionID))
	for range nPartitions {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := (p + startIndex) % n
		leader := arranged[first]
		replicas := []int32{leader}
		racksUsed := map[string]bool{rackOf[leader]: true}
		brokersUsed := map[int32]bool{leader: true}
		k := 0
		for j := 0; j < rf-1; j++ {
			for {
				b := arranged[replicaIndex(first, shift*numRacks, k, n)]
				rack := rackOf[b]
				k++
				// Prefer a rack without a replica until every rack has one, and a broker
				// without a replica until every broker has one.
				if (!racksUsed[rack] || len(racksUsed) == numRacks) && (!brokersUsed[b] || len(brokersUsed) == n) {
					replicas = append(replicas, b)
					racksUsed[rack] = true
					brokersUsed[b] = true
					break
				}
			}
		}
		ret[int32(p)] = replicas
		p++
	}
	return ret
}

// RackAlternatedBrokerList is Kafka's getRackAlternatedBrokerList: racks sorted by name, each
// rack's brokers sorted by id, taken round-robin across racks.
// Example: r1:{0,5} r2:{3,4} r3:{1,2} → 0,3,1,5,4,2.
func RackAlternatedBrokerList(rackOf map[int32]string) []int32 {
	byRack := racksOf(rackOf)
	racks := make([]string, 0, len(byRack))
	for r := range byRack {
		racks = append(racks, r)
	}
	sort.Strings(racks)
	out := make([]int32, 0, len(rackOf))
	next := make(map[string]int, len(racks))
	for i := 0; len(out) < len(rackOf); i = (i + 1) % len(racks) {
		r := racks[i]
		if next[r] < len(byRack[r]) {
			out = append(out, byRack[r][next[r]])
			next[r]++
		}
	}
	return out
}

func racksOf(rackOf map[int32]string) map[string][]int32 {
	byRack := make(map[string][]int32)
	for id, r := range rackOf {
		byRack[r] = append(byRack[r], id)
	}
	for _, ids := range byRack {
		slices.Sort(ids)
	}
	return byRack
}

// replicaIndex is Kafka's AdminUtils.replicaIndex.
func replicaIndex(firstReplicaIndex, secondReplicaShift, replicaIndex, nBrokers int) int {
	shift := 1 + (secondReplicaShift+replicaIndex)%(nBrokers-1)
	return (firstReplicaIndex + shift) % nBrokers
}
