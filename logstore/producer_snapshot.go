package logstore

// producer_snapshot.go — producer state on disk and its rebuilding: the <offset>.snapshot
// files (ProducerStateManager.writeSnapshot/readSnapshot, takeSnapshot, truncation of old
// snapshots), loading the latest snapshot plus replaying the batches after it
// (UnifiedLog.rebuildProducerState), and the Log's producer-state accessors.
//
// Snapshot file (version 1, big-endian; ProducerStateManager.writeSnapshot):
//
//	int16  version = 1
//	uint32 crc      CRC-32C of every byte after this field
//	int32  count, then count entries of 46 bytes:
//	  int64 producerId | int16 epoch | int32 lastSequence | int64 lastOffset |
//	  int32 offsetDelta (lastOffset-firstOffset of the last batch) | int64 timestamp |
//	  int32 coordinatorEpoch | int64 currentTxnFirstOffset (-1 if none)

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// ProducerSnapshotFileName is <dir>/<20-digit offset>.snapshot.
func ProducerSnapshotFileName(dir string, offset int64) string {
	return filepath.Join(dir, FilenamePrefixFromOffset(offset)+SnapshotFileSuffix)
}

// encodeProducerSnapshot writes the snapshot bytes of entries (sorted by producer id).
func encodeProducerSnapshot(entries []*producerStateEntry) []byte {
	sort.Slice(entries, func(i, j int) bool { return entries[i].producerID < entries[j].producerID })
	buf := make([]byte, producerSnapshotHeader+producerSnapshotEntrySize*len(entries))
	be := binary.BigEndian
	be.PutUint16(buf[0:], producerSnapshotVersion)
	be.PutUint32(buf[6:], uint32(len(entries)))
	p := buf[producerSnapshotHeader:]
	for _, e := range entries {
		lastSeq, lastOffset, delta := int32(noSequence), int64(-1), int32(0)
		if n := len(e.batches); n > 0 {
			last := e.batches[n-1]
			lastSeq, lastOffset, delta = last.lastSeq, last.lastOffset, last.offsetDelta
		}
		be.PutUint64(p[0:], uint64(e.producerID))
		be.PutUint16(p[8:], uint16(e.epoch))
		be.PutUint32(p[10:], uint32(lastSeq))
		be.PutUint64(p[14:], uint64(lastOffset))
		be.PutUint32(p[22:], uint32(delta))
		be.PutUint64(p[26:], uint64(e.lastTimestamp))
		be.PutUint32(p[34:], uint32(e.coordinatorEpoch))
		be.PutUint64(p[38:], uint64(e.currentTxnFirstOffset))
		p = p[producerSnapshotEntrySize:]
	}
	be.PutUint32(buf[2:], recordbatch.CRC32C(buf[6:]))
	return buf
}

// errCorruptSnapshot is Kafka's CorruptSnapshotException.
var errCorruptSnapshot = errors.New("logstore: corrupt producer snapshot")

func decodeProducerSnapshot(buf []byte) ([]*producerStateEntry, error) {
	be := binary.BigEndian
	if len(buf) < producerSnapshotHeader {
		return nil, fmt.Errorf("%w: %d bytes", errCorruptSnapshot, len(buf))
	}
	if v := int16(be.Uint16(buf)); v != producerSnapshotVersion {
		return nil, fmt.Errorf("%w: version %d", errCorruptSnapshot, v)
	}
	if crc, computed := be.Uint32(buf[2:]), recordbatch.CRC32C(buf[6:]); crc != computed {
		return nil, fmt.Errorf("%w: crc %d, computed %d", errCorruptSnapshot, crc, computed)
	}
	n := int32(be.Uint32(buf[6:]))
	if n < 0 || int64(len(buf)-producerSnapshotHeader) != int64(n)*producerSnapshotEntrySize {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", errCorruptSnapshot, n, len(buf))
	}
	out := make([]*producerStateEntry, 0, n)
	for p := buf[producerSnapshotHeader:]; len(p) > 0; p = p[producerSnapshotEntrySize:] {
		e := newProducerStateEntry(int64(be.Uint64(p[0:])))
		e.epoch = int16(be.Uint16(p[8:]))
		lastSeq := int32(be.Uint32(p[10:]))
		lastOffset := int64(be.Uint64(p[14:]))
		delta := int32(be.Uint32(p[22:]))
		e.lastTimestamp = int64(be.Uint64(p[26:]))
		e.coordinatorEpoch = int32(be.Uint32(p[34:]))
		e.currentTxnFirstOffset = int64(be.Uint64(p[38:]))
		if lastOffset >= 0 {
			e.batches = append(e.batches, batchMetadata{lastSeq: lastSeq, lastOffset: lastOffset, offsetDelta: delta, timestamp: e.lastTimestamp})
		}
		out = append(out, e)
	}
	return out, nil
}

