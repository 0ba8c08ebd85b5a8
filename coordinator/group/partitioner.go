package group

import "github.com/samsa-kafka/samsa/coordinator"

// PartitionFor is GroupMetadataManager.partitionFor: the __consumer_offsets partition of
// groupID.
func PartitionFor(groupID string, numPartitions int32) int32 {
	return coordinator.PartitionFor(groupID, numPartitions)
}
