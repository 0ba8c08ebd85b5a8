package logstore

// OffsetIndex and TimeIndex mirror Kafka's AbstractIndex/OffsetIndex/TimeIndex: a file of
// fixed-size big-endian entries, memory-mapped, preallocated while the segment is active and
// trimmed to its entries when it rolls or closes.
//
//	.index      8 bytes: int32 relativeOffset | int32 position
//	.timeindex 12 bytes: int64 timestamp | int32 relativeOffset
//
// Concurrency: one writer (the log's appender) appends entries and publishes the count
// atomically; lookups take mu.RLock only to keep the mapping alive, and allocate nothing.
// Remapping (resize, trim, close) takes mu.Lock.

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

const (
	offsetIndexEntrySize = 8
	timeIndexEntrySize   = 12
)

type index struct {
	fs         FS
	path       string
	baseOffset int64
	entrySize  int

	mu struct {
		sync.RWMutex
		data   []byte // the mapping; nil when unmapped (empty file or not loaded yet)
		loaded bool
		size   int64 // file length
	}
	entries    atomic.Int64
	maxEntries atomic.Int64
}

// open opens (creating if missing) an index file. maxBytes > 0 preallocates a new
// file (and grows an existing one) to maxBytes rounded down to the entry size, as for the
// active segment; otherwise the file keeps its length. The mapping is made lazily.
func (idx *index) open(fsys FS, path string, baseOffset int64, entrySize int, maxBytes int32) error {
	idx.fs, idx.path, idx.baseOffset, idx.entrySize = fsys, path, baseOffset, entrySize
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open index %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat index %s: %w", path, err)
	}
	size := st.Size()
	newlyCreated := size == 0
	entries := size / int64(entrySize)
	if newlyCreated {
		entries = 0
	}
	idx.entries.Store(entries)
	if maxBytes > 0 {
		want := int64(maxBytes) / int64(entrySize) * int64(entrySize)
		if want < entries*int64(entrySize) {
			want = entries * int64(entrySize)
		}
		if want != size {
			if err := f.Truncate(want); err != nil {
				return fmt.Errorf("preallocate index %s: %w", path, err)
			}
			size = want
		}
	}
	idx.mu.size = size
	idx.maxEntries.Store(size / int64(entrySize))
	return nil
}

