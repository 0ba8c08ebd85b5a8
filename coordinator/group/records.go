package group

// records.go holds the __consumer_offsets record schemas (GroupMetadataManager's
// offsetCommitKey/offsetCommitValue/groupMetadataKey/groupMetadataValue, from
// group-coordinator/src/main/resources/common/message/*.json). Every key and value starts
// with an int16 schema version; the key version tells the record type:
//
//	offset commit key v1:  int16 1 | string group | string topic | int32 partition
//	offset commit value v3: int16 3 | int64 offset | int32 leaderEpoch | string metadata | int64 commitTimestamp
//	  (v1 when an expire timestamp is set: int16 1 | int64 offset | string metadata | int64 commit | int64 expire)
//	group metadata key v2: int16 2 | string group
//	group metadata value v3: int16 3 | string protocolType | int32 generation | nullable protocol |
//	  nullable leader | int64 currentStateTimestamp | [int32 n]{memberId, nullable instanceId, clientId,
//	  clientHost, int32 rebalanceTimeout, int32 sessionTimeout, bytes subscription, bytes assignment}
//
// A null value (tombstone) deletes the offset or the group. kmsg encodes and decodes them.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// ErrUnknownRecordKey is returned for a key version this coordinator does not know
// (Kafka throws IllegalStateException: "Unknown version ... for group metadata message").
var ErrUnknownRecordKey = errors.New("group: unknown __consumer_offsets key version")

// TopicPartition names a partition of a consumed topic in an offset commit.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// OffsetAndMetadata is Kafka's OffsetAndMetadata.
type OffsetAndMetadata struct {
	Offset          int64
	LeaderEpoch     int32 // -1: none
	Metadata        string
	CommitTimestamp int64 // ms
	ExpireTimestamp int64 // ms; -1: none (only OffsetCommit v2-v4 with a retention time set)
}

// maxStringLen is the longest string an int16 length prefix carries. Kafka's generated
// serializers throw beyond it ("'group' field is too long to be serialized"); kmsg would
// wrap the length instead and write a record whose key names another, truncated group.
const maxStringLen = 0x7fff

// ErrFieldTooLong is returned when a string of a record is longer than its int16 length
// allows. The request that wanted the record written fails as Kafka's fails on the
// serializer's RuntimeException: UNKNOWN_SERVER_ERROR, nothing appended.
var ErrFieldTooLong = errors.New("group: field is too long to be serialized")

func checkLen(field, s string) error {
	if len(s) > maxStringLen {
		return fmt.Errorf("%w: '%s' has %d bytes, at most %d fit", ErrFieldTooLong, field, len(s), maxStringLen)
	}
	return nil
}

func checkNullableLen(field string, s *string) error {
	if s == nil {
		return nil
	}
	return checkLen(field, *s)
}

// encodeOffsetCommitKey encodes an offset commit key (v1), or ErrFieldTooLong.
func encodeOffsetCommitKey(group string, tp TopicPartition) ([]byte, error) {
	if err := errors.Join(checkLen("group", group), checkLen("topic", tp.Topic)); err != nil {
		return nil, err
	}
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = 1, group, tp.Topic, tp.Partition
	return k.AppendTo(nil), nil
}

// encodeOffsetCommitValue encodes an offset commit value: v3, or v1 when an expire
// timestamp is set (GroupMetadataManager.offsetCommitValue); ErrFieldTooLong for metadata
// over 32767 bytes (reachable only with offset.metadata.max.bytes raised that far).
func encodeOffsetCommitValue(o OffsetAndMetadata) ([]byte, error) {
	if err := checkLen("metadata", o.Metadata); err != nil {
		return nil, err
	}
	v := kmsg.NewOffsetCommitValue()
	v.Offset, v.Metadata, v.CommitTimestamp = o.Offset, o.Metadata, o.CommitTimestamp
	if o.ExpireTimestamp >= 0 {
		v.Version, v.ExpireTimestamp = 1, o.ExpireTimestamp
	} else {
		v.Version, v.LeaderEpoch = 3, o.LeaderEpoch
	}
	return v.AppendTo(nil), nil
}

