package logstore

// Producer state for the idempotent producer: Kafka's ProducerStateManager,
// ProducerStateEntry, ProducerAppendInfo and BatchMetadata (storage/internals/log).
//
// Per producer id the log keeps the epoch and the metadata of the last five batches
// (first/last sequence, first/last offset, max timestamp), so a leader can acknowledge a
// retried batch with its original offsets, reject gaps (OUT_OF_ORDER_SEQUENCE_NUMBER) and
// zombies (INVALID_PRODUCER_EPOCH). The state is written to <offset>.snapshot files on roll
// and on close and rebuilt at load from the latest snapshot plus the batches after it.
//
// Snapshots on disk and the rebuilding of the state at load are in producer_snapshot.go.
//
// Transactions: a producer's first transactional batch opens a transaction
// (currentTxnFirstOffset, and an entry in ongoing keyed by its first offset); its COMMIT or
// ABORT marker closes it (a completed transaction, moved to unreplicated until the high
// watermark passes the marker). The first unstable offset is the lowest first offset of
// both; the last stable offset is min(it, high watermark) (txn.go). Aborted transactions
// are written to the marker's segment's .txnindex (txn_index.go) with the LSO at that
// moment (ProducerStateManager.lastStableOffset). Loading a snapshot reopens the
// transactions its entries still have open.
//
// Deviations: entries are written in producer id order (Kafka iterates a HashMap) so the
// bytes are deterministic; a snapshot is written to .tmp, fsynced and renamed (Kafka writes
// the file in place and fsyncs later); a snapshot exactly at the log start offset is kept
// (Kafka's truncateAndReload deletes those <= logStartOffset, losing the state of producers
// whose batches retention removed); a follower or recovery replaying a non-transactional
// batch of a producer with an open transaction only warns (Kafka's appendDataBatch throws
// INVALID_TXN_STATE for every origin, which would stall replication).
//
// Concurrency: owned by its Log and used under Log.mu only.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync/atomic"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

const (
	// numBatchesToRetain is ProducerStateEntry.NUM_BATCHES_TO_RETAIN.
	numBatchesToRetain = 5

	producerSnapshotVersion   = 1
	producerSnapshotEntrySize = 46
	producerSnapshotHeader    = 2 + 4 + 4 // version, crc, entry count

	// DefaultProducerIDExpirationMs is producer.id.expiration.ms (1 day).
	DefaultProducerIDExpirationMs = 86400000
	// DefaultProducerIDExpirationCheckIntervalMs is producer.id.expiration.check.interval.ms (10 min).
	DefaultProducerIDExpirationCheckIntervalMs = 600000

	noProducerEpoch = -1
	noSequence      = -1
)

// batchMetadata is Kafka's BatchMetadata: one appended batch of a producer.
type batchMetadata struct {
	lastSeq     int32
	lastOffset  int64
	offsetDelta int32
	timestamp   int64
}

func (b batchMetadata) firstSeq() int32    { return decrementSequence(b.lastSeq, b.offsetDelta) }
func (b batchMetadata) firstOffset() int64 { return b.lastOffset - int64(b.offsetDelta) }

// producerStateEntry is Kafka's ProducerStateEntry.
type producerStateEntry struct {
	producerID            int64
	epoch                 int16
	batches               []batchMetadata // oldest first, at most numBatchesToRetain
	lastTimestamp         int64
	coordinatorEpoch      int32
	currentTxnFirstOffset int64 // -1 if none
}

func newProducerStateEntry(pid int64) *producerStateEntry {
	return &producerStateEntry{producerID: pid, epoch: noProducerEpoch, lastTimestamp: -1,
		coordinatorEpoch: -1, currentTxnFirstOffset: -1}
}

func (e *producerStateEntry) clone() *producerStateEntry {
	c := *e
	c.batches = append(make([]batchMetadata, 0, numBatchesToRetain), e.batches...)
	return &c
}

func (e *producerStateEntry) lastSeq() int32 {
	if len(e.batches) == 0 {
		return noSequence
	}
	return e.batches[len(e.batches)-1].lastSeq
}

