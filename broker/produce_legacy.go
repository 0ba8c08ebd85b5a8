package broker

// produce_legacy.go — Produce v0-v2: an old producer's message set (magic 0 or 1) is
// validated and up-converted to one magic 2 batch before the ordinary leader append, as
// Kafka 3.x does with inter.broker.protocol.version 3.x (every log holds v2 only). The checks
// follow UnifiedLog.analyzeAndValidateRecords (per shallow entry: max.message.bytes, CRC)
// and LogValidator (one wrapper at most when compressed, the same magic throughout, inner
// messages: not compressed, the wrapper's magic, CRC, key on compacted topics, timestamps),
// in Kafka's order so that a request with several faults gets Kafka's error. The new batch
// is compressed with the topic's compression.type (the producer's codec for "producer") so
// the log appends it in place; the log then assigns offsets and stamps LogAppendTime.
//
// Produce v0-v2 requests are not checked for the magic they carry (ProduceRequest.
// validateRecords starts at v3): a v2 record batch is appended as such (one batch only).

import (
	"errors"
	"fmt"
	"time"

	"github.com/samsa-kafka/samsa/internal/msgset"
	"github.com/samsa-kafka/samsa/internal/recordbatch"
	"github.com/samsa-kafka/samsa/logstore"
)

// errNoLegacyEntries marks a v0-v2 partition whose records hold no complete entry: Kafka
// appends nothing and answers NONE with offset -1 (UnifiedLog.append with validBytes 0).
var errNoLegacyEntries = errors.New("broker: produce without a complete message")

// legacyConversion accumulates one request's up-conversions for ConversionStats.
type legacyConversion struct {
	partitions, messages int
	nanos, tempBytes     int64
}

// record adds the request's conversions to the broker's counters and to the request's own
// (RequestMetrics' MessageConversionsTimeMs, TemporaryMemoryBytes); t may be nil.
func (c *legacyConversion) record(s *ConversionStats, t *requestTiming) {
	if c.partitions == 0 {
		return
	}
	t.addConversion(c.nanos, c.tempBytes)
	s.ProduceRequests.Add(1)
	s.ProduceMessages.Add(int64(c.messages))
	s.TimeNanos.Add(c.nanos)
	s.TemporaryBytes.Add(c.tempBytes)
}

// legacyProduceRecords validates a v0-v2 partition's records and returns the magic 2 batch
// to append. Leadership and, for acks=-1, min.insync.replicas are checked first, as
// Partition.appendRecordsToLeader does before the log looks at the records.
func (a *APIs) legacyProduceRecords(tp logstore.TopicPartition, acks int16, records []byte, conv *legacyConversion) ([]byte, error) {
	p, err := a.Replicas.LeaderPartition(tp)
	if err != nil {
		return nil, err
	}
	p.mu.RLock()
	l := p.mu.log
	isr, minISR := len(p.mu.isr), 0
	if l != nil {
		minISR = p.effectiveMinISRLocked()
	}
	p.mu.RUnlock()
	if l == nil {
		return nil, fmt.Errorf("%s: no local log: %w", tp, ErrNotLeaderOrFollower)
	}
	if acks == -1 && isr < minISR {
		return nil, fmt.Errorf("%s: ISR size %d < min.insync.replicas %d: %w", tp, isr, minISR, ErrNotEnoughReplicas)
	}
	cfg := l.Config()
	start := time.Now()
	entries, err := msgset.Entries(records)
	if err != nil {
		return nil, msgsetErr(tp, err)
	}
	if len(entries) == 0 {
		return nil, errNoLegacyEntries
	}
	// UnifiedLog.analyzeAndValidateRecords: size and CRC of each shallow entry; the source
	// codec is the last compressed entry's.
	source := recordbatch.None
	for i := range entries {
		e := &entries[i]
		if e.Size() > int(cfg.MaxMessageBytes) {
			return nil, fmt.Errorf("%w: the record batch size in the append to %s is %d bytes which exceeds the maximum configured value of %d",
				logstore.ErrMessageTooLarge, tp, e.Size(), cfg.MaxMessageBytes)
		}
		if !e.ValidCRC() {
			stored := e.StoredCRC()
			if e.Magic() >= 2 && len(e.Raw) >= recordbatch.HeaderSize {
				stored = recordbatch.Batch(e.Raw).CRC()
			}
			return nil, fmt.Errorf("%w: record is corrupt (stored crc = %d) in topic partition %s", logstore.ErrCorruptMessage, stored, tp)
		}
		c := entryCodec(e)
		if c > recordbatch.Zstd {
			return nil, fmt.Errorf("%w: unknown compression type id %d in topic partition %s", logstore.ErrCorruptMessage, c, tp)
		}
		if c != recordbatch.None {
			source = c
		}
	}
	first := &entries[0]
	// LogValidator.getFirstBatchAndMaybeValidateNoMoreBatches.
	if (first.Magic() >= 2 || source != recordbatch.None) && len(entries) > 1 {
		return nil, fmt.Errorf("%w: compressed outer record has more than one batch", logstore.ErrInvalidRecord)
	}
	if first.Magic() >= 2 {
		return first.Raw, nil // the log validates it as any v2 batch
	}
	target, fixed := recordbatch.CodecForName(cfg.CompressionType)
	if !fixed {
		target = source
	}
	v := legacyValidator{tp: tp, cfg: &cfg, nowMs: a.nowMs()}
	var msgs []msgset.Message
	tempBytes := int64(0)
	for i := range entries {
		e := &entries[i]
		if e.Magic() != first.Magic() {
			return nil, fmt.Errorf("%w: batch magic %d is not the same as the first batch's magic byte %d in topic partition %s",
				logstore.ErrInvalidRecord, e.Magic(), first.Magic(), tp)
		}
		if msgs, err = v.entry(e, msgs, &tempBytes); err != nil {
			return nil, err
		}
	}
	b, err := msgset.ToBatch(msgs, target)
	if err != nil {
		return nil, fmt.Errorf("%s: up-convert: %w", tp, err)
	}
	conv.partitions++
	conv.messages += len(msgs)
	a.Metrics.produceConverted(tp.Topic, len(msgs)) // ProduceMessageConversionsPerSec (metrics_api.go)
	conv.nanos += time.Since(start).Nanoseconds()
	conv.tempBytes += tempBytes + int64(len(b))
	return b, nil
}

