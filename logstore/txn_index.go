package logstore

// The transaction index, mirroring Kafka's TransactionIndex and AbortedTxn
// (storage/internals/log): one <base>.txnindex per segment listing the aborted
// transactions whose ABORT marker lies in that segment, so a read_committed fetch can tell
// its consumer which producers' records to drop.
//
// Entry (34 bytes, big-endian, no header or checksum; AbortedTxn.TOTAL_SIZE):
//
//	int16 version = 0
//	int64 producerId
//	int64 firstOffset       first offset of the transaction
//	int64 lastOffset        offset of its ABORT marker
//	int64 lastStableOffset  the LSO once the transaction completed
//
// The file is created only when the first entry is appended (Kafka's lazily opened
// TransactionIndexFile); a segment without aborted transactions has none. Entries are not
// fsynced on append: the segment's flush syncs them, and recovery of an unflushed segment
// rebuilds the index from the log (LogSegment.recover).
//
// Concurrency: appends, truncations and renames happen under the owning Log's mu; a flush
// runs without it, so the file handle is guarded by fmu (Kafka's synchronized
// TransactionIndexFile). Readers (CollectAbortedTransactions from fetches) take no lock: the
// entries are also held in memory as a published slice that is only ever appended to in
// place or replaced, so a reader sees a consistent prefix.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
)

const (
	abortedTxnSize    = 34
	abortedTxnVersion = 0
)

func (a AbortedTxn) encode(buf []byte) {
	be := binary.BigEndian
	be.PutUint16(buf[0:], abortedTxnVersion)
	be.PutUint64(buf[2:], uint64(a.ProducerID))
	be.PutUint64(buf[10:], uint64(a.FirstOffset))
	be.PutUint64(buf[18:], uint64(a.LastOffset))
	be.PutUint64(buf[26:], uint64(a.LastStableOffset))
}

func decodeAbortedTxn(buf []byte) (AbortedTxn, int16) {
	be := binary.BigEndian
	return AbortedTxn{ProducerID: int64(be.Uint64(buf[2:])), FirstOffset: int64(be.Uint64(buf[10:])),
		LastOffset: int64(be.Uint64(buf[18:])), LastStableOffset: int64(be.Uint64(buf[26:]))}, int16(be.Uint16(buf))
}

// errCorruptTxnIndex is Kafka's CorruptIndexException for a .txnindex.
var errCorruptTxnIndex = errors.New("logstore: corrupt transaction index")

// txnIndex is one segment's TransactionIndex.
type txnIndex struct {
	fs         FS
	path       string
	baseOffset int64
	fmu        sync.Mutex
	f          File // nil until the file exists; guarded by fmu
	// entries is the published list, oldest first.
	entries atomic.Pointer[[]AbortedTxn]
}