// addBatch is ProducerStateEntry.addBatch: an epoch change forgets the old batches.
func (e *producerStateEntry) addBatch(epoch int16, lastSeq int32, lastOffset int64, offsetDelta int32, ts int64) {
	if e.epoch != epoch {
		e.batches = e.batches[:0]
		e.epoch = epoch
	}
	if len(e.batches) == numBatchesToRetain {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:numBatchesToRetain-1]
	}
	e.batches = append(e.batches, batchMetadata{lastSeq: lastSeq, lastOffset: lastOffset, offsetDelta: offsetDelta, timestamp: ts})
	e.lastTimestamp = ts
}

// findDuplicateBatch is ProducerStateEntry.findDuplicateBatch: same epoch and the same
// sequence range as one of the retained batches.
func (e *producerStateEntry) findDuplicateBatch(b recordbatch.Batch) (batchMetadata, bool) {
	if b.ProducerEpoch() != e.epoch {
		return batchMetadata{}, false
	}
	first, last := b.BaseSequence(), lastSequence(b)
	for _, m := range e.batches {
		if m.firstSeq() == first && m.lastSeq == last {
			return m, true
		}
	}
	return batchMetadata{}, false
}

// incrementSequence (DefaultRecordBatch.incrementSequence) is in dumplog.go.

// decrementSequence is DefaultRecordBatch.decrementSequence.
func decrementSequence(seq, dec int32) int32 {
	if seq < dec {
		return math.MaxInt32 - (dec - seq) + 1
	}
	return seq - dec
}

func lastSequence(b recordbatch.Batch) int32 {
	if b.BaseSequence() == noSequence {
		return noSequence
	}
	return incrementSequence(b.BaseSequence(), b.LastOffsetDelta())
}

// inSequence is ProducerAppendInfo.inSequence.
func inSequence(lastSeq, nextSeq int32) bool {
	return nextSeq == lastSeq+1 || (nextSeq == 0 && lastSeq == math.MaxInt32)
}

// ProducerStateInfo is one producer's state as the log knows it (for tests and
// DescribeProducers).
type ProducerStateInfo struct {
	ProducerID            int64
	ProducerEpoch         int16
	LastSequence          int32
	LastOffset            int64 // -1 if no batch is retained
	LastTimestamp         int64
	CoordinatorEpoch      int32
	CurrentTxnFirstOffset int64
	RetainedBatches       int
}

// producerStateManager is Kafka's ProducerStateManager for one partition.
type producerStateManager struct {
	dir       string
	fs        FS
	log       *logrus.Entry
	producers map[int64]*producerStateEntry
	// mapEndOffset is the offset up to which the state covers the log (lastMapOffset).
	mapEndOffset int64
	// lastSnapOffset is the offset of the newest snapshot written or loaded.
	lastSnapOffset int64
	// snapshots are the offsets of the .snapshot files in dir, ascending.
	snapshots []int64

	expirationMs, checkIntervalMs int64
	lastExpiryCheckMs             int64
	// liveExpirationMs, when positive, is a dynamic producer.id.expiration.ms replacing
	// expirationMs; it is shared with the manager, hence atomic.
	liveExpirationMs *atomic.Int64

	// ongoing are the open transactions by first offset -> producer id (ongoingTxns).
	ongoing map[int64]int64
	// unreplicated are completed transactions whose marker is not yet below the high
	// watermark, by first offset (unreplicatedTxns).
	unreplicated map[int64]txnMeta
	// verification holds KIP-890 verification state per producer id
	// (verificationStates): the guard a produce must present.
	verification map[int64]*verificationState

	// replayedBatches counts batches read from the log to rebuild state (load/truncate);
	// tests use it to show a restart reads the snapshot, not the whole log.
	replayedBatches int64
}

func newProducerStateManager(dir string, fsys FS, log *logrus.Entry, expirationMs, checkIntervalMs int64) *producerStateManager {
	if expirationMs <= 0 {
		expirationMs = DefaultProducerIDExpirationMs
	}
	if checkIntervalMs <= 0 {
		checkIntervalMs = DefaultProducerIDExpirationCheckIntervalMs
	}
	return &producerStateManager{dir: dir, fs: fsys, log: log, producers: map[int64]*producerStateEntry{},
		expirationMs: expirationMs, checkIntervalMs: checkIntervalMs, ongoing: map[int64]int64{},
		unreplicated: map[int64]txnMeta{}, verification: map[int64]*verificationState{}}
}

// txnMeta is Kafka's TxnMetadata of a completed transaction.
type txnMeta struct {
	producerID, lastOffset int64
}