// setSnapshots takes the .snapshot files from the names of the files in dir (read once by
// load); stray .tmp files are removed.
func (m *producerStateManager) setSnapshots(names map[string]bool) {
	m.snapshots = m.snapshots[:0]
	for name := range names {
		if strings.HasSuffix(name, SnapshotFileSuffix+".tmp") {
			_ = m.fs.Remove(filepath.Join(m.dir, name))
			continue
		}
		if !strings.HasSuffix(name, SnapshotFileSuffix) || len(name) != 20+len(SnapshotFileSuffix) {
			continue
		}
		if off, ok := OffsetFromFileName(name); ok {
			m.snapshots = append(m.snapshots, off)
		}
	}
	sort.Slice(m.snapshots, func(i, j int) bool { return m.snapshots[i] < m.snapshots[j] })
}

// takeSnapshot writes the state as of mapEndOffset (ProducerStateManager.takeSnapshot),
// unless a snapshot at that offset already exists.
func (m *producerStateManager) takeSnapshot() error {
	_, err := m.takeSnapshotWith(WriteFileAtomic)
	return err
}

// takeSnapshotWith is takeSnapshot writing the file with write; it returns the path written
// ("" if the snapshot existed). A roll writes without fsync (Kafka's takeSnapshot(false)).
func (m *producerStateManager) takeSnapshotWith(write func(fsys FS, path string, data []byte) error) (string, error) {
	if m.mapEndOffset <= m.lastSnapOffset && m.hasSnapshot(m.mapEndOffset) {
		return "", nil
	}
	entries := make([]*producerStateEntry, 0, len(m.producers))
	for _, e := range m.producers {
		entries = append(entries, e)
	}
	data := encodeProducerSnapshot(entries)
	path := ProducerSnapshotFileName(m.dir, m.mapEndOffset)
	if err := write(m.fs, path, data); err != nil {
		return "", fmt.Errorf("%w: write producer snapshot %s: %v", ErrKafkaStorage, path, err)
	}
	if !m.hasSnapshot(m.mapEndOffset) {
		m.snapshots = append(m.snapshots, m.mapEndOffset)
		sort.Slice(m.snapshots, func(i, j int) bool { return m.snapshots[i] < m.snapshots[j] })
	}
	m.lastSnapOffset = m.mapEndOffset
	return path, nil
}

func (m *producerStateManager) hasSnapshot(off int64) bool {
	for _, s := range m.snapshots {
		if s == off {
			return true
		}
	}
	return false
}

func (m *producerStateManager) readSnapshot(off int64) ([]*producerStateEntry, error) {
	buf, err := readFileFS(m.fs, ProducerSnapshotFileName(m.dir, off))
	if err != nil {
		return nil, err
	}
	return decodeProducerSnapshot(buf)
}

// deleteSnapshotsWhere removes snapshot files whose offset matches drop.
func (m *producerStateManager) deleteSnapshotsWhere(drop func(off int64) bool) {
	keep := m.snapshots[:0]
	for _, off := range m.snapshots {
		if !drop(off) {
			keep = append(keep, off)
			continue
		}
		if err := m.fs.Remove(ProducerSnapshotFileName(m.dir, off)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			m.log.WithError(err).WithField("snapshot_offset", off).Warn("cannot delete producer snapshot")
		}
	}
	m.snapshots = keep
	if m.lastSnapOffset > 0 && !m.hasSnapshot(m.lastSnapOffset) {
		m.lastSnapOffset = 0
		if n := len(m.snapshots); n > 0 {
			m.lastSnapOffset = m.snapshots[n-1]
		}
	}
}

