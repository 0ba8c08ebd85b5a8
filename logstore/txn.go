package logstore

// Transactions on the partition side: Kafka's AppendOrigin, VerificationGuard and the
// transactional parts of UnifiedLog — appendAsLeader with an origin and a verification
// guard (KIP-890 part 1), the append of COMMIT/ABORT markers, lastStableOffset /
// firstUnstableOffset, collectAbortedTransactions, activeProducers. The bookkeeping of open
// and completed transactions is ProducerStateManager's (producer_state.go); aborted
// transactions are kept in each segment's .txnindex (txn_index.go).
//
// The last stable offset (LSO) is min(first unstable offset, high watermark): the first
// unstable offset is the first offset of the oldest transaction that is still open, or
// whose marker is not yet below the high watermark. read_committed fetches stop there.

import (
	"fmt"
	"sort"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// AppendOrigin is Kafka's AppendOrigin: who appends, which decides the checks.
type AppendOrigin int8

const (
	// OriginClient is a producer: sequence and epoch checks, duplicate detection, no
	// control batches.
	OriginClient AppendOrigin = iota
	// OriginCoordinator is the group or transaction coordinator writing its own topic:
	// epoch checks but no sequence checks (its batches always carry base sequence 0);
	// control batches only through AppendTxnMarker.
	OriginCoordinator
	// OriginReplication is a follower (AppendAsFollower): no checks, the leader made them.
	OriginReplication
)

func (o AppendOrigin) String() string {
	switch o {
	case OriginClient:
		return "CLIENT"
	case OriginCoordinator:
		return "COORDINATOR"
	case OriginReplication:
		return "REPLICATION"
	}
	return fmt.Sprintf("AppendOrigin(%d)", int8(o))
}

// VerificationGuard is Kafka's VerificationGuard (KIP-890 part 1): a token handed out by
// MaybeStartTransactionVerification before the leader asks the transaction coordinator
// whether the partition is part of the producer's transaction, and required by the first
// transactional append of that producer. A marker written in between (the transaction
// ended) or a first transactional append spends it, so a stale verification cannot open a
// transaction the coordinator does not know about. Guards compare by identity.
type VerificationGuard struct {
	producerID int64 // also gives the struct a size, so every guard is a distinct pointer
}

// AppendOptions tune AppendAsLeaderOpts.
type AppendOptions struct {
	Origin AppendOrigin
	// Guard is the guard MaybeStartTransactionVerification returned, once the coordinator
	// verified the partition; nil if none was needed or verification is off.
	Guard *VerificationGuard
	// RequireVerification is transaction.partition.verification.enable: a transactional
	// batch of a producer without an open transaction here needs a valid Guard.
	RequireVerification bool
}

// AbortedTxn is one aborted transaction (a .txnindex entry; Kafka's AbortedTxn).
type AbortedTxn struct {
	ProducerID, FirstOffset, LastOffset, LastStableOffset int64
}

// MaybeStartTransactionVerification returns the producer's verification guard, creating
// it if needed (UnifiedLog.maybeStartTransactionVerification); nil if the producer has an
// open transaction here, which needs no verification. sequence is the base sequence of
// the batch to verify (-1, NO_SEQUENCE, for a coordinator's append): until the producer's
// first transactional append, a client batch whose base sequence is above the lowest one
// seen here at the current epoch fails with ErrOutOfOrderSequence.
func (l *Log) MaybeStartTransactionVerification(producerID int64, sequence int32, producerEpoch int16) *VerificationGuard {
	l.mu.Lock()
	defer l.unlock()
	m := l.producerState
	if m.hasOngoingTxn(producerID) {
		return nil
	}
	v, ok := m.verification[producerID]
	if !ok {
		v = &verificationState{guard: &VerificationGuard{producerID: producerID}, lowestSequence: sequence,
			epoch: producerEpoch, timestampMs: l.clock().UnixMilli()}
		m.verification[producerID] = v
	}
	v.maybeUpdateLowestSequenceAndEpoch(sequence, producerEpoch)
	return v.guard
}

// checkVerification is analyzeAndValidateProducerState's verification check for client
// and coordinator appends: a transactional data batch of a producer with no open
// transaction must present the producer's current guard when verification applies.
// Callers hold mu.
func (l *Log) checkVerification(b recordbatch.Batch, opts AppendOptions) error {
	if opts.Origin == OriginReplication || !b.Transactional() || b.Control() {
		return nil
	}
	if !opts.RequireVerification && opts.Guard == nil {
		return nil
	}
	m := l.producerState
	pid := b.ProducerID()
	if m.hasOngoingTxn(pid) {
		return nil
	}
	if v, ok := m.verification[pid]; ok && opts.Guard != nil && v.guard == opts.Guard {
		return nil
	}
	return fmt.Errorf("%w: record of producer %d was not part of an ongoing transaction", ErrInvalidTxnState, pid)
}

// AppendAsLeaderOpts is AppendAsLeader with an origin and a verification guard
// (UnifiedLog.appendAsLeader(records, leaderEpoch, origin, ..., verificationGuard)).
// Control batches are refused (ErrInvalidRecord) whatever the origin: markers go through
// AppendTxnMarker.
func (l *Log) AppendAsLeaderOpts(records []byte, leaderEpoch int32, opts AppendOptions) (AppendInfo, error) {
	if opts.Origin == OriginReplication {
		return AppendInfo{}, fmt.Errorf("logstore: %s: a leader append cannot have origin %s", l.tp, opts.Origin)
	}
	return l.append(records, leaderEpoch, true, opts, false)
}

// AppendTxnMarker appends one COMMIT or ABORT control batch for the producer as leader
// with origin COORDINATOR (Partition.appendRecordsToLeader of
// MemoryRecords.withEndTransactionMarker, from WriteTxnMarkers). A producer epoch older
// than the producer's is ErrInvalidProducerEpoch; a coordinator epoch older than the one of
// the producer's last marker is ErrTransactionCoordinatorFenced. A marker for a producer
// without an open transaction is appended too (it closes nothing).
func (l *Log) AppendTxnMarker(producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32, leaderEpoch int32) (AppendInfo, error) {
	batch := endTxnMarkerBatch(producerID, producerEpoch, commit, coordinatorEpoch, l.clock().UnixMilli())
	info, err := l.append(batch, leaderEpoch, true, AppendOptions{Origin: OriginCoordinator}, true)
	if err != nil {
		return info, err
	}
	l.log.WithFields(logrus.Fields{"producer_id": producerID, "producer_epoch": producerEpoch, "commit": commit,
		"coordinator_epoch": coordinatorEpoch, "offset": info.FirstOffset}).Debug("appended transaction marker")
	return info, nil
}

// indexCompletedTxn writes an aborted transaction to the .txnindex of the segment holding
// its marker (LogSegment.updateTxnIndex). Callers hold mu.
func (l *Log) indexCompletedTxn(c completedTxn, lso int64) error {
	if !c.aborted {
		return nil
	}
	segs := l.segments()
	i := floorSegment(segs, c.lastOffset)
	if i < 0 {
		i = 0
	}
	return segs[i].txnIdx.append(AbortedTxn{ProducerID: c.producerID, FirstOffset: c.firstOffset, LastOffset: c.lastOffset, LastStableOffset: lso})
}

// updateFirstUnstableLocked drops completed transactions whose marker is below the high
// watermark or the log start and publishes the first unstable offset, raised to the log
// start (UnifiedLog.maybeIncrementFirstUnstableOffset). Callers hold mu.
func (l *Log) updateFirstUnstableLocked() {
	m := l.producerState
	// Raise the flag before reading the high watermark: an UpdateHighWatermark that stores
	// a new one after this read then sees the flag and prunes again (see there).
	if len(m.unreplicated) > 0 {
		l.hasUnreplicated.Store(true)
	}
	m.removeUnreplicated(l.highWatermark.Load())
	m.removeUnreplicated(l.logStartOffset.Load())
	l.hasUnreplicated.Store(len(m.unreplicated) > 0)
	fuo, ok := m.firstUnstableOffset()
	if !ok {
		l.firstUnstable.Store(-1)
		return
	}
	l.firstUnstable.Store(max(fuo, l.logStartOffset.Load()))
}

// LastStableOffset is min(first unstable offset, high watermark) (UnifiedLog.lastStableOffset):
// the bound of read_committed fetches and ListOffsets. Lock-free.
func (l *Log) LastStableOffset() int64 {
	hw := l.highWatermark.Load()
	if fuo := l.firstUnstable.Load(); fuo >= 0 && fuo < hw {
		return fuo
	}
	return hw
}

// FirstUnstableOffset is the first offset of the oldest transaction still open or whose
// marker is not yet below the high watermark; false if none. Lock-free.
func (l *Log) FirstUnstableOffset() (int64, bool) {
	fuo := l.firstUnstable.Load()
	return fuo, fuo >= 0
}

// CollectAbortedTransactions lists the aborted transactions overlapping [startOffset,
// upperBoundOffset) from the .txnindex files, starting with the segment holding startOffset
// and going on into later ones until an entry's LSO reaches upperBoundOffset
// (LocalLog.collectAbortedTransactions). Lock-free.
func (l *Log) CollectAbortedTransactions(startOffset, upperBoundOffset int64) []AbortedTxn {
	segs := l.segments()
	if len(segs) == 0 {
		return nil
	}
	i := floorSegment(segs, startOffset)
	if i < 0 {
		i = 0
	}
	var out []AbortedTxn
	for ; i < len(segs); i++ {
		var complete bool
		out, complete = segs[i].txnIdx.collect(out, startOffset, upperBoundOffset)
		if complete {
			break
		}
	}
	return out
}

// collectAbortedTransactions adapts CollectAbortedTransactions to the cleaner.
func (l *Log) collectAbortedTransactions(startOffset, upperBoundOffset int64) []AbortedTxn {
	return l.CollectAbortedTransactions(startOffset, upperBoundOffset)
}

// HasOngoingTransaction reports whether producerID has an open transaction here.
func (l *Log) HasOngoingTransaction(producerID int64) bool {
	l.mu.Lock()
	defer l.unlock()
	return l.producerState.hasOngoingTxn(producerID)
}

// ActiveProducers lists the producers of this partition for DescribeProducers
// (UnifiedLog.activeProducers), by producer id; CurrentTxnFirstOffset is the
// currentTxnStartOffset (-1 if none).
func (l *Log) ActiveProducers() []ProducerStateInfo { return l.ProducerStates() }

// lastRecord is Kafka's LastRecord: an active producer's last data offset (-1 if its last
// entry is a marker) and epoch, which the cleaner keeps in the log.
type lastRecord struct {
	lastDataOffset int64
	epoch          int16
}

// lastRecordsOfActiveProducers is UnifiedLog.lastRecordsOfActiveProducers.
func (l *Log) lastRecordsOfActiveProducers() map[int64]lastRecord {
	l.mu.Lock()
	defer l.unlock()
	out := make(map[int64]lastRecord, len(l.producerState.producers))
	for pid, e := range l.producerState.producers {
		lr := lastRecord{lastDataOffset: -1, epoch: e.epoch}
		if n := len(e.batches); n > 0 {
			lr.lastDataOffset = e.batches[n-1].lastOffset
		}
		out[pid] = lr
	}
	return out
}

// OngoingTransactions lists the open transactions as (producer id, first offset), oldest
// first (tests and tools).
func (l *Log) OngoingTransactions() [][2]int64 {
	l.mu.Lock()
	defer l.unlock()
	out := make([][2]int64, 0, len(l.producerState.ongoing))
	for first, pid := range l.producerState.ongoing {
		out = append(out, [2]int64{pid, first})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][1] < out[j][1] })
	return out
}
