package transaction

// transaction_log.go mirrors TransactionLog.scala and the TransactionLogKey/TransactionLogValue
// message schemas of Kafka 3.7. Every record of __transaction_state is keyed by the
// transactional id; its value is the id's whole state; a null value (tombstone) removes the id.
// Big-endian throughout; strings are int16 length + UTF-8; arrays int32 count (-1 = null).
//
//	key v0 (the only version, not flexible):
//	  int16 version=0 | string transactionalId
//
//	value v0 (what Kafka 3.7 writes: "the highest non-flexible version"):
//	  int16 version=0 | int64 producerId | int16 producerEpoch | int32 transactionTimeoutMs |
//	  int8 transactionStatus | nullable array transactionPartitions of
//	  {string topic | array of int32 partitionIds} | int64 transactionLastUpdateTimestampMs |
//	  int64 transactionStartTimestampMs
//
//	value v1 (read only; KIP-915's first flexible version): the same fields with compact
//	strings/arrays (unsigned varint length+1, 0 = null) and a tagged-field section after each
//	partitions entry and after the value.
//
// The partitions field is null in Empty and a (possibly empty) array otherwise. Records go in
// uncompressed magic-2 batches without producer id, like MemoryRecords.withRecords(NONE, ...).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// ErrMalformedRecord is a __transaction_state record that cannot be decoded; loading logs it
// and skips the record.
var ErrMalformedRecord = errors.New("transaction: malformed __transaction_state record")

// Schema versions.
const (
	keyVersion          int16 = 0 // TransactionLogKey.HIGHEST_SUPPORTED_VERSION
	valueVersionWritten int16 = 0 // Kafka 3.7 writes v0 until a tagged field is introduced
	valueVersionMax     int16 = 1 // highest readable (flexible)
)

// maxKeyStringLen is the longest transactional id a key can carry (int16 string length).
const maxKeyStringLen = 0x7fff

// keyToBytes is TransactionLog.keyToBytes.
func keyToBytes(transactionalID string) []byte {
	b := make([]byte, 0, 4+len(transactionalID))
	b = binary.BigEndian.AppendUint16(b, uint16(keyVersion))
	return appendString(b, transactionalID)
}