// loadFromSnapshot clears the state and loads the latest readable snapshot in
// [logStart, logEnd] (ProducerStateManager.loadFromSnapshot); a corrupt one is deleted and
// the next older one tried. It returns the offset replay must start from.
func (m *producerStateManager) loadFromSnapshot(logStart, logEnd, nowMs int64) int64 {
	m.producers = map[int64]*producerStateEntry{}
	m.clearTxns()
	for i := len(m.snapshots) - 1; i >= 0; i-- {
		off := m.snapshots[i]
		if off > logEnd || off < logStart {
			continue
		}
		entries, err := m.readSnapshot(off)
		if err != nil {
			m.log.WithError(err).WithField("snapshot_offset", off).Warn("failed to load producer snapshot, deleting it")
			m.deleteSnapshotsWhere(func(o int64) bool { return o == off })
			return m.loadFromSnapshot(logStart, logEnd, nowMs)
		}
		for _, e := range entries {
			if !m.isExpired(e, nowMs) {
				// loadProducerEntry: an open transaction is ongoing again.
				m.producers[e.producerID] = e
				if e.currentTxnFirstOffset >= 0 {
					m.ongoing[e.currentTxnFirstOffset] = e.producerID
				}
			}
		}
		m.mapEndOffset, m.lastSnapOffset = off, off
		return off
	}
	m.mapEndOffset = logStart
	return logStart
}

// ---- Log integration ----

// rebuildProducerState is UnifiedLog.rebuildProducerState: drop snapshots outside
// [logStart, logEnd], load the latest one and replay the batches after it to logEnd.
// Callers hold mu (or own the log during load).
func (l *Log) rebuildProducerState(logEnd int64, logStart int64, why string) error {
	m := l.producerState
	m.deleteSnapshotsWhere(func(off int64) bool { return off > logEnd || off < logStart })
	nowMs := l.clock().UnixMilli()
	from := m.loadFromSnapshot(logStart, logEnd, nowMs)
	start := m.replayedBatches
	if from < logEnd {
		if err := l.replayProducerState(from, logEnd); err != nil {
			return err
		}
	}
	m.mapEndOffset = logEnd
	m.lastExpiryCheckMs = nowMs
	fields := logrus.Fields{"producers": len(m.producers), "replayed_batches": m.replayedBatches - start,
		"replay_from_offset": from, "log_end_offset": logEnd, "reason": why}
	switch {
	case m.lastSnapOffset == from && m.hasSnapshot(from):
		fields["snapshot_offset"] = from
		l.log.WithFields(fields).Info("loaded producer state from snapshot")
	case m.replayedBatches == start:
		l.log.WithFields(fields).Debug("no producer state to load")
	default:
		l.log.WithFields(fields).Info("rebuilt producer state from the log (no snapshot)")
	}
	return nil
}