// completedTxn is Kafka's CompletedTxn: a marker closed a transaction with data.
type completedTxn struct {
	producerID, firstOffset, lastOffset int64
	aborted                             bool
}

// txnEvent is a transaction opened or completed by one batch of an append, kept in log
// order so the LSO of each completion sees exactly the transactions open at its marker.
type txnEvent struct {
	start bool // else completed
	c     completedTxn
}

// verificationState is Kafka's VerificationStateEntry: the guard, and the lowest base
// sequence (for the highest epoch) of the batches that started a verification. A client's
// batch with a higher base sequence is refused while the state lives, so a later batch
// cannot open the transaction ahead of an earlier one that failed verification with a
// retriable error (which would leave that one retrying OUT_OF_ORDER_SEQUENCE forever).
type verificationState struct {
	guard          *VerificationGuard
	lowestSequence int32
	epoch          int16
	timestampMs    int64
}

// maybeUpdateLowestSequenceAndEpoch is VerificationStateEntry's: a lower sequence of the
// same epoch lowers the bound; a higher epoch resets both (sequences restart with it).
func (v *verificationState) maybeUpdateLowestSequenceAndEpoch(sequence int32, epoch int16) {
	if epoch == v.epoch && sequence < v.lowestSequence {
		v.lowestSequence = sequence
	}
	if epoch > v.epoch {
		v.epoch, v.lowestSequence = epoch, sequence
	}
}

// firstUnstableOffset is ProducerStateManager.firstUnstableOffset: the lowest first offset
// of ongoing or unreplicated transactions.
func (m *producerStateManager) firstUnstableOffset() (int64, bool) {
	fuo, ok := int64(0), false
	for off := range m.ongoing {
		if !ok || off < fuo {
			fuo, ok = off, true
		}
	}
	for off := range m.unreplicated {
		if !ok || off < fuo {
			fuo, ok = off, true
		}
	}
	return fuo, ok
}

// removeUnreplicated drops completed transactions whose marker is below offset
// (onHighWatermarkUpdated / onLogStartOffsetIncremented).
func (m *producerStateManager) removeUnreplicated(offset int64) {
	for first, t := range m.unreplicated {
		if t.lastOffset < offset {
			delete(m.unreplicated, first)
		}
	}
}

// lastStableOffsetFor is ProducerStateManager.lastStableOffset(completedTxn): the first
// offset of the earliest transaction of another producer still open, else the offset after
// the marker.
func (m *producerStateManager) lastStableOffsetFor(c completedTxn) int64 {
	lso, ok := int64(0), false
	for first, pid := range m.ongoing {
		if pid != c.producerID && (!ok || first < lso) {
			lso, ok = first, true
		}
	}
	if !ok {
		return c.lastOffset + 1
	}
	return lso
}

// completeTxn is ProducerStateManager.completeTxn.
func (m *producerStateManager) completeTxn(c completedTxn) {
	if _, ok := m.ongoing[c.firstOffset]; !ok {
		m.log.WithFields(logrus.Fields{"producer_id": c.producerID, "first_offset": c.firstOffset, "last_offset": c.lastOffset}).
			Warn("completed a transaction that was not started")
	}
	delete(m.ongoing, c.firstOffset)
	m.unreplicated[c.firstOffset] = txnMeta{producerID: c.producerID, lastOffset: c.lastOffset}
}

func (m *producerStateManager) hasOngoingTxn(pid int64) bool {
	e, ok := m.producers[pid]
	return ok && e.currentTxnFirstOffset >= 0
}

// clearTxns forgets every transaction (truncation, reload).
func (m *producerStateManager) clearTxns() {
	m.ongoing = map[int64]int64{}
	m.unreplicated = map[int64]txnMeta{}
}

// batchUpdate is what one batch changes in its producer's entry (the header fields and,
// for a control batch, its marker; the batch bytes themselves may be reused by the caller).
type batchUpdate struct {
	pid           int64
	epoch         int16
	lastSeq       int32
	baseOffset    int64
	lastOffset    int64
	timestamp     int64
	control       bool
	transactional bool
	// For control batches: marker is false for an empty batch (cleaned), which changes
	// nothing; any other control batch is a marker (updateOf refuses the rest).
	marker           bool
	abort            bool
	coordinatorEpoch int32
}

