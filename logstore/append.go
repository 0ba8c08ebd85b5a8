package logstore

// Appends: Kafka's UnifiedLog.append / analyzeAndValidateRecords, LogValidator (magic v2
// only) and LocalLog.append/roll.
//
// Deviations from LogValidator: magic 0/1 batches are refused (UNSUPPORTED_FOR_MESSAGE_FORMAT):
// the broker up-converts Produce v0-v2 message sets before the append (broker/produce_legacy.go),
// so the log only ever sees v2; inner offset deltas must run 0..n-1 for uncompressed batches too
// (Kafka checks it for compressed ones); control batches are refused from every origin
// except through AppendTxnMarker (Kafka refuses them from clients only). Producer state
// (sequence, epoch, duplicates, transactions and their verification) is checked as in
// UnifiedLog.analyzeAndValidateProducerState (producer_state.go, txn.go).

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// AppendInfo describes a successful append.
type AppendInfo struct {
	FirstOffset, LastOffset int64
	// LogAppendTime is the broker time stamped on the batches, -1 unless LogAppendTime.
	LogAppendTime  int64
	LogStartOffset int64
	NumRecords     int
	// ValidBytes is the size appended.
	ValidBytes int
	// MaxTimestamp and OffsetOfMaxTimestamp of the appended records.
	MaxTimestamp, OffsetOfMaxTimestamp int64
	// Duplicate is set when a leader append was a retry of a batch already in the log
	// (same producer id, epoch and sequence range as one of its last five batches):
	// nothing was appended and First/LastOffset are the original ones. Kafka answers
	// such a produce with NONE and the original base offset (and the original batch's
	// timestamp as log_append_time).
	Duplicate bool
}

// splitBatches walks records: every batch must be complete and valid (length, magic, CRC)
// and, unless ignoreSize, within max.message.bytes. A follower (allowPartial) drops a
// trailing partial batch as Kafka's fetch responses may end with one. The batches are
// appended to dst.
func splitBatches(dst []recordbatch.Batch, records []byte, maxMessageBytes int32, ignoreSize, allowPartial bool) ([]recordbatch.Batch, int, error) {
	out := dst
	valid := 0
	rest := records
	for len(rest) > 0 {
		if len(rest) < recordbatch.LogOverhead {
			if allowPartial {
				break
			}
			return nil, 0, fmt.Errorf("%w: %d trailing bytes are not a batch", ErrCorruptMessage, len(rest))
		}
		size, err := recordbatch.PeekSize(rest)
		if err != nil {
			return nil, 0, batchErr(err)
		}
		if size > len(rest) || len(rest) < recordbatch.HeaderSize {
			if allowPartial {
				break
			}
			if !ignoreSize && size > int(maxMessageBytes) {
				return nil, 0, fmt.Errorf("%w: batch of %d bytes exceeds max.message.bytes %d", ErrMessageTooLarge, size, maxMessageBytes)
			}
			return nil, 0, fmt.Errorf("%w: batch declares %d bytes, %d present", ErrCorruptMessage, size, len(rest))
		}
		if m := int8(rest[16]); m != recordbatch.Magic {
			if m == 0 || m == 1 {
				return nil, 0, fmt.Errorf("%w: magic %d (samsa stores v2 only)", ErrUnsupportedForMagic, m)
			}
			return nil, 0, fmt.Errorf("%w: invalid magic %d", ErrCorruptMessage, m)
		}
		b := recordbatch.Batch(rest[:size:size])
		if !ignoreSize && size > int(maxMessageBytes) {
			return nil, 0, fmt.Errorf("%w: batch of %d bytes exceeds max.message.bytes %d", ErrMessageTooLarge, size, maxMessageBytes)
		}
		if !b.ValidCRC() {
			return nil, 0, fmt.Errorf("%w: crc mismatch (stored %d, computed %d)", ErrCorruptMessage, b.CRC(), b.ComputeCRC())
		}
		out = append(out, b)
		valid += size
		rest = rest[size:]
	}
	if len(out) == len(dst) && !(allowPartial && len(records) > 0) {
		return nil, 0, fmt.Errorf("%w: no record batch", ErrCorruptMessage)
	}
	return out, valid, nil
}

// AppendAsLeader validates producer batches, assigns offsets from the LEO and appends them.
// records is rewritten in place (baseOffset, partitionLeaderEpoch, and maxTimestamp/CRC for
// LogAppendTime) unless the topic's compression.type forces a recompression.
func (l *Log) AppendAsLeader(records []byte, leaderEpoch int32) (AppendInfo, error) {
	return l.append(records, leaderEpoch, true, AppendOptions{Origin: OriginClient}, false)
}

