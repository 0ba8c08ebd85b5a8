package logstore

// Retention, mirroring UnifiedLog.deleteOldSegments and its three breach rules
// (deleteLogStartOffsetBreachedSegments, deleteRetentionSizeBreachedSegments,
// deleteRetentionMsBreachedSegments) and LogManager.cleanupLogs. The segment mechanics
// (oldest first, never past the high watermark, roll first when everything expired,
// rename to .deleted, advance the log start) live in Log.DeleteOldSegments.

import (
	"errors"
	"time"

	"github.com/sirupsen/logrus"
)

// DeleteRetainedSegments applies Kafka's retention rules to l at time now and returns how
// many segments were deleted. With cleanup.policy containing delete the rules run in
// Kafka's order: log start breach, size, time; with compact only, just the log start.
func DeleteRetainedSegments(l *Log, now time.Time) (int, error) {
	cfg := l.Config()
	total := 0
	n, err := deleteLogStartOffsetBreached(l)
	total += n
	if err != nil || !cfg.Delete() {
		return total, err
	}
	n, err = deleteRetentionSizeBreached(l, cfg.RetentionBytes)
	total += n
	if err != nil {
		return total, err
	}
	n, err = deleteRetentionMsBreached(l, cfg.RetentionMs, now.UnixMilli())
	total += n
	return total, err
}

// deleteLogStartOffsetBreached deletes segments wholly below the log start offset (after
// DeleteRecords): a segment goes when its successor's base is <= logStartOffset.
func deleteLogStartOffsetBreached(l *Log) (int, error) {
	start := l.LogStartOffset()
	return l.DeleteOldSegments(func(_ SegmentInfo, next *SegmentInfo) bool {
		return next != nil && next.BaseOffset <= start
	}, "log start offset breach")
}

// deleteRetentionSizeBreached deletes the oldest segments while the log minus the segment
// stays at or above retention.bytes. The predicate is stateful, as Kafka's is: it is
// asked oldest first and stops at the first false.
func deleteRetentionSizeBreached(l *Log, retentionBytes int64) (int, error) {
	if retentionBytes < 0 {
		return 0, nil
	}
	var size int64
	for _, s := range l.Segments() {
		size += s.Size
	}
	if size < retentionBytes {
		return 0, nil
	}
	diff := size - retentionBytes
	return l.DeleteOldSegments(func(seg SegmentInfo, _ *SegmentInfo) bool {
		if diff-seg.Size >= 0 {
			diff -= seg.Size
			return true
		}
		return false
	}, "retention size breach")
}

// deleteRetentionMsBreached deletes segments whose largest timestamp is older than
// retention.ms. LargestTimestamp falls back to the file's mtime for a segment with no
// timestamps, as LogSegment.largestTimestamp does.
func deleteRetentionMsBreached(l *Log, retentionMs, nowMs int64) (int, error) {
	if retentionMs < 0 {
		return 0, nil
	}
	return l.DeleteOldSegments(func(seg SegmentInfo, _ *SegmentInfo) bool {
		return nowMs-seg.LargestTimestamp > retentionMs
	}, "retention time breach")
}

// cleanupLogs is LogManager.cleanupLogs, run every log.retention.check.interval.ms. Logs
// the cleaner is working on are skipped this round.
func (m *Manager) cleanupLogs() int {
	now := m.clock()
	total := 0
	for _, logs := range m.onlineLogsByDir() {
		for _, l := range logs {
			if m.isFutureLog(l) {
				continue // its start offset follows the current log's (the mover copies it)
			}
			if m.cleaner != nil && !m.cleaner.tryPause(l.TopicPartition()) {
				continue
			}
			n, err := DeleteRetainedSegments(l, now)
			if m.cleaner != nil {
				m.cleaner.resume(l.TopicPartition())
			}
			total += n
			if err != nil && !errors.Is(err, ErrKafkaStorage) && !errors.Is(err, ErrClosed) {
				m.log.WithError(err).WithFields(logrus.Fields{"topic": l.TopicPartition().Topic, "partition": l.TopicPartition().Partition}).
					Warn("retention failed")
			}
		}
	}
	if total > 0 {
		m.log.WithField("segments", total).Debug("log cleanup deleted segments")
	}
	return total
}