// updateOf reads the producer fields of b; for a control batch b must be whole (its first
// record is the marker) and a control batch that is not a marker is an error
// (ErrInvalidRecord), as ProducerAppendInfo.append throws.
func updateOf(b recordbatch.Batch) (batchUpdate, error) {
	u := batchUpdate{pid: b.ProducerID(), epoch: b.ProducerEpoch(), lastSeq: lastSequence(b), baseOffset: b.BaseOffset(),
		lastOffset: b.LastOffset(), timestamp: b.MaxTimestamp(), control: b.Control(), transactional: b.Transactional()}
	if u.control {
		m, ok, err := parseEndTxnMarker(b)
		if err != nil {
			return batchUpdate{}, err
		}
		if ok {
			u.marker, u.abort, u.coordinatorEpoch, u.timestamp = true, !m.commit, m.coordinatorEpoch, m.timestamp
		}
	}
	return u, nil
}

// apply is ProducerAppendInfo.appendDataBatch / appendEndTxnMarker on e. It returns the
// transaction the batch opened or completed, if any.
func (u batchUpdate) apply(e *producerStateEntry) (txnEvent, bool) {
	if u.control {
		if !u.marker {
			return txnEvent{}, false
		}
		var ev txnEvent
		done := e.currentTxnFirstOffset >= 0
		if done {
			ev.c = completedTxn{producerID: u.pid, firstOffset: e.currentTxnFirstOffset, lastOffset: u.baseOffset, aborted: u.abort}
		}
		// ProducerStateEntry.update(epoch, coordinatorEpoch, timestamp).
		if u.epoch != e.epoch {
			e.epoch = u.epoch
			e.batches = e.batches[:0]
		}
		e.coordinatorEpoch = u.coordinatorEpoch
		e.currentTxnFirstOffset = -1
		e.lastTimestamp = u.timestamp
		return ev, done
	}
	e.addBatch(u.epoch, u.lastSeq, u.lastOffset, int32(u.lastOffset-u.baseOffset), u.timestamp)
	if u.transactional && e.currentTxnFirstOffset < 0 {
		e.currentTxnFirstOffset = u.baseOffset
		return txnEvent{start: true, c: completedTxn{producerID: u.pid, firstOffset: u.baseOffset}}, true
	}
	return txnEvent{}, false
}

// endTxnMarker is Kafka's EndTransactionMarker read from a control batch.
type endTxnMarker struct {
	commit           bool
	coordinatorEpoch int32
	timestamp        int64
}

// Control record types (ControlRecordType).
const (
	controlTypeAbort  = 0
	controlTypeCommit = 1
)

// parseEndTxnMarker reads the COMMIT/ABORT marker of a control batch as
// ProducerAppendInfo.append does: only the first record counts, decoded with
// EndTransactionMarker.deserialize. Key: int16 version | int16 type; value: int16 version |
// int32 coordinatorEpoch; later versions may append bytes. ok is false (and err nil) only
// for an empty batch, a transaction the cleaner removed whole. Anything else that is not a
// COMMIT or ABORT marker is an error wrapping ErrInvalidRecord: a key or value too short or
// null, a negative key or value version, or another control type (Kafka throws
// InvalidRecordException for the first ones and IllegalArgumentException for the type).
func parseEndTxnMarker(b recordbatch.Batch) (m endTxnMarker, ok bool, err error) {
	if b.RecordCount() == 0 {
		return endTxnMarker{}, false, nil
	}
	it, err := b.Iter()
	if err != nil {
		return endTxnMarker{}, false, fmt.Errorf("%w: control batch at offset %d: %v", ErrInvalidRecord, b.BaseOffset(), err)
	}
	var r recordbatch.Record
	if !it.Next(&r, false) {
		err := it.Err()
		if err == nil {
			err = errors.New("no record")
		}
		return endTxnMarker{}, false, fmt.Errorf("%w: control batch at offset %d: %v", ErrInvalidRecord, b.BaseOffset(), err)
	}
	fail := func(format string, args ...any) (endTxnMarker, bool, error) {
		return endTxnMarker{}, false, fmt.Errorf("%w: control batch at offset %d: %s", ErrInvalidRecord, b.BaseOffset(), fmt.Sprintf(format, args...))
	}
	// ControlRecordType.parseTypeId.
	if len(r.Key) < 4 {
		return fail("invalid control record key of %d bytes, at least 4 needed", len(r.Key))
	}
	if version := int16(binary.BigEndian.Uint16(r.Key)); version < 0 {
		return fail("invalid version found for control record: %d", version)
	}
	typ := int16(binary.BigEndian.Uint16(r.Key[2:]))
	// EndTransactionMarker.deserializeValue.
	if typ != controlTypeAbort && typ != controlTypeCommit {
		return fail("invalid control record type for end transaction marker: %d", typ)
	}
	if len(r.Value) < 6 {
		return fail("invalid value size found for end transaction marker: %d bytes, at least 6 needed", len(r.Value))
	}
	if version := int16(binary.BigEndian.Uint16(r.Value)); version < 0 {
		return fail("invalid version found for end transaction marker: %d", version)
	}
	m = endTxnMarker{commit: typ == controlTypeCommit, coordinatorEpoch: int32(binary.BigEndian.Uint32(r.Value[2:])),
		timestamp: b.BaseTimestamp() + r.TimestampDelta}
	if b.LogAppendTime() {
		m.timestamp = b.MaxTimestamp()
	}
	return m, true, nil
}