// encodeGroupMetadataKey encodes a group metadata key (v2), or ErrFieldTooLong.
func encodeGroupMetadataKey(group string) ([]byte, error) {
	if err := checkLen("group", group); err != nil {
		return nil, err
	}
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = 2, group
	return k.AppendTo(nil), nil
}

// encodeGroupMetadataValue encodes a group metadata value (v3), or ErrFieldTooLong. Its
// strings come from clients: protocol type and name (compact from JoinGroup v6), group
// instance ids (compact), member ids (the client id, up to 32767 bytes, plus "-" and a
// UUID, so a member id can be too long even where the client id was not).
func encodeGroupMetadataValue(v *kmsg.GroupMetadataValue) ([]byte, error) {
	errs := []error{checkLen("protocolType", v.ProtocolType), checkNullableLen("protocol", v.Protocol),
		checkNullableLen("leader", v.Leader)}
	for _, m := range v.Members {
		errs = append(errs, checkLen("memberId", m.MemberID), checkNullableLen("groupInstanceId", m.InstanceID),
			checkLen("clientId", m.ClientID), checkLen("clientHost", m.ClientHost))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	v.Version = 3
	return v.AppendTo(nil), nil
}

// mustEncode is for the exported encoders: tools and tests that hand them strings that fit.
func mustEncode(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// OffsetCommitKey encodes an offset commit key (v1); it panics on a group or topic over
// 32767 bytes (the coordinator uses the checked encoder and fails the request instead).
func OffsetCommitKey(group string, tp TopicPartition) []byte {
	return mustEncode(encodeOffsetCommitKey(group, tp))
}

// OffsetCommitValue encodes an offset commit value (v3, or v1 with an expire timestamp); it
// panics on metadata over 32767 bytes.
func OffsetCommitValue(o OffsetAndMetadata) []byte {
	return mustEncode(encodeOffsetCommitValue(o))
}

// GroupMetadataKey encodes a group metadata key (v2); it panics on a group over 32767 bytes.
func GroupMetadataKey(group string) []byte {
	return mustEncode(encodeGroupMetadataKey(group))
}

// GroupMetadataValue encodes a group metadata value (v3); it panics on a string over 32767
// bytes.
func GroupMetadataValue(v *kmsg.GroupMetadataValue) []byte {
	return mustEncode(encodeGroupMetadataValue(v))
}

// DecodedRecord is one __consumer_offsets record: an offset commit or a group record; a nil
// Offset or Group value means a tombstone.
type DecodedRecord struct {
	IsOffset bool
	Group    string
	TP       TopicPartition     // offset records
	Offset   *OffsetAndMetadata // nil: tombstone
	Value    *kmsg.GroupMetadataValue
}

// DecodeRecord reads one record's key and value (GroupMetadataManager.readMessageKey and
// readOffsetMessageValue/readGroupMessageValue). Values of versions 0-4 are accepted.
func DecodeRecord(key, value []byte) (DecodedRecord, error) {
	if len(key) < 2 {
		return DecodedRecord{}, fmt.Errorf("%w: key of %d bytes", ErrUnknownRecordKey, len(key))
	}
	version := int16(key[0])<<8 | int16(key[1])
	switch version {
	case 0, 1:
		k := kmsg.NewOffsetCommitKey()
		if err := k.ReadFrom(key); err != nil {
			return DecodedRecord{}, fmt.Errorf("decode offset commit key: %w", err)
		}
		r := DecodedRecord{IsOffset: true, Group: k.Group, TP: TopicPartition{k.Topic, k.Partition}}
		if value == nil {
			return r, nil
		}
		v := kmsg.NewOffsetCommitValue()
		if err := v.ReadFrom(value); err != nil {
			return DecodedRecord{}, fmt.Errorf("decode offset commit value of %s: %w", k.Group, err)
		}
		o := OffsetAndMetadata{Offset: v.Offset, LeaderEpoch: -1, Metadata: v.Metadata, CommitTimestamp: v.CommitTimestamp, ExpireTimestamp: -1}
		if v.Version >= 3 {
			o.LeaderEpoch = v.LeaderEpoch
		}
		if v.Version == 1 {
			o.ExpireTimestamp = v.ExpireTimestamp
		}
		r.Offset = &o
		return r, nil
	case 2:
		k := kmsg.NewGroupMetadataKey()
		if err := k.ReadFrom(key); err != nil {
			return DecodedRecord{}, fmt.Errorf("decode group metadata key: %w", err)
		}
		r := DecodedRecord{Group: k.Group}
		if value == nil {
			return r, nil
		}
		v := kmsg.NewGroupMetadataValue()
		if err := v.ReadFrom(value); err != nil {
			return DecodedRecord{}, fmt.Errorf("decode group metadata value of %s: %w", k.Group, err)
		}
		r.Value = &v
		return r, nil
	}
	return DecodedRecord{}, fmt.Errorf("%w: %d", ErrUnknownRecordKey, version)
}

// kv is one record to append.
type kv struct{ key, value []byte }

// buildBatch encodes records as one uncompressed v2 batch stamped with now
// (offsets.topic.compression.codec defaults to none).
func buildBatch(now time.Time, recs []kv) ([]byte, error) {
	return buildOffsetsBatch(now, recs, -1, -1, false)
}

// buildTxnBatch is buildBatch for TxnOffsetCommit (GroupMetadataManager.generateOffsetRecords
// with a producer id): a transactional batch of the producer's id and epoch with base
// sequence 0. The coordinator appends it with origin COORDINATOR, so the sequence is never
// checked; the marker that ends the producer's transaction commits or aborts it.
func buildTxnBatch(now time.Time, recs []kv, producerID int64, producerEpoch int16) ([]byte, error) {
	return buildOffsetsBatch(now, recs, producerID, producerEpoch, true)
}

func buildOffsetsBatch(now time.Time, recs []kv, producerID int64, producerEpoch int16, transactional bool) ([]byte, error) {
	ts := now.UnixMilli()
	rs := make([]recordbatch.Record, len(recs))
	for i, r := range recs {
		rs[i] = recordbatch.Record{OffsetDelta: int32(i), Key: r.key, Value: r.value}
	}
	h := recordbatch.Header{LastOffsetDelta: int32(len(recs) - 1), BaseTimestamp: ts, MaxTimestamp: ts,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	if transactional {
		h.Attributes = recordbatch.AttrTransactional
		h.ProducerID, h.ProducerEpoch, h.BaseSequence = producerID, producerEpoch, 0
	}
	b, err := recordbatch.Build(h, rs, recordbatch.None)
	if err != nil {
		return nil, fmt.Errorf("build offsets batch: %w", err)
	}
	return b, nil
}

// Control record types (ControlRecordType): the key of a control record is
// int16 version | int16 type.
const (
	controlAbort  int16 = 0
	controlCommit int16 = 1
)

// controlRecordType is ControlRecordType.parse: the type of a control record's key; ok is
// false for a key shorter than 4 bytes or of a negative version (Kafka throws
// InvalidRecordException for both).
func controlRecordType(key []byte) (typ int16, ok bool) {
	if len(key) < 4 {
		return 0, false
	}
	if version := int16(binary.BigEndian.Uint16(key)); version < 0 {
		return 0, false
	}
	return int16(binary.BigEndian.Uint16(key[2:])), true
}

// forEachBatch walks the whole batches of raw (as read from the log) and returns the offset
// after the last one; a partial batch at the end is left for the caller's next read.
func forEachBatch(raw []byte, fn func(b recordbatch.Batch) error) (next int64, err error) {
	next = -1
	for len(raw) > 0 {
		b, rest, err := recordbatch.Next(raw)
		if err != nil {
			return next, nil // a partial batch at the end of a read: the caller reads on from next
		}
		raw = rest
		next = b.NextOffset()
		if err := fn(b); err != nil {
			return next, err
		}
	}
	return next, nil
}

// forEachRecord walks the records of raw batches, transactional ones included; control
// batches (transaction markers) are skipped.
func forEachRecord(raw []byte, fn func(offset int64, key, value []byte) error) (next int64, err error) {
	return forEachBatch(raw, func(b recordbatch.Batch) error {
		if b.Control() {
			return nil
		}
		base := b.BaseOffset()
		return b.ForEachRecord(false, func(r *recordbatch.Record) error {
			return fn(base+int64(r.OffsetDelta), r.Key, r.Value)
		})
	})
}