// AppendAsFollower appends batches whose offsets the leader assigned. A trailing partial
// batch is ignored. The first offset must not be below the LEO.
func (l *Log) AppendAsFollower(records []byte) (AppendInfo, error) {
	return l.append(records, -1, false, AppendOptions{Origin: OriginReplication}, true)
}

// append is UnifiedLog.append. allowControl admits control batches (followers, and the
// leader's own markers from AppendTxnMarker).
func (l *Log) append(records []byte, leaderEpoch int32, leader bool, opts AppendOptions, allowControl bool) (AppendInfo, error) {
	cfg := l.cfg.Load()
	// A producer sends one batch per partition: room for it on the stack.
	var one [1]recordbatch.Batch
	batches, validBytes, err := splitBatches(one[:0], records, cfg.MaxMessageBytes, !leader, !leader)
	if err != nil {
		return AppendInfo{}, err
	}
	if len(batches) == 0 {
		// A follower fetch that ended inside its only batch: nothing to append (Kafka's
		// shallowCount == 0 case).
		return AppendInfo{FirstOffset: -1, LastOffset: -1, LogAppendTime: -1, MaxTimestamp: -1,
			LogStartOffset: l.logStartOffset.Load()}, nil
	}
	l.mu.Lock()
	defer l.unlock()
	if l.closed.Load() {
		return AppendInfo{}, ErrClosed
	}
	if l.mu.offline {
		return AppendInfo{}, fmt.Errorf("%w: %s", ErrKafkaStorage, l.dir)
	}
	now := l.clock()
	info := AppendInfo{LogAppendTime: -1, MaxTimestamp: -1}
	var data []byte
	ps := l.producerState.prepareAppend()
	if leader {
		data, err = l.validateAndAssignOffsets(batches, leaderEpoch, cfg, now, &info, allowControl)
		if err != nil {
			return AppendInfo{}, err
		}
		if data == nil {
			data = records[:validBytes]
		}
		// Producer state (analyzeAndValidateProducerState, AppendOrigin.CLIENT): a retried
		// batch gets its original offsets back and is not appended again.
		for rest := data; len(rest) > 0; {
			b, r, err := recordbatch.Next(rest)
			if err != nil {
				break
			}
			rest = r
			if b.ProducerID() < 0 {
				continue
			}
			if opts.Origin == OriginClient {
				if dup, ok := l.producerState.findDuplicate(b); ok {
					return AppendInfo{FirstOffset: dup.firstOffset(), LastOffset: dup.lastOffset, LogAppendTime: dup.timestamp,
						LogStartOffset: l.logStartOffset.Load(), MaxTimestamp: -1, OffsetOfMaxTimestamp: -1, Duplicate: true}, nil
				}
			}
			if err := l.checkVerification(b, opts); err != nil {
				return AppendInfo{}, err
			}
			if err := ps.validate(b, opts.Origin); err != nil {
				return AppendInfo{}, err
			}
			if err := ps.update(b); err != nil {
				return AppendInfo{}, err
			}
		}
	} else {
		leo := l.logEndOffset.Load()
		prevLast := int64(-1)
		for i, b := range batches {
			if b.LastOffsetDelta() < 0 || b.LastOffset() <= prevLast {
				return AppendInfo{}, fmt.Errorf("%w: batch %d offsets [%d, %d]", ErrOffsetsOutOfOrder, i, b.BaseOffset(), b.LastOffset())
			}
			prevLast = b.LastOffset()
			info.NumRecords += int(b.RecordCount())
			if ts := b.MaxTimestamp(); ts > info.MaxTimestamp {
				info.MaxTimestamp, info.OffsetOfMaxTimestamp = ts, b.LastOffset()
			}
		}
		info.FirstOffset, info.LastOffset = batches[0].BaseOffset(), prevLast
		if info.FirstOffset < leo {
			return AppendInfo{}, fmt.Errorf("%w: first offset %d is below the log end offset %d", ErrUnexpectedAppendOffset, info.FirstOffset, leo)
		}
		data = records[:validBytes]
		// Followers take the leader's producer state as is (AppendOrigin.REPLICATION), but
		// as in UnifiedLog.append it is analyzed before the write: a control batch that is
		// not a COMMIT/ABORT marker fails the whole append (ErrInvalidRecord) and nothing is
		// written. The fetcher backs off and fetches the same offset again, as Kafka's
		// AbstractFetcherThread does on InvalidRecordException: the partition does not
		// advance past such a batch (skipping it could leave its transaction open).
		for _, b := range batches {
			if err := ps.update(b); err != nil {
				return AppendInfo{}, err
			}
		}
	}
	if int64(len(data)) > cfg.SegmentBytes {
		return AppendInfo{}, fmt.Errorf("%w: %d bytes exceed segment.bytes %d", ErrRecordListTooLarge, len(data), cfg.SegmentBytes)
	}
	info.ValidBytes = len(data)
	if info.MaxTimestamp < 0 {
		info.OffsetOfMaxTimestamp = info.LastOffset
	}
	if err := l.appendLocked(data, &info, cfg, now); err != nil {
		return AppendInfo{}, err
	}
	if err := ps.commit(info.LastOffset+1, l.indexTxn); err != nil {
		// The records are in (as in Kafka, whose LEO moves before the txn index write):
		// the dir goes offline and recovery rebuilds the index.
		l.ioFailed(err)
		l.updateFirstUnstableLocked()
		return AppendInfo{}, err
	}
	l.updateFirstUnstableLocked()
	l.producerState.maybeRemoveExpired(now.UnixMilli())
	// Epoch bookkeeping after the bytes are in: leader epoch start offsets from each batch.
	var epochErr error
	for rest := data; len(rest) > 0; {
		b, r, err := recordbatch.Next(rest)
		if err != nil {
			break
		}
		rest = r
		if ep := b.PartitionLeaderEpoch(); ep >= 0 {
			if latest, ok := l.epochs.LatestEpoch(); !ok || ep != latest {
				if _, err := l.epochs.Assign(ep, b.BaseOffset()); err != nil {
					epochErr = err
				}
			}
		}
	}
	if epochErr != nil {
		l.ioFailed(epochErr)
		return AppendInfo{}, epochErr
	}
	info.LogStartOffset = l.logStartOffset.Load()
	return info, nil
}