// entryCodec is the compression codec of a shallow entry of either format.
func entryCodec(e *msgset.Entry) recordbatch.Codec {
	if e.Magic() >= 2 {
		return recordbatch.Batch(e.Raw).Codec()
	}
	return recordbatch.Codec(e.Codec())
}

// legacyValidator holds what LogValidator.validateRecord needs.
type legacyValidator struct {
	tp    logstore.TopicPartition
	cfg   *logstore.LogConfig
	nowMs int64
}

// entry validates one shallow entry (an uncompressed message or a wrapper) and appends its
// messages to msgs. Record errors are gathered over the entry and fail it at its end
// (LogValidator.processRecordErrors); the other faults fail at once.
func (v *legacyValidator) entry(e *msgset.Entry, msgs []msgset.Message, tempBytes *int64) ([]msgset.Message, error) {
	compressed := e.Codec() != msgset.CodecNone
	inner := []msgset.Entry{*e}
	if compressed {
		var err error
		if inner, err = e.Deep(); err != nil {
			return nil, msgsetErr(v.tp, err)
		}
	}
	var rerrs []logstore.RecordError
	timestampErr := false
	for i := range inner {
		r := &inner[i]
		idx := int32(i)
		if compressed && r.Codec() != msgset.CodecNone {
			return nil, fmt.Errorf("%w: inner messages must not be compressed", logstore.ErrInvalidRecord)
		}
		if r.Magic() != e.Magic() {
			rerrs = append(rerrs, logstore.RecordError{BatchIndex: idx, Message: fmt.Sprintf(
				"Record of magic %d's magic does not match outer magic %d in topic partition %s", r.Magic(), e.Magic(), v.tp)})
			continue
		}
		if compressed {
			*tempBytes += int64(r.Size())
			if !r.ValidCRC() {
				return nil, fmt.Errorf("%w: record is corrupt (stored crc = %d, computed crc = %d) in topic partition %s",
					logstore.ErrCorruptMessage, r.StoredCRC(), r.ComputeCRC(), v.tp)
			}
		}
		m, err := r.Message()
		if err != nil {
			return nil, msgsetErr(v.tp, err)
		}
		if msg, isTs := v.recordError(e, &m); msg != "" {
			rerrs = append(rerrs, logstore.RecordError{BatchIndex: idx, Message: msg})
			timestampErr = timestampErr || isTs
			continue
		}
		if len(rerrs) == 0 {
			msgs = append(msgs, m)
		}
	}
	if len(rerrs) > 0 {
		sentinel := logstore.ErrInvalidRecord
		if timestampErr {
			sentinel = logstore.ErrInvalidTimestamp
		}
		return nil, &logstore.RecordValidationError{Err: sentinel, Records: rerrs}
	}
	return msgs, nil
}

// recordError is LogValidator.validateKey then validateTimestamp for one message of entry
// e: "" when it passes; timestamp tells an INVALID_TIMESTAMP from an INVALID_RECORD fault.
func (v *legacyValidator) recordError(e *msgset.Entry, m *msgset.Message) (msg string, timestamp bool) {
	if v.cfg.Compact() && m.Key == nil {
		return "Compacted topic cannot accept message without key in topic partition " + v.tp.String() + ".", false
	}
	if !v.cfg.LogAppendTime() && m.Timestamp != msgset.NoTimestamp {
		before, after := v.cfg.MessageTimestampBeforeMaxMs, v.cfg.MessageTimestampAfterMaxMs
		if diff := v.nowMs - m.Timestamp; diff > before || -diff > after {
			return fmt.Sprintf("Timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]",
				m.Timestamp, m.Offset, v.nowMs-before, satAddMs(v.nowMs, after)), true
		}
		return "", false
	}
	if e.LogAppendTime() {
		return "Invalid timestamp type in message. Producer should not set timestamp type to LogAppendTime.", true
	}
	return "", false
}

func satAddMs(a, b int64) int64 {
	if b > 0 && a > (1<<63-1)-b {
		return 1<<63 - 1
	}
	return a + b
}

// msgsetErr maps a decoding error to the log's sentinel (CORRUPT_MESSAGE or INVALID_RECORD).
func msgsetErr(tp logstore.TopicPartition, err error) error {
	if errors.Is(err, msgset.ErrInvalid) {
		return fmt.Errorf("%w: %s: %v", logstore.ErrInvalidRecord, tp, err)
	}
	return fmt.Errorf("%w: %s: %v", logstore.ErrCorruptMessage, tp, err)
}
