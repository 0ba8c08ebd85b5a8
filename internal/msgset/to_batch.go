package msgset

// to_batch.go up-converts legacy messages to one magic 2 record batch, as LogValidator does
// for toMagic = 2 (convertAndAssignOffsetsNonCompressed and buildRecordsAndAssignOffsets
// with MemoryRecordsBuilder): no producer id, epoch or sequence, CreateTime, each record
// keeping its key, value and timestamp (NoTimestamp for magic 0), no headers. The base
// offset is 0 and the partition leader epoch unset: the log assigns both, and stamps the
// batch when the topic uses LogAppendTime.

import (
	"fmt"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// ToBatch builds the batch from msgs (at least one), its records compressed with codec.
// The batch's first timestamp is the first message's, as MemoryRecordsBuilder takes it;
// its max timestamp is the largest (NoTimestamp when none has one).
func ToBatch(msgs []Message, codec recordbatch.Codec) (recordbatch.Batch, error) {
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: no messages to convert", ErrInvalid)
	}
	base := msgs[0].Timestamp
	maxTs := NoTimestamp
	recs := make([]recordbatch.Record, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		recs[i] = recordbatch.Record{TimestampDelta: m.Timestamp - base, OffsetDelta: int32(i), Key: m.Key, Value: m.Value}
		if m.Timestamp > maxTs {
			maxTs = m.Timestamp
		}
	}
	h := recordbatch.Header{
		PartitionLeaderEpoch: -1, LastOffsetDelta: int32(len(msgs) - 1), BaseTimestamp: base, MaxTimestamp: maxTs,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}
	b, err := recordbatch.Build(h, recs, codec)
	if err != nil {
		return nil, fmt.Errorf("msgset: build a %s batch of %d records: %w", codec, len(msgs), err)
	}
	return b, nil
}