// endTxnMarkerBatch builds the control batch of a COMMIT or ABORT marker
// (MemoryRecords.withEndTransactionMarker): transactional and control, base sequence -1,
// one record timestamped nowMs.
func endTxnMarkerBatch(producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32, nowMs int64) []byte {
	typ := int16(controlTypeAbort)
	if commit {
		typ = controlTypeCommit
	}
	key := make([]byte, 4)
	binary.BigEndian.PutUint16(key[2:], uint16(typ))
	value := make([]byte, 6)
	binary.BigEndian.PutUint32(value[2:], uint32(coordinatorEpoch))
	h := recordbatch.Header{Attributes: recordbatch.AttrTransactional | recordbatch.AttrControl, BaseTimestamp: nowMs,
		MaxTimestamp: nowMs, ProducerID: producerID, ProducerEpoch: producerEpoch, BaseSequence: noSequence}
	b, _ := recordbatch.Build(h, []recordbatch.Record{{Key: key, Value: value}}, recordbatch.None)
	return b
}

// producerAppend is a pending update (ProducerAppendInfo for every producer of one append):
// nothing changes in the manager until commit. The common append (one batch) is held in
// one without allocating; more batches move to cloned entries in updated.
type producerAppend struct {
	m       *producerStateManager
	one     batchUpdate
	hasOne  bool
	updated map[int64]*producerStateEntry
	// events are the transactions opened and completed by the batches in updated, in log
	// order; txnPIDs the producers with transactional batches (their verification state
	// is spent: the transaction is open or over).
	events  []txnEvent
	txnPIDs []int64
}

func (m *producerStateManager) prepareAppend() producerAppend { return producerAppend{m: m} }

// pending returns a cloned entry for pid holding this append's earlier batches.
func (pa *producerAppend) pending(pid int64) *producerStateEntry {
	if pa.updated == nil {
		pa.updated = map[int64]*producerStateEntry{}
	}
	if pa.hasOne {
		pa.hasOne = false
		one := pa.one
		pa.pending(one.pid)
		pa.record(one, pa.updated[one.pid])
	}
	if e, ok := pa.updated[pid]; ok {
		return e
	}
	var e *producerStateEntry
	if cur, ok := pa.m.producers[pid]; ok {
		e = cur.clone()
	} else {
		e = newProducerStateEntry(pid)
	}
	pa.updated[pid] = e
	return e
}

// findDuplicate is the leader's duplicate check (UnifiedLog.analyzeAndValidateProducerState
// for AppendOrigin.CLIENT) against the state before this append.
func (m *producerStateManager) findDuplicate(b recordbatch.Batch) (batchMetadata, bool) {
	if b.ProducerID() < 0 {
		return batchMetadata{}, false
	}
	e, ok := m.producers[b.ProducerID()]
	if !ok {
		return batchMetadata{}, false
	}
	return e.findDuplicateBatch(b)
}

