package coordinator

// partitioner.go places a coordinator key (group id, transactional id) on its internal topic's
// partition: Utils.abs(key.hashCode) % partitions, as GroupMetadataManager.partitionFor and
// TransactionStateManager.partitionFor both do.

import "unicode/utf16"

// JavaStringHashCode is java.lang.String.hashCode: h = 31*h + c over the UTF-16 code units,
// with int32 wrap-around.
func JavaStringHashCode(s string) int32 {
	var h int32
	for _, c := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(c)
	}
	return h
}

// PartitionFor is Utils.abs(key.hashCode) % numPartitions, where abs maps Int.MinValue to 0.
func PartitionFor(key string, numPartitions int32) int32 {
	h := JavaStringHashCode(key)
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % numPartitions
}