// replayProducerState reads the batch headers (and whole control batches) in [from, to)
// and updates producer state without checks (loadProducersFromRecords). Aborted
// transactions whose marker is in a segment recovery reset are written to its .txnindex
// again (LogSegment.recover's updateTxnIndex).
func (l *Log) replayProducerState(from, to int64) error {
	m := l.producerState
	var hdr [recordbatch.HeaderSize]byte
	var buf []byte
	segs := l.segments()
	for i, s := range segs {
		end := s.size.Load()
		if s.baseOffset >= to {
			break
		}
		pa := m.prepareAppend()
		seg := s
		var pos int64
		if from > s.baseOffset {
			bp, ok, err := s.translateOffset(from, end)
			if err != nil {
				return fmt.Errorf("%w: replay producer state: %v", ErrKafkaStorage, err)
			}
			if !ok {
				continue
			}
			pos = bp.pos
		}
		for pos < end {
			b, err := s.readHeader(&hdr, pos, end)
			if err != nil {
				break // a torn tail was cut by recovery; nothing valid after it
			}
			size := int64(b.BatchLength()) + recordbatch.LogOverhead
			if size < recordbatch.HeaderSize || b.BaseOffset() >= to {
				break
			}
			if b.LastOffset() >= from {
				m.replayedBatches++
				if b.Control() && b.ProducerID() >= 0 {
					whole, err := readBatchAt(s.osFile, pos, end, &buf)
					if err != nil {
						break
					}
					b = whole
				}
				if err := pa.update(b); err != nil {
					// loadProducersFromRecords throws here and the log does not load; recovery
					// cuts such a batch off unflushed segments, so this is a flushed one.
					return fmt.Errorf("replay producer state of segment %d at position %d: %w", s.baseOffset, pos, err)
				}
			}
			pos += size
		}
		next := to
		if i+1 < len(segs) && segs[i+1].baseOffset < to {
			next = segs[i+1].baseOffset
		}
		err := pa.commit(next, func(c completedTxn, lso int64) error {
			if !c.aborted || !seg.rebuildTxnIndex {
				return nil
			}
			return seg.txnIdx.append(AbortedTxn{ProducerID: c.producerID, FirstOffset: c.firstOffset, LastOffset: c.lastOffset, LastStableOffset: lso})
		})
		if err != nil {
			return err
		}
	}
	m.mapEndOffset = to
	return nil
}

// ProducerStates lists the producers this partition knows (tests, DescribeProducers).
func (l *Log) ProducerStates() []ProducerStateInfo {
	l.mu.Lock()
	defer l.unlock()
	return l.producerState.info()
}

// ProducerSnapshotOffsets lists the offsets of the .snapshot files.
func (l *Log) ProducerSnapshotOffsets() []int64 {
	l.mu.Lock()
	defer l.unlock()
	return append([]int64(nil), l.producerState.snapshots...)
}

// ProducerStateReplayedBatches is how many batches were read from the log to rebuild
// producer state since the log was opened (load and truncation).
func (l *Log) ProducerStateReplayedBatches() int64 {
	l.mu.Lock()
	defer l.unlock()
	return l.producerState.replayedBatches
}

// RemoveExpiredProducers drops producers idle longer than producer.id.expiration.ms
// (the manager's periodic check; appends also run it once per check interval).
func (l *Log) RemoveExpiredProducers() int {
	l.mu.Lock()
	defer l.unlock()
	if l.closed.Load() {
		return 0
	}
	return l.producerState.removeExpired(l.clock().UnixMilli())
}

// TakeProducerSnapshot writes a snapshot at the LEO.
func (l *Log) TakeProducerSnapshot() error {
	l.mu.Lock()
	defer l.unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	return l.takeProducerSnapshotLocked()
}

func (l *Log) takeProducerSnapshotLocked() error {
	m := l.producerState
	m.mapEndOffset = l.logEndOffset.Load()
	if err := m.takeSnapshot(); err != nil {
		l.ioFailed(err)
		return err
	}
	return nil
}

// DumpProducerSnapshot prints a .snapshot file as kafka-dump-log does
// (DumpLogSegments.dumpProducerIdSnapshot): one line per producer. A corrupt file is
// reported as an error.
func DumpProducerSnapshot(w io.Writer, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	entries, err := decodeProducerSnapshot(data)
	if err != nil {
		return err
	}
	for _, e := range entries {
		txn := "OptionalLong.empty"
		if e.currentTxnFirstOffset >= 0 {
			txn = fmt.Sprintf("OptionalLong[%d]", e.currentTxnFirstOffset)
		}
		fmt.Fprintf(w, "producerId: %d producerEpoch: %d coordinatorEpoch: %d currentTxnFirstOffset: %s lastTimestamp: %d ",
			e.producerID, e.epoch, e.coordinatorEpoch, txn, e.lastTimestamp)
		if len(e.batches) > 0 {
			m := e.batches[0]
			fmt.Fprintf(w, "firstSequence: %d lastSequence: %d lastOffset: %d offsetDelta: %d timestamp: %d",
				m.firstSeq(), m.lastSeq, m.lastOffset, m.offsetDelta, m.timestamp)
		}
		fmt.Fprintln(w)
	}
	return nil
}
