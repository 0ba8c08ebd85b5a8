package group

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

// PartitionFor is GroupMetadataManager.partitionFor: Utils.abs(hashCode) % n, where abs maps
// Int.MinValue to 0.
func PartitionFor(groupID string, numPartitions int32) int32 {
	h := JavaStringHashCode(groupID)
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % numPartitions
}
