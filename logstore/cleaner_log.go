package logstore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// forEachBatch and replaceWithCleaned adapt *Log to the cleaner (compactLog).

// forEachBatch reads every batch of the segment with base offset segBase with positional
// reads up to its published size. b is only valid during fn.
func (l *Log) forEachBatch(segBase int64, fn func(b recordbatch.Batch) error) error {
	var seg *Segment
	for _, s := range l.segments() {
		if s.baseOffset == segBase {
			seg = s
			break
		}
	}
	if seg == nil {
		return fmt.Errorf("%s: no segment with base offset %d", l.tp, segBase)
	}
	end := seg.Size()
	var buf []byte
	for pos := int64(0); pos < end; {
		b, err := readBatchAt(seg.File(), pos, end, &buf)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read %s segment %d at %d: %w", l.tp, segBase, pos, err)
		}
		if err := fn(b); err != nil {
			return err
		}
		pos += int64(len(b))
	}
	return nil
}

// replaceWithCleaned is Cleaner.cleanSegments + UnifiedLog.replaceSegments: the batches
// emit writes go to a new segment <base>.log.cleaned (indexed like any append), which is
// trimmed and fsynced, renamed to .swap (from here on a crash completes the swap at the next
// load: LogLoader, recovery.go completeSwap), swapped into the segment list in place of the
// old ones under the log's lock, the old ones renamed .deleted (closed and removed after
// file.delete.delay.ms, so readers holding them finish), and the .swap renamed into place.
// oldBases must be contiguous, not include the active segment, and start at base; write
// takes one whole batch per call, offsets increasing. This is the only implementation of
// the swap; its crash points (testCleanerCrash) are tested in cleaner_manager_test.go.
func (l *Log) replaceWithCleaned(base int64, oldBases []int64, emit func(write func(batch []byte) error, index func(AbortedTxn) error) error) error {
	if len(oldBases) == 0 || oldBases[0] != base {
		return fmt.Errorf("logstore: replace %s: cleaned base %d must equal the first old base", l.tp, base)
	}
	old := make(map[int64]*Segment, len(oldBases))
	cur := l.segments()
	for _, b := range oldBases {
		for _, s := range cur {
			if s.baseOffset == b {
				old[b] = s
			}
		}
		if old[b] == nil {
			return fmt.Errorf("%w: segment %d of %s is gone", errCleaningAborted, b, l.tp)
		}
	}
	o := l.segOpts(base, CleanedFileSuffix, true)
	o.create = true
	for _, p := range []string{LogFileName(l.dir, base), IndexFileName(l.dir, base), TimeIndexFileName(l.dir, base), TxnIndexFileName(l.dir, base)} {
		// Leftovers of an earlier failed pass.
		if err := l.fs.Remove(p + CleanedFileSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return l.cleanerIOError(fmt.Errorf("remove %s: %w", p+CleanedFileSuffix, err))
		}
	}
	seg, err := openSegment(o)
	if err != nil {
		return l.cleanerIOError(err)
	}
	discard := func() { _ = seg.deleteFiles() }
	now := l.clock()
	var pos int64
	lastOffset := base - 1
	err = emit(func(raw []byte) error {
		b, rest, err := recordbatch.Next(raw)
		if err != nil || len(rest) != 0 {
			return fmt.Errorf("logstore: cleaned batch is not one whole batch: %v", err)
		}
		last, maxTs := b.LastOffset(), b.MaxTimestamp()
		if b.BaseOffset() <= lastOffset || !seg.canConvertToRelativeOffset(last) {
			return fmt.Errorf("logstore: cleaned batch offsets [%d, %d] out of order or range", b.BaseOffset(), last)
		}
		if seg.offsetIdx.isFull() || seg.timeIdx.isFull() {
			return fmt.Errorf("logstore: cleaned segment %d index full", base)
		}
		if err := seg.append(last, maxTs, last, raw, pos); err != nil {
			return err
		}
		seg.afterAppend(last, maxTs, last, int64(len(raw)), pos, now)
		pos += int64(len(raw))
		lastOffset = last
		return nil
	}, func(a AbortedTxn) error {
		return seg.txnIdx.append(a)
	})
	if err == nil {
		err = seg.onBecomeInactive()
	}
	if err == nil {
		err = seg.flush()
	}
	if err == nil && cleanerCrashAt("cleaned") {
		return errSimulatedCrash
	}
	if err == nil {
		err = seg.changeSuffix(SwapFileSuffix)
	}
	if err == nil {
		err = l.fs.SyncDir(l.dir)
	}
	if err == nil && cleanerCrashAt("swap") {
		return errSimulatedCrash
	}
	if err != nil {
		discard()
		if errors.Is(err, ErrKafkaStorage) || isIOError(err) {
			return l.cleanerIOError(err)
		}
		return err
	}

	l.mu.Lock()
	defer l.unlock() // reports an I/O error to the manager once mu is released
	if l.closed.Load() || l.mu.offline {
		discard()
		return fmt.Errorf("%w: %s closed or offline", errCleaningAborted, l.tp)
	}
	segs := l.segments()
	first := -1
	for i, s := range segs {
		if s == old[oldBases[0]] {
			first = i
			break
		}
	}
	// Truncated, deleted or rolled meanwhile, or asked to replace the active segment: the
	// cleaned copy no longer matches the log.
	if first < 0 || first+len(oldBases) > len(segs)-1 {
		discard()
		return fmt.Errorf("%w: segments %v of %s changed or include the active one", errCleaningAborted, oldBases, l.tp)
	}
	drop := segs[first : first+len(oldBases)]
	for j, b := range oldBases {
		if drop[j] != old[b] {
			discard()
			return fmt.Errorf("%w: segments %v of %s are not contiguous", errCleaningAborted, oldBases, l.tp)
		}
	}
	drop = append([]*Segment(nil), drop...)
	next := make([]*Segment, 0, len(segs)-len(drop)+1)
	next = append(next, segs[:first]...)
	next = append(next, seg)
	next = append(next, segs[first+len(drop):]...)
	// Old files move to .deleted before the .swap takes the plain names (one old segment
	// shares the new one's base offset).
	if err := l.deleteSegmentsLocked(drop); err != nil {
		return err
	}
	if cleanerCrashAt("old-deleted") {
		return errSimulatedCrash
	}
	if err := seg.changeSuffix(""); err != nil {
		l.ioFailed(err)
		return err
	}
	l.segs.Store(&next)
	return nil
}

// cleanerIOError reports a cleaner write failure like any other I/O error of the log.
func (l *Log) cleanerIOError(err error) error {
	if !errors.Is(err, ErrKafkaStorage) {
		err = fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	l.mu.Lock()
	l.ioFailed(err)
	l.unlock()
	return err
}

// testCleanerCrash, set only by tests, makes replaceWithCleaned stop at a named point as
// if the process died there, leaving the files as they are.
var testCleanerCrash func(point string) bool

var errSimulatedCrash = errors.New("logstore: simulated crash")

func cleanerCrashAt(point string) bool { return testCleanerCrash != nil && testCleanerCrash(point) }