// valueToBytes is TransactionLog.valueToBytes (version 0).
func valueToBytes(t TxnTransitMetadata) ([]byte, error) {
	if t.TxnState == Empty && len(t.TopicPartitions) != 0 {
		return nil, fmt.Errorf("%w: transaction is not expected to have any partitions since its state is Empty: %s", errIllegalState, t)
	}
	b := make([]byte, 0, 64)
	b = binary.BigEndian.AppendUint16(b, uint16(valueVersionWritten))
	b = binary.BigEndian.AppendUint64(b, uint64(t.ProducerID))
	b = binary.BigEndian.AppendUint16(b, uint16(t.ProducerEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(t.TxnTimeoutMs))
	b = append(b, byte(t.TxnState))
	if t.TxnState == Empty {
		b = binary.BigEndian.AppendUint32(b, 0xffffffff) // null array
	} else {
		groups := groupByTopic(t.TopicPartitions)
		b = binary.BigEndian.AppendUint32(b, uint32(len(groups)))
		for _, g := range groups {
			b = appendString(b, g.topic)
			b = binary.BigEndian.AppendUint32(b, uint32(len(g.partitions)))
			for _, p := range g.partitions {
				b = binary.BigEndian.AppendUint32(b, uint32(p))
			}
		}
	}
	b = binary.BigEndian.AppendUint64(b, uint64(t.TxnLastUpdateTimestamp))
	b = binary.BigEndian.AppendUint64(b, uint64(t.TxnStartTimestamp))
	return b, nil
}

type topicGroup struct {
	topic      string
	partitions []int32
}

// groupByTopic groups sorted partitions by topic, in order.
func groupByTopic(tps []TopicPartition) []topicGroup {
	var out []topicGroup
	for _, tp := range tps {
		if len(out) == 0 || out[len(out)-1].topic != tp.Topic {
			out = append(out, topicGroup{topic: tp.Topic})
		}
		out[len(out)-1].partitions = append(out[len(out)-1].partitions, tp.Partition)
	}
	return out
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// errUnknownKeyVersion is TransactionLog's UnknownKey: skipped with a warning on load.
type errUnknownKeyVersion struct{ version int16 }

func (e errUnknownKeyVersion) Error() string {
	return fmt.Sprintf("transaction: unknown __transaction_state key version %d", e.version)
}

// readTxnRecordKey is TransactionLog.readTxnRecordKey: the transactional id, or an
// errUnknownKeyVersion for a key version other than 0.
func readTxnRecordKey(key []byte) (string, error) {
	if key == nil {
		return "", fmt.Errorf("%w: null key", ErrMalformedRecord)
	}
	r := reader{b: key}
	v := r.int16()
	if r.err != nil {
		return "", r.err
	}
	if v != keyVersion {
		return "", errUnknownKeyVersion{v}
	}
	id := r.string(false)
	if r.err != nil {
		return "", r.err
	}
	return id, nil
}

// readTxnRecordValue is TransactionLog.readTxnRecordValue: nil for a tombstone. The loaded
// metadata has no last producer id/epoch (the schema does not carry them).
func readTxnRecordValue(transactionalID string, value []byte) (*TransactionMetadata, error) {
	if value == nil {
		return nil, nil
	}
	r := reader{b: value}
	v := r.int16()
	if r.err != nil {
		return nil, r.err
	}
	if v < 0 || v > valueVersionMax {
		return nil, fmt.Errorf("%w: unknown version %d from the transaction log message value", ErrMalformedRecord, v)
	}
	flexible := v >= 1
	pid := r.int64()
	epoch := r.int16()
	timeout := r.int32()
	status := r.int8()
	type part struct {
		topic string
		ids   []int32
	}
	var parts []part
	if n := r.arrayLen(flexible); n > 0 {
		for i := 0; i < n && r.err == nil; i++ {
			p := part{topic: r.string(flexible)}
			m := r.arrayLen(flexible)
			if m < 0 {
				r.fail("null partition ids")
			}
			for j := 0; j < m && r.err == nil; j++ {
				p.ids = append(p.ids, r.int32())
			}
			if flexible {
				r.skipTags()
			}
			parts = append(parts, p)
		}
	}
	lastUpdate := r.int64()
	start := r.int64()
	if flexible {
		r.skipTags()
	}
	if r.err != nil {
		return nil, r.err
	}
	state, err := stateFromID(status)
	if err != nil {
		return nil, err
	}
	m := newTransactionMetadata(transactionalID, pid, noProducerID, epoch, noProducerEpoch, timeout, state, start, lastUpdate)
	if state != Empty {
		for _, p := range parts {
			for _, id := range p.ids {
				m.topicPartitions[TopicPartition{p.topic, id}] = struct{}{}
			}
		}
	}
	return m, nil
}

// reader decodes Kafka's primitive types; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, a ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrMalformedRecord, fmt.Sprintf(format, a...))
	}
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.fail("truncated: need %d bytes, have %d", n, len(r.b))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) int8() int8 {
	if b := r.take(1); b != nil {
		return int8(b[0])
	}
	return 0
}

func (r *reader) int16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *reader) int32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *reader) int64() int64 {
	if b := r.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad unsigned varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) string(compact bool) string {
	var n int
	if compact {
		u := r.uvarint()
		if u == 0 {
			r.fail("null string")
			return ""
		}
		n = int(u - 1)
	} else {
		n = int(r.int16())
		if n < 0 && r.err == nil {
			r.fail("null string")
			return ""
		}
	}
	return string(r.take(n))
}

// arrayLen returns the element count, -1 for null.
func (r *reader) arrayLen(compact bool) int {
	if compact {
		u := r.uvarint()
		if r.err != nil {
			return -1
		}
		if u > uint64(len(r.b))+1 {
			r.fail("array of %d elements in %d bytes", u-1, len(r.b))
			return -1
		}
		return int(u) - 1
	}
	n := r.int32()
	if r.err != nil {
		return -1
	}
	if n < -1 || int64(n) > int64(len(r.b)) {
		r.fail("array of %d elements in %d bytes", n, len(r.b))
		return -1
	}
	return int(n)
}