// validate checks a leader batch against the pending state (ProducerAppendInfo
// checkProducerEpoch, checkSequence for AppendOrigin.CLIENT, checkCoordinatorEpoch for
// markers, and appendDataBatch's transactional check).
func (pa *producerAppend) validate(b recordbatch.Batch, origin AppendOrigin) error {
	pid := b.ProducerID()
	if pid < 0 {
		return nil
	}
	cur, hasCur := pa.m.producers[pid]
	curEpoch := int16(noProducerEpoch)
	if hasCur {
		curEpoch = cur.epoch
	}
	// The entry as this append left it so far.
	epoch, lastSeq, coordEpoch, txnFirst := curEpoch, int32(noSequence), int32(-1), int64(-1)
	if hasCur {
		lastSeq, coordEpoch, txnFirst = cur.lastSeq(), cur.coordinatorEpoch, cur.currentTxnFirstOffset
	}
	if e, ok := pa.updated[pid]; ok {
		epoch, lastSeq, coordEpoch, txnFirst = e.epoch, e.lastSeq(), e.coordinatorEpoch, e.currentTxnFirstOffset
	} else if pa.hasOne && pa.one.pid == pid {
		e := pa.pending(pid)
		epoch, lastSeq, coordEpoch, txnFirst = e.epoch, e.lastSeq(), e.coordinatorEpoch, e.currentTxnFirstOffset
	}
	appendEpoch, firstSeq := b.ProducerEpoch(), b.BaseSequence()
	if appendEpoch < epoch {
		return fmt.Errorf("%w: epoch of producer %d is %d, which is smaller than the last seen epoch %d",
			ErrInvalidProducerEpoch, pid, appendEpoch, epoch)
	}
	if b.Control() {
		m, ok, err := parseEndTxnMarker(b)
		if err != nil {
			return err
		}
		if ok && m.coordinatorEpoch < coordEpoch {
			return fmt.Errorf("%w: invalid coordinator epoch for producer %d: %d (zombie), %d (current)",
				ErrTransactionCoordinatorFenced, pid, m.coordinatorEpoch, coordEpoch)
		}
		return nil
	}
	// The coordinators' batches carry no meaningful sequence: checkSequence is for clients.
	if origin == OriginClient {
		if v, ok := pa.m.verification[pid]; ok && firstSeq > v.lowestSequence {
			return fmt.Errorf("%w: out of order sequence number for producer %d: %d (incoming seq. number), %d (earliest seen sequence)",
				ErrOutOfOrderSequence, pid, firstSeq, v.lowestSequence)
		}
		if appendEpoch != epoch {
			if firstSeq != 0 && epoch != noProducerEpoch {
				return fmt.Errorf("%w: invalid sequence number for new epoch of producer %d: %d (request epoch), %d (seq. number), %d (current producer epoch)",
					ErrOutOfOrderSequence, pid, appendEpoch, firstSeq, epoch)
			}
		} else if curEpoch != noProducerEpoch && !inSequence(lastSeq, firstSeq) {
			// No known epoch (state deleted by retention or DeleteRecords): any sequence goes.
			return fmt.Errorf("%w: out of order sequence number for producer %d: %d (incoming seq. number), %d (current end sequence number)",
				ErrOutOfOrderSequence, pid, firstSeq, lastSeq)
		}
	}
	if txnFirst >= 0 && !b.Transactional() {
		return fmt.Errorf("%w: expected transactional write from producer %d", ErrInvalidTxnState, pid)
	}
	return nil
}

// update records a batch (after validate for leaders; followers and recovery check only
// that a control batch is a marker), as ProducerAppendInfo.append. On error nothing of b
// is recorded.
func (pa *producerAppend) update(b recordbatch.Batch) error {
	pid := b.ProducerID()
	if pid < 0 {
		return nil
	}
	u, err := updateOf(b)
	if err != nil {
		return err
	}
	if !u.control {
		e, ok := pa.updated[pid]
		if !ok && pa.hasOne && pa.one.pid == pid {
			e, ok = pa.pending(pid), true
		} else if !ok {
			e, ok = pa.m.producers[pid]
		}
		if ok && u.epoch < e.epoch {
			// Replicated or recovered data from an older epoch: Kafka only warns.
			pa.m.log.WithFields(logrus.Fields{"producer_id": pid, "producer_epoch": u.epoch, "current_epoch": e.epoch, "offset": u.baseOffset}).
				Warn("producer epoch smaller than the last seen epoch")
		}
	}
	if pa.updated == nil && !pa.hasOne {
		pa.one, pa.hasOne = u, true
		return nil
	}
	pa.record(u, pa.pending(pid))
	return nil
}

