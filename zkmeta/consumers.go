package zkmeta

// consumers.go: the offsets of the pre-0.9 ZooKeeper consumers, which Kafka 3.7 in
// ZooKeeper mode still reads and writes for OffsetCommit v0 and OffsetFetch v0
// (KafkaZkClient.getConsumerOffset / setOrCreateConsumerOffset, ZkData's ConsumerOffset):
// /consumers/<group>/offsets/<topic>/<partition>, the offset as a decimal string.

import (
	"errors"
	"fmt"
	"strconv"
)

// ConsumerOffsetPath is ConsumerOffset.path: the znode of one committed offset. The group
// and topic go in as they are, as Kafka puts them; a name ZooKeeper cannot take as a path
// element fails the request.
func ConsumerOffsetPath(group, topic string, partition int32) string {
	return fmt.Sprintf("%s/%s/offsets/%s/%d", ConsumersPath, group, topic, partition)
}

// EncodeConsumerOffset is ConsumerOffset.encode: the offset in decimal.
func EncodeConsumerOffset(offset int64) []byte { return strconv.AppendInt(nil, offset, 10) }

// DecodeConsumerOffset is ConsumerOffset.decode: ok is false for a znode without data.
func DecodeConsumerOffset(data []byte) (offset int64, ok bool, err error) {
	if data == nil {
		return 0, false, nil
	}
	offset, err = strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("zkmeta: consumer offset %q is not a number: %w", data, err)
	}
	return offset, true, nil
}

// GetConsumerOffset reads a committed offset (KafkaZkClient.getConsumerOffset): ok is false
// when none was committed.
func (c *Client) GetConsumerOffset(group, topic string, partition int32) (offset int64, ok bool, err error) {
	path := ConsumerOffsetPath(group, topic, partition)
	data, _, err := c.Get(path)
	if errors.Is(err, ErrNoNode) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read consumer offset: %w", err)
	}
	offset, ok, err = DecodeConsumerOffset(data)
	if err != nil {
		return 0, false, fmt.Errorf("read consumer offset %s: %w", path, err)
	}
	return offset, ok, nil
}

// SetOrCreateConsumerOffset writes a committed offset, creating the znode and its parents
// when missing (KafkaZkClient.setOrCreateConsumerOffset). The nodes get the ACLs of their
// own paths, as KafkaZkClient.createRecursive gives them.
func (c *Client) SetOrCreateConsumerOffset(group, topic string, partition int32, offset int64) error {
	path := ConsumerOffsetPath(group, topic, partition)
	if err := c.setOrCreate(path, EncodeConsumerOffset(offset)); err != nil {
		return fmt.Errorf("write consumer offset: %w", err)
	}
	return nil
}