// openTxnIndex opens path if it exists (without creating it) and reads its entries. A
// torn tail (a partial entry) is ignored and overwritten by the next append; a newer
// entry version or an entry below the base offset is errCorruptTxnIndex.
func openTxnIndex(fsys FS, path string, base int64, mayExist bool) (*txnIndex, error) {
	t := &txnIndex{fs: fsys, path: path, baseOffset: base}
	empty := []AbortedTxn{}
	t.entries.Store(&empty)
	if !mayExist {
		return t, nil
	}
	f, err := fsys.OpenFile(path, os.O_RDWR, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return t, nil
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	t.f = f
	st, err := f.Stat()
	if err != nil {
		return t, fmt.Errorf("stat %s: %w", path, err)
	}
	n := st.Size() / abortedTxnSize
	buf := make([]byte, n*abortedTxnSize)
	if _, err := f.ReadAt(buf, 0); err != nil {
		return t, fmt.Errorf("read %s: %w", path, err)
	}
	list := make([]AbortedTxn, 0, n)
	for p := buf; len(p) >= abortedTxnSize; p = p[abortedTxnSize:] {
		a, v := decodeAbortedTxn(p)
		if v > abortedTxnVersion {
			return t, fmt.Errorf("%w: %s: unexpected aborted transaction version %d", errCorruptTxnIndex, path, v)
		}
		if a.LastOffset < base {
			return t, fmt.Errorf("%w: %s: last offset %d of aborted transaction is less than start offset %d",
				errCorruptTxnIndex, path, a.LastOffset, base)
		}
		list = append(list, a)
	}
	t.entries.Store(&list)
	return t, nil
}

func (t *txnIndex) list() []AbortedTxn { return *t.entries.Load() }

// append adds an entry (TransactionIndex.append): last offsets must increase.
func (t *txnIndex) append(a AbortedTxn) error {
	cur := t.list()
	if n := len(cur); n > 0 && cur[n-1].LastOffset >= a.LastOffset {
		return fmt.Errorf("logstore: the last offset of appended transactions must increase sequentially, but %d is not greater than current last offset %d of index %s",
			a.LastOffset, cur[n-1].LastOffset, t.path)
	}
	t.fmu.Lock()
	defer t.fmu.Unlock()
	if t.f == nil {
		f, err := t.fs.OpenFile(t.path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("%w: create %s: %v", ErrKafkaStorage, t.path, err)
		}
		t.f = f
	}
	var buf [abortedTxnSize]byte
	a.encode(buf[:])
	if _, err := t.f.WriteAt(buf[:], int64(len(cur))*abortedTxnSize); err != nil {
		return fmt.Errorf("%w: write %s: %v", ErrKafkaStorage, t.path, err)
	}
	// Appending in place is safe for readers holding a shorter slice; a full backing
	// array is copied by append.
	next := append(cur, a)
	t.entries.Store(&next)
	return nil
}

// truncateTo drops the entries whose marker is at or above offset
// (TransactionIndex.truncateTo).
func (t *txnIndex) truncateTo(offset int64) error {
	cur := t.list()
	keep := len(cur)
	for i, a := range cur {
		if a.LastOffset >= offset {
			keep = i
			break
		}
	}
	return t.truncateEntries(keep)
}

// reset removes every entry (TransactionIndex.reset), before recovery rebuilds them.
func (t *txnIndex) reset() error { return t.truncateEntries(0) }

func (t *txnIndex) truncateEntries(keep int) error {
	cur := t.list()
	t.fmu.Lock()
	if t.f != nil {
		if st, err := t.f.Stat(); err != nil || st.Size() != int64(keep)*abortedTxnSize {
			if err := t.f.Truncate(int64(keep) * abortedTxnSize); err != nil {
				t.fmu.Unlock()
				return fmt.Errorf("%w: truncate %s: %v", ErrKafkaStorage, t.path, err)
			}
		}
	}
	t.fmu.Unlock()
	if keep == len(cur) {
		return nil
	}
	// A fresh array: readers may still hold the longer slice, and a later append must
	// not write into it.
	next := append(make([]AbortedTxn, 0, keep), cur[:keep]...)
	t.entries.Store(&next)
	return nil
}

// collect is TransactionIndex.collectAbortedTxns: entries overlapping [fetchOffset,
// upperBound); complete when an entry's LSO reaches upperBound (no later segment can hold
// a transaction that overlaps the range).
func (t *txnIndex) collect(dst []AbortedTxn, fetchOffset, upperBound int64) ([]AbortedTxn, bool) {
	for _, a := range t.list() {
		if a.LastOffset >= fetchOffset && a.FirstOffset < upperBound {
			dst = append(dst, a)
		}
		if a.LastStableOffset >= upperBound {
			return dst, true
		}
	}
	return dst, false
}

func (t *txnIndex) flush() error {
	t.fmu.Lock()
	defer t.fmu.Unlock()
	if t.f == nil {
		return nil
	}
	if err := t.f.Sync(); err != nil {
		return fmt.Errorf("%w: fsync %s: %v", ErrKafkaStorage, t.path, err)
	}
	return nil
}

// rename moves the file (if it exists) to path; the open handle stays valid.
func (t *txnIndex) rename(path string) error {
	t.fmu.Lock()
	defer t.fmu.Unlock()
	old := t.path
	t.path = path
	if t.f == nil {
		if _, err := t.fs.Stat(old); err != nil {
			return nil // never created
		}
	}
	if err := t.fs.Rename(old, path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: rename %s: %v", ErrKafkaStorage, old, err)
	}
	return nil
}

// setPath records that the directory holding the file was renamed.
func (t *txnIndex) setPath(path string) {
	t.fmu.Lock()
	t.path = path
	t.fmu.Unlock()
}

func (t *txnIndex) close() error {
	t.fmu.Lock()
	defer t.fmu.Unlock()
	if t.f == nil {
		return nil
	}
	err := t.f.Close()
	t.f = nil
	return err
}