// record applies u to the pending entry e and notes the transaction event.
func (pa *producerAppend) record(u batchUpdate, e *producerStateEntry) {
	if u.transactional {
		pa.txnPIDs = append(pa.txnPIDs, u.pid)
	}
	if ev, ok := u.apply(e); ok {
		pa.events = append(pa.events, ev)
	}
}

// commit publishes the pending state (ProducerStateManager.update + completeTxn +
// updateMapEndOffset). Each completed transaction is handed to index with the LSO at its
// marker before it is completed (UnifiedLog.append writes aborted ones to the txn index);
// the first error of index is returned, the state is updated regardless.
func (pa *producerAppend) commit(nextOffset int64, index func(c completedTxn, lso int64) error) error {
	m := pa.m
	if pa.hasOne {
		e, ok := m.producers[pa.one.pid]
		if !ok {
			e = newProducerStateEntry(pa.one.pid)
			m.producers[pa.one.pid] = e
		}
		if ev, ok := pa.one.apply(e); ok {
			pa.events = append(pa.events, ev)
		}
		if pa.one.transactional {
			delete(m.verification, pa.one.pid)
		}
	}
	for pid, e := range pa.updated {
		m.producers[pid] = e
	}
	var firstErr error
	for _, ev := range pa.events {
		if ev.start {
			m.ongoing[ev.c.firstOffset] = ev.c.producerID
			continue
		}
		if index != nil {
			if err := index(ev.c, m.lastStableOffsetFor(ev.c)); err != nil && firstErr == nil {
				firstErr = err
			}
		}
		m.completeTxn(ev.c)
	}
	// UnifiedLog.updateProducers: a transactional batch spends the verification state.
	for _, pid := range pa.txnPIDs {
		delete(m.verification, pid)
	}
	m.mapEndOffset = nextOffset
	return firstErr
}

// removeExpired drops producers idle for producer.id.expiration.ms with no open
// transaction (ProducerStateManager.removeExpiredProducers).
func (m *producerStateManager) removeExpired(nowMs int64) int {
	m.lastExpiryCheckMs = nowMs
	exp := m.expiration()
	n := 0
	for pid, e := range m.producers {
		if e.currentTxnFirstOffset < 0 && nowMs-e.lastTimestamp >= exp {
			delete(m.producers, pid)
			n++
		}
	}
	for pid, v := range m.verification {
		if nowMs-v.timestampMs >= exp {
			delete(m.verification, pid)
		}
	}
	return n
}

func (m *producerStateManager) isExpired(e *producerStateEntry, nowMs int64) bool {
	return e.currentTxnFirstOffset < 0 && nowMs-e.lastTimestamp >= m.expiration()
}

// expiration is producer.id.expiration.ms now.
func (m *producerStateManager) expiration() int64 {
	if m.liveExpirationMs != nil {
		if v := m.liveExpirationMs.Load(); v > 0 {
			return v
		}
	}
	return m.expirationMs
}

// maybeRemoveExpired runs removeExpired at most once per check interval (Kafka's
// PeriodicProducerExpirationCheck task, here driven by appends and the manager).
func (m *producerStateManager) maybeRemoveExpired(nowMs int64) {
	if nowMs-m.lastExpiryCheckMs < m.checkIntervalMs {
		return
	}
	if n := m.removeExpired(nowMs); n > 0 {
		m.log.WithField("producers", n).Debug("removed expired producer ids")
	}
}

func (m *producerStateManager) info() []ProducerStateInfo {
	out := make([]ProducerStateInfo, 0, len(m.producers))
	for _, e := range m.producers {
		pi := ProducerStateInfo{ProducerID: e.producerID, ProducerEpoch: e.epoch, LastSequence: e.lastSeq(), LastOffset: -1,
			LastTimestamp: e.lastTimestamp, CoordinatorEpoch: e.coordinatorEpoch, CurrentTxnFirstOffset: e.currentTxnFirstOffset,
			RetainedBatches: len(e.batches)}
		if n := len(e.batches); n > 0 {
			pi.LastOffset = e.batches[n-1].lastOffset
		}
		out = append(out, pi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}

// ---- snapshot files ----