// skipTags skips a tagged-field section (no tagged fields are defined in 3.7).
func (r *reader) skipTags() {
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		r.uvarint() // tag
		size := r.uvarint()
		r.take(int(size))
	}
}

// DecodeRecord renders one __transaction_state record the way kafka-dump-log.sh
// --transaction-log-decoder prints it after the record's offset fields
// (TransactionLog.formatRecordKeyAndValue):
//
//	key: transaction_metadata::transactionalId=<id> payload: producerId:<n>,producerEpoch:<n>,state=<State>,partitions=[t-0,t-1],txnLastUpdateTimestamp=<ms>,txnTimeoutMs=<ms>
//	key: transaction_metadata::transactionalId=<id> payload: <DELETE>
//	key: unknown::version=<n>
//
// Partitions are listed sorted (Kafka prints its hash set's order). Malformed records return
// an error wrapping ErrMalformedRecord (Kafka's tool throws).
func DecodeRecord(key, value []byte) (string, error) {
	id, err := readTxnRecordKey(key)
	var unknown errUnknownKeyVersion
	if errors.As(err, &unknown) {
		return fmt.Sprintf("key: unknown::version=%d", unknown.version), nil
	}
	if err != nil {
		return "", err
	}
	m, err := readTxnRecordValue(id, value)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	sb.WriteString("key: transaction_metadata::transactionalId=")
	sb.WriteString(id)
	sb.WriteString(" payload: ")
	if m == nil {
		sb.WriteString("<DELETE>")
		return sb.String(), nil
	}
	fmt.Fprintf(&sb, "producerId:%d,producerEpoch:%d,state=%s,partitions=%s,txnLastUpdateTimestamp=%d,txnTimeoutMs=%d",
		m.producerID, m.producerEpoch, m.state, formatPartitions(m.partitionsLocked()), m.txnLastUpdateTimestamp, m.txnTimeoutMs)
	return sb.String(), nil
}

// kv is one record to append; a nil value is a tombstone.
type kv struct{ key, value []byte }

// buildBatch encodes records as one uncompressed magic-2 batch stamped with now
// (TransactionLog.EnforcedCompressionType is NONE).
func buildBatch(now time.Time, recs []kv) ([]byte, error) {
	ts := now.UnixMilli()
	rs := make([]recordbatch.Record, len(recs))
	for i, r := range recs {
		rs[i] = recordbatch.Record{OffsetDelta: int32(i), Key: r.key, Value: r.value}
	}
	h := recordbatch.Header{LastOffsetDelta: int32(len(recs) - 1), BaseTimestamp: ts, MaxTimestamp: ts,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	b, err := recordbatch.Build(h, rs, recordbatch.None)
	if err != nil {
		return nil, fmt.Errorf("build transaction log batch: %w", err)
	}
	return b, nil
}

// forEachRecord walks the records of raw batches as read from the log; control batches are
// skipped (the coordinator never writes any). next is the offset after the last complete
// batch, -1 when there was none.
func forEachRecord(raw []byte, fn func(offset int64, key, value []byte)) (next int64, err error) {
	next = -1
	for len(raw) > 0 {
		b, rest, err := recordbatch.Next(raw)
		if err != nil {
			// A partial batch at the end of a read: the caller reads on from next. A batch
			// that is corrupt as a whole ends the read with an error if nothing was read.
			if next < 0 {
				return next, fmt.Errorf("%w: %v", ErrMalformedRecord, err)
			}
			return next, nil
		}
		raw = rest
		next = b.NextOffset()
		if b.Control() {
			continue
		}
		base := b.BaseOffset()
		if err := b.ForEachRecord(false, func(r *recordbatch.Record) error {
			fn(base+int64(r.OffsetDelta), r.Key, r.Value)
			return nil
		}); err != nil {
			return next, fmt.Errorf("%w: batch at offset %d: %v", ErrMalformedRecord, base, err)
		}
	}
	return next, nil
}