// appendLocked rolls if needed and writes data to the active segment. Nothing becomes
// visible unless the write (and a policy fsync) succeeded; on failure the file is cut back.
func (l *Log) appendLocked(data []byte, info *AppendInfo, cfg *LogConfig, now time.Time) error {
	seg := l.activeSegment()
	if !seg.indexesSized {
		if err := seg.sizeIndexes(cfg.SegmentIndexBytes); err != nil {
			err = fmt.Errorf("%w: %v", ErrKafkaStorage, err)
			l.ioFailed(err)
			return err
		}
	}
	if seg.shouldRoll(cfg, int64(len(data)), info.MaxTimestamp, info.LastOffset, now) {
		var err error
		if seg, err = l.rollLocked(info.FirstOffset, now); err != nil {
			return err
		}
	}
	pos := seg.size.Load()
	if err := seg.append(info.LastOffset, info.MaxTimestamp, info.OffsetOfMaxTimestamp, data, pos); err != nil {
		l.undoAppend(seg, pos)
		l.ioFailed(err)
		return err
	}
	flushNow := l.mu.unflushedRecords+int64(info.NumRecords) >= cfg.FlushMessages
	if flushNow {
		if err := seg.log.Sync(); err != nil {
			l.undoAppend(seg, pos)
			err = fmt.Errorf("%w: fsync %s: %v", ErrKafkaStorage, seg.logPath(), err)
			l.ioFailed(err)
			return err
		}
	}
	seg.afterAppend(info.LastOffset, info.MaxTimestamp, info.OffsetOfMaxTimestamp, int64(len(data)), pos, now)
	l.logEndOffset.Store(info.LastOffset + 1)
	if flushNow {
		// The fsync above covered this segment; earlier ones were flushed at roll.
		l.mu.unflushedRecords = 0
		l.mu.lastFlush = now
		_ = seg.offsetIdx.flush()
		_ = seg.timeIdx.flush()
		l.markFlushedLocked(seg.baseOffset, info.LastOffset+1)
	} else {
		l.mu.unflushedRecords += int64(info.NumRecords)
	}
	return nil
}

// undoAppend cuts the active segment back to pos after a failed write or fsync.
func (l *Log) undoAppend(seg *Segment, pos int64) {
	if err := seg.log.Truncate(pos); err != nil {
		l.log.WithError(err).WithField("position", pos).Error("cannot truncate a failed append")
	}
}