// load maps the file; callers hold mu.Lock.
func (idx *index) loadLocked() error {
	if idx.mu.loaded {
		return nil
	}
	idx.mu.loaded = true
	if idx.mu.size == 0 {
		return nil
	}
	fd, err := unix.Open(idx.path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("map index %s: %w", idx.path, err)
	}
	defer unix.Close(fd)
	data, err := unix.Mmap(fd, 0, int(idx.mu.size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		idx.mu.loaded = false
		return fmt.Errorf("map index %s: %w", idx.path, err)
	}
	idx.mu.data = data
	return nil
}

// rlock returns with mu read-locked and the file mapped.
func (idx *index) rlock() error {
	idx.mu.RLock()
	if idx.mu.loaded {
		return nil
	}
	idx.mu.RUnlock()
	idx.mu.Lock()
	err := idx.loadLocked()
	idx.mu.Unlock()
	if err != nil {
		return err
	}
	idx.mu.RLock()
	return nil
}

func (idx *index) unmapLocked() {
	if idx.mu.data != nil {
		_ = unix.Munmap(idx.mu.data)
		idx.mu.data = nil
	}
	idx.mu.loaded = false
}

// resize sets the file length to newSize rounded down to the entry size (never below the
// entries held) and remaps it.
func (idx *index) resize(newSize int64) error {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	newSize = newSize / int64(idx.entrySize) * int64(idx.entrySize)
	if min := idx.entries.Load() * int64(idx.entrySize); newSize < min {
		newSize = min
	}
	if newSize == idx.mu.size {
		return nil
	}
	idx.unmapLocked()
	if err := idx.fs.Truncate(idx.path, newSize); err != nil {
		return fmt.Errorf("resize index %s: %w", idx.path, err)
	}
	idx.mu.size = newSize
	idx.maxEntries.Store(newSize / int64(idx.entrySize))
	return nil // mapped again lazily on next use
}

// trimToValidSize drops the preallocated tail.
func (idx *index) trimToValidSize() error {
	return idx.resize(idx.entries.Load() * int64(idx.entrySize))
}

func (idx *index) isFull() bool { return idx.entries.Load() >= idx.maxEntries.Load() }

// reset drops every entry (for a rebuild).
func (idx *index) reset() { idx.entries.Store(0) }

// truncateEntries keeps the first n entries.
func (idx *index) truncateEntries(n int64) {
	if n < idx.entries.Load() {
		idx.entries.Store(n)
	}
}

func (idx *index) flush() error {
	idx.mu.RLock()
	defer idx.mu.RUnlock()
	if idx.mu.data == nil {
		return nil
	}
	if err := unix.Msync(idx.mu.data, unix.MS_SYNC); err != nil {
		return fmt.Errorf("flush index %s: %w", idx.path, err)
	}
	return nil
}

// close trims and unmaps.
func (idx *index) close() error {
	err := idx.trimToValidSize()
	idx.mu.Lock()
	idx.unmapLocked()
	idx.mu.loaded = true // stays unmapped; a closed index must not be used
	idx.mu.Unlock()
	return err
}

// unmapOnly unmaps without trimming (before deleting or renaming the file).
func (idx *index) unmapOnly() {
	idx.mu.Lock()
	idx.unmapLocked()
	idx.mu.Unlock()
}

// appendEntry writes one entry at the end; the caller is the single writer.
func (idx *index) appendEntry(entry []byte) error {
	if err := idx.rlock(); err != nil {
		return err
	}
	defer idx.mu.RUnlock()
	n := idx.entries.Load()
	if n >= idx.maxEntries.Load() || idx.mu.data == nil {
		return fmt.Errorf("index %s is full (%d entries)", idx.path, n)
	}
	copy(idx.mu.data[n*int64(idx.entrySize):], entry)
	idx.entries.Store(n + 1)
	return nil
}

// preadEntry reads entry n straight from the file when the index is not mapped, so opening
// a log (sanity checks, last entries) maps nothing.
func (idx *index) preadEntry(n int64, buf []byte) (bool, error) {
	idx.mu.RLock()
	loaded := idx.mu.loaded
	idx.mu.RUnlock()
	if loaded {
		return false, nil
	}
	fd, err := unix.Open(idx.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return true, fmt.Errorf("read index %s: %w", idx.path, err)
	}
	defer unix.Close(fd)
	if m, err := unix.Pread(fd, buf, n*int64(idx.entrySize)); err != nil || m != len(buf) {
		return true, fmt.Errorf("read index %s entry %d: short read (%v)", idx.path, n, err)
	}
	return true, nil
}

// OffsetIndex maps relative offsets to .log positions.
type OffsetIndex struct{ index }

func openOffsetIndex(fsys FS, path string, baseOffset int64, maxBytes int32) (*OffsetIndex, error) {
	oi := &OffsetIndex{}
	if err := oi.open(fsys, path, baseOffset, offsetIndexEntrySize, maxBytes); err != nil {
		return nil, err
	}
	return oi, nil
}

func (oi *OffsetIndex) entryAt(data []byte, n int64) (relOffset int32, pos int32) {
	e := data[n*offsetIndexEntrySize:]
	return int32(binary.BigEndian.Uint32(e)), int32(binary.BigEndian.Uint32(e[4:]))
}

// Entries is the number of entries.
func (oi *OffsetIndex) Entries() int64 { return oi.entries.Load() }

// Entry returns entry n as (absolute offset, position).
func (oi *OffsetIndex) Entry(n int64) (int64, int64, error) {
	if n >= 0 && n < oi.entries.Load() {
		var e [offsetIndexEntrySize]byte
		if done, err := oi.preadEntry(n, e[:]); done {
			if err != nil {
				return 0, 0, err
			}
			return oi.baseOffset + int64(int32(binary.BigEndian.Uint32(e[:]))), int64(int32(binary.BigEndian.Uint32(e[4:]))), nil
		}
	}
	if err := oi.rlock(); err != nil {
		return 0, 0, err
	}
	defer oi.mu.RUnlock()
	if n < 0 || n >= oi.entries.Load() || oi.mu.data == nil {
		return 0, 0, fmt.Errorf("index %s: no entry %d", oi.path, n)
	}
	r, p := oi.entryAt(oi.mu.data, n)
	return oi.baseOffset + int64(r), int64(p), nil
}

// Lookup returns the greatest entry with offset <= target, or (baseOffset, 0) if none.
func (oi *OffsetIndex) Lookup(target int64) (offset int64, position int64) {
	if err := oi.rlock(); err != nil {
		return oi.baseOffset, 0
	}
	defer oi.mu.RUnlock()
	n := oi.entries.Load()
	data := oi.mu.data
	rel := target - oi.baseOffset
	if n == 0 || data == nil || rel < 0 {
		return oi.baseOffset, 0
	}
	// Largest slot with relOffset <= rel.
	lo, hi := int64(0), n-1
	if r, _ := oi.entryAt(data, 0); int64(r) > rel {
		return oi.baseOffset, 0
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if r, _ := oi.entryAt(data, mid); int64(r) <= rel {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	r, p := oi.entryAt(data, lo)
	return oi.baseOffset + int64(r), int64(p)
}

// FetchUpperBoundOffset returns the offset of the first entry whose position is at or
// past position (OffsetIndex.fetchUpperBoundOffset); false if none. A read_committed fetch
// that returned the bytes up to position bounds its aborted-transaction lookup with it.
func (oi *OffsetIndex) FetchUpperBoundOffset(position int64) (int64, bool) {
	if err := oi.rlock(); err != nil {
		return 0, false
	}
	defer oi.mu.RUnlock()
	n := oi.entries.Load()
	data := oi.mu.data
	if n == 0 || data == nil {
		return 0, false
	}
	// Smallest slot with pos >= position; positions grow with the slots.
	lo, hi := int64(0), n
	for lo < hi {
		mid := (lo + hi) / 2
		if _, p := oi.entryAt(data, mid); int64(p) >= position {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo == n {
		return 0, false
	}
	r, _ := oi.entryAt(data, lo)
	return oi.baseOffset + int64(r), true
}

// LastOffset is the offset of the last entry, or baseOffset if empty.
func (oi *OffsetIndex) LastOffset() int64 {
	n := oi.entries.Load()
	if n == 0 {
		return oi.baseOffset
	}
	off, _, err := oi.Entry(n - 1)
	if err != nil {
		return oi.baseOffset
	}
	return off
}

// Append adds (offset, position); offset must exceed the last entry's.
func (oi *OffsetIndex) Append(offset int64, position int64) error {
	if n := oi.entries.Load(); n > 0 && offset <= oi.LastOffset() {
		return fmt.Errorf("index %s: offset %d not above last entry %d", oi.path, offset, oi.LastOffset())
	}
	var e [offsetIndexEntrySize]byte
	binary.BigEndian.PutUint32(e[:], uint32(offset-oi.baseOffset))
	binary.BigEndian.PutUint32(e[4:], uint32(position))
	return oi.appendEntry(e[:])
}

// TruncateTo removes entries with offset >= offset.
func (oi *OffsetIndex) TruncateTo(offset int64) {
	if err := oi.rlock(); err != nil {
		return
	}
	n := oi.entries.Load()
	keep := int64(0)
	for keep < n && oi.mu.data != nil {
		r, _ := oi.entryAt(oi.mu.data, keep)
		if oi.baseOffset+int64(r) >= offset {
			break
		}
		keep++
	}
	oi.mu.RUnlock()
	oi.truncateEntries(keep)
}

// sanityCheck reports a corrupt index (Kafka's OffsetIndex.sanityCheck plus a check for the
// zero tail a crash leaves in a preallocated file).
func (oi *OffsetIndex) sanityCheck(logSize int64) error {
	n := oi.entries.Load()
	if oi.mu.size%offsetIndexEntrySize != 0 {
		return fmt.Errorf("index %s: length %d not a multiple of %d", oi.path, oi.mu.size, offsetIndexEntrySize)
	}
	if n == 0 {
		return nil
	}
	lastOff, lastPos, err := oi.Entry(n - 1)
	if err != nil {
		return err
	}
	if lastOff < oi.baseOffset || lastPos > logSize {
		return fmt.Errorf("index %s: last entry (%d, %d) out of range", oi.path, lastOff, lastPos)
	}
	if n > 1 {
		prevOff, prevPos, _ := oi.Entry(n - 2)
		if prevOff >= lastOff || prevPos >= lastPos {
			return fmt.Errorf("index %s: entries not increasing at the end", oi.path)
		}
	}
	return nil
}

// TimeIndex maps timestamps to relative offsets.
type TimeIndex struct{ index }

func openTimeIndex(fsys FS, path string, baseOffset int64, maxBytes int32) (*TimeIndex, error) {
	ti := &TimeIndex{}
	if err := ti.open(fsys, path, baseOffset, timeIndexEntrySize, maxBytes); err != nil {
		return nil, err
	}
	return ti, nil
}

func (ti *TimeIndex) entryAt(data []byte, n int64) (ts int64, relOffset int32) {
	e := data[n*timeIndexEntrySize:]
	return int64(binary.BigEndian.Uint64(e)), int32(binary.BigEndian.Uint32(e[8:]))
}

// Entries is the number of entries.
func (ti *TimeIndex) Entries() int64 { return ti.entries.Load() }

// Entry returns entry n as (timestamp, absolute offset).
func (ti *TimeIndex) Entry(n int64) (int64, int64, error) {
	if n >= 0 && n < ti.entries.Load() {
		var e [timeIndexEntrySize]byte
		if done, err := ti.preadEntry(n, e[:]); done {
			if err != nil {
				return 0, 0, err
			}
			return int64(binary.BigEndian.Uint64(e[:])), ti.baseOffset + int64(int32(binary.BigEndian.Uint32(e[8:]))), nil
		}
	}
	if err := ti.rlock(); err != nil {
		return 0, 0, err
	}
	defer ti.mu.RUnlock()
	if n < 0 || n >= ti.entries.Load() || ti.mu.data == nil {
		return 0, 0, fmt.Errorf("time index %s: no entry %d", ti.path, n)
	}
	ts, r := ti.entryAt(ti.mu.data, n)
	return ts, ti.baseOffset + int64(r), nil
}

// LastEntry is the last (timestamp, offset), or (-1, baseOffset) if empty.
func (ti *TimeIndex) LastEntry() (int64, int64) {
	n := ti.entries.Load()
	if n == 0 {
		return -1, ti.baseOffset
	}
	ts, off, err := ti.Entry(n - 1)
	if err != nil {
		return -1, ti.baseOffset
	}
	return ts, off
}

// Lookup returns the entry with the greatest timestamp <= target, or (-1, baseOffset).
func (ti *TimeIndex) Lookup(target int64) (timestamp int64, offset int64) {
	if err := ti.rlock(); err != nil {
		return -1, ti.baseOffset
	}
	defer ti.mu.RUnlock()
	n := ti.entries.Load()
	data := ti.mu.data
	if n == 0 || data == nil {
		return -1, ti.baseOffset
	}
	if ts, _ := ti.entryAt(data, 0); ts > target {
		return -1, ti.baseOffset
	}
	lo, hi := int64(0), n-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if ts, _ := ti.entryAt(data, mid); ts <= target {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	ts, r := ti.entryAt(data, lo)
	return ts, ti.baseOffset + int64(r)
}

// MaybeAppend adds (timestamp, offset) if timestamp exceeds the last entry's (and the index
// is not full, unless skipFullCheck — the final entry at roll may use the last slot).
func (ti *TimeIndex) MaybeAppend(timestamp, offset int64, skipFullCheck bool) error {
	n := ti.entries.Load()
	if n > 0 {
		lastTs, lastOff := ti.LastEntry()
		if timestamp <= lastTs || offset < lastOff {
			return nil
		}
	}
	if !skipFullCheck && ti.isFull() {
		return fmt.Errorf("time index %s is full", ti.path)
	}
	if ti.isFull() {
		return nil
	}
	var e [timeIndexEntrySize]byte
	binary.BigEndian.PutUint64(e[:], uint64(timestamp))
	binary.BigEndian.PutUint32(e[8:], uint32(offset-ti.baseOffset))
	return ti.appendEntry(e[:])
}

// TruncateTo removes entries with offset >= offset.
func (ti *TimeIndex) TruncateTo(offset int64) {
	if err := ti.rlock(); err != nil {
		return
	}
	n := ti.entries.Load()
	keep := int64(0)
	for keep < n && ti.mu.data != nil {
		_, r := ti.entryAt(ti.mu.data, keep)
		if ti.baseOffset+int64(r) >= offset {
			break
		}
		keep++
	}
	ti.mu.RUnlock()
	ti.truncateEntries(keep)
}

func (ti *TimeIndex) sanityCheck() error {
	if ti.mu.size%timeIndexEntrySize != 0 {
		return fmt.Errorf("time index %s: length %d not a multiple of %d", ti.path, ti.mu.size, timeIndexEntrySize)
	}
	n := ti.entries.Load()
	if n == 0 {
		return nil
	}
	lastTs, lastOff := ti.LastEntry()
	if lastOff < ti.baseOffset {
		return fmt.Errorf("time index %s: last offset %d below base", ti.path, lastOff)
	}
	if n > 1 {
		prevTs, prevOff, _ := ti.Entry(n - 2)
		if prevTs >= lastTs || prevOff > lastOff {
			return fmt.Errorf("time index %s: entries not increasing at the end", ti.path)
		}
	}
	return nil
}