// ioFailed marks the log offline; the manager hears of it (Kafka's LogDirFailureChannel)
// when mu is released. Callers hold mu.
func (l *Log) ioFailed(err error) {
	if !errors.Is(err, ErrKafkaStorage) {
		return
	}
	l.mu.offline = true
	l.log.WithError(err).Error("I/O error in log, taking it offline")
	if l.mu.pendingIOErr == nil {
		l.mu.pendingIOErr = err
	}
}

// rollJitter is Kafka's LogConfig.randomSegmentJitter.
func (l *Log) rollJitter() int64 {
	cfg := l.cfg.Load()
	if cfg.SegmentJitterMs <= 0 {
		return 0
	}
	return rand.Int64N(min(cfg.SegmentJitterMs, cfg.SegmentMs))
}

// Roll starts a new active segment at the LEO (if the active one is not empty).
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if l.activeSegment().size.Load() == 0 {
		return nil
	}
	_, err := l.rollLocked(l.logEndOffset.Load(), l.clock())
	return err
}

// rollLocked closes the active segment for appends (final time index entry, trimmed
// indexes) and opens a new one at newBase (LocalLog.roll). The old segment and the
// producer snapshot are fsynced after mu is released, by the roll flusher (UnifiedLog.roll
// schedules "flush-log"), which then moves the recovery point to newBase.
func (l *Log) rollLocked(newBase int64, now time.Time) (*Segment, error) {
	segs := l.segments()
	old := segs[len(segs)-1]
	if leo := l.logEndOffset.Load(); newBase < leo {
		newBase = leo
	}
	if old.baseOffset == newBase {
		if old.size.Load() == 0 {
			return old, nil // Kafka reuses an empty active segment at the same offset
		}
		return nil, fmt.Errorf("logstore: roll %s: segment %d already exists", l.tp, newBase)
	}
	if err := old.onBecomeInactive(); err != nil {
		l.ioFailed(fmt.Errorf("%w: %v", ErrKafkaStorage, err))
		return nil, fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	o := l.segOpts(newBase, "", true)
	o.create = true
	o.now = now
	o.rollJitterMs = l.rollJitter()
	seg, err := openSegment(o)
	if err != nil {
		err = fmt.Errorf("%w: %v", ErrKafkaStorage, err)
		l.ioFailed(err)
		return nil, err
	}
	seg.rollJitterMs = o.rollJitterMs
	ns := make([]*Segment, len(segs), len(segs)+1)
	copy(ns, segs)
	ns = append(ns, seg)
	l.segs.Store(&ns)
	// UnifiedLog.roll: a producer snapshot named after the new segment's base offset,
	// written without fsync under the lock; the roll flusher syncs it.
	l.producerState.mapEndOffset = newBase
	snap, err := l.producerState.takeSnapshotWith(writeFileNoSync)
	if err != nil {
		l.ioFailed(err)
		return nil, err
	}
	l.scheduleRollFlushLocked(newBase, snap)
	l.log.WithFields(logrus.Fields{"segment": newBase}).Debug("rolled new log segment")
	return seg, nil
}

func (l *Log) validateAndAssignOffsets(batches []recordbatch.Batch, leaderEpoch int32, cfg *LogConfig, now time.Time, info *AppendInfo, allowControl bool) ([]byte, error) {
	nowMs := now.UnixMilli()
	target, fixed := recordbatch.CodecForName(cfg.CompressionType)
	offset := l.logEndOffset.Load()
	info.FirstOffset = offset
	logAppendTime := cfg.LogAppendTime()
	if logAppendTime {
		info.LogAppendTime = nowMs
	}
	out := make([]recordbatch.Batch, 0, len(batches))
	recompressed := false
	for _, b := range batches {
		if err := validateBatch(b, allowControl); err != nil {
			return nil, err
		}
		source := b.Codec()
		inPlace := !fixed || source == target
		if source == recordbatch.None && b.Control() {
			inPlace = true
		}
		var rerrs []RecordError
		var sentinel error
		maxTs := int64(-1)
		// Each record is parsed where it lies; nothing is allocated per record.
		it, err := b.Iter()
		if err != nil {
			return nil, batchErr(err)
		}
		var r recordbatch.Record
		// Per-batch facts, hoisted out of the per-record loop.
		compact, batchLogAppendTime := cfg.Compact(), b.LogAppendTime()
		baseTs, headerMaxTs := b.BaseTimestamp(), b.MaxTimestamp()
		for i := int32(0); it.Next(&r, false); i++ {
			if r.OffsetDelta != i {
				return nil, fmt.Errorf("%w: inner record %d has offset delta %d", ErrInvalidRecord, i, r.OffsetDelta)
			}
			if compact && r.Key == nil {
				rerrs = append(rerrs, RecordError{BatchIndex: i, Message: "Compacted topic cannot accept message without key in topic partition " + l.tp.String() + "."})
				sentinel = ErrInvalidRecord
				continue
			}
			ts := baseTs + r.TimestampDelta
			if batchLogAppendTime {
				ts = headerMaxTs
			}
			if !logAppendTime && ts != -1 {
				if tooOld, tooNew := ts < nowMs-cfg.MessageTimestampBeforeMaxMs, cfg.MessageTimestampAfterMaxMs <= math.MaxInt64-nowMs && ts > nowMs+cfg.MessageTimestampAfterMaxMs; tooOld || tooNew {
					rerrs = append(rerrs, RecordError{BatchIndex: i, Message: fmt.Sprintf(
						"Timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]",
						ts, int64(i), nowMs-cfg.MessageTimestampBeforeMaxMs, satAdd(nowMs, cfg.MessageTimestampAfterMaxMs))})
					if sentinel == nil {
						sentinel = ErrInvalidTimestamp
					}
					continue
				}
			} else if batchLogAppendTime {
				rerrs = append(rerrs, RecordError{BatchIndex: i, Message: "Invalid timestamp type in message. Producer should not set timestamp type to LogAppendTime."})
				if sentinel == nil {
					sentinel = ErrInvalidTimestamp
				}
				continue
			}
			if ts > maxTs {
				maxTs = ts
			}
		}
		if err := it.Err(); err != nil {
			return nil, batchErr(err)
		}
		if len(rerrs) > 0 {
			return nil, &RecordValidationError{Err: sentinel, Records: rerrs}
		}
		if !inPlace {
			nb, err := recordbatch.Recompress(b, target)
			if err != nil {
				return nil, batchErr(err)
			}
			b = nb
			recompressed = true
			if len(b) > int(cfg.MaxMessageBytes) {
				return nil, fmt.Errorf("%w: recompressed batch of %d bytes exceeds max.message.bytes %d", ErrMessageTooLarge, len(b), cfg.MaxMessageBytes)
			}
		}
		b.SetBaseOffset(offset)
		b.SetPartitionLeaderEpoch(leaderEpoch)
		if logAppendTime {
			b.SetMaxTimestamp(true, nowMs)
			maxTs = nowMs
		} else {
			b.SetMaxTimestamp(false, maxTs)
		}
		if maxTs > info.MaxTimestamp {
			info.MaxTimestamp, info.OffsetOfMaxTimestamp = maxTs, b.LastOffset()
		}
		info.NumRecords += int(b.RecordCount())
		offset = b.NextOffset()
		out = append(out, b)
	}
	info.LastOffset = offset - 1
	if len(out) == 1 {
		return out[0], nil
	}
	if !recompressed {
		return nil, nil // rewritten in place: the caller appends its own buffer
	}
	var data []byte
	for _, b := range out {
		data = append(data, b...)
	}
	return data, nil
}

func satAdd(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

// validateBatch is LogValidator.validateBatch for client batches.
func validateBatch(b recordbatch.Batch, allowControl bool) error {
	if b.BaseOffset() != 0 {
		return fmt.Errorf("%w: the baseOffset of the record batch should be 0, but it is %d", ErrInvalidRecord, b.BaseOffset())
	}
	countFromOffsets := int64(b.LastOffsetDelta()) + 1
	if countFromOffsets <= 0 {
		return fmt.Errorf("%w: batch has an invalid offset range [%d, %d]", ErrInvalidRecord, b.BaseOffset(), b.LastOffset())
	}
	if c := b.RecordCount(); c <= 0 {
		return fmt.Errorf("%w: invalid reported count for record batch: %d", ErrInvalidRecord, c)
	} else if int64(c) != countFromOffsets {
		return fmt.Errorf("%w: inconsistent batch offset range [%d, %d] and count of records %d", ErrInvalidRecord, b.BaseOffset(), b.LastOffset(), c)
	}
	if b.Control() && !allowControl {
		return fmt.Errorf("%w: clients are not allowed to write control records", ErrInvalidRecord)
	}
	if b.ProducerID() >= 0 && b.BaseSequence() < 0 && !b.Control() {
		return fmt.Errorf("%w: invalid sequence number %d in record batch with producerId %d", ErrInvalidRecord, b.BaseSequence(), b.ProducerID())
	}
	if b.Codec() > recordbatch.Zstd {
		return fmt.Errorf("%w: unknown compression codec %d", ErrCorruptMessage, b.Codec())
	}
	return nil
}
