package transaction

// metadata.go mirrors TransactionMetadata.scala (Kafka 3.7): the states of a transactional id,
// which state may follow which, and the prepare/complete pair every transition goes through.
// A transition is first prepared (the target goes into pendingState, which blocks any other
// transition), then written to __transaction_state, and only once the write is acknowledged
// (acks=-1) completed into the in-memory metadata.

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
)

// TransactionState is Kafka's TransactionState; the numeric values are the ids stored in the
// TransactionStatus field of __transaction_state values.
type TransactionState int8

const (
	// Empty: no transaction yet (or the last one completed and the epoch was bumped).
	Empty TransactionState = 0
	// Ongoing: partitions were added; EndTxn moves it to Prepare*.
	Ongoing TransactionState = 1
	// PrepareCommit: the commit decision is durable; markers are being written.
	PrepareCommit TransactionState = 2
	// PrepareAbort: the abort decision is durable; markers are being written.
	PrepareAbort TransactionState = 3
	// CompleteCommit: every partition has its COMMIT marker.
	CompleteCommit TransactionState = 4
	// CompleteAbort: every partition has its ABORT marker.
	CompleteAbort TransactionState = 5
	// Dead: the transactional id is being expired (never written, only pending).
	Dead TransactionState = 6
	// PrepareEpochFence: the epoch is being bumped to fence a producer before the abort
	// (never written, only pending).
	PrepareEpochFence TransactionState = 7
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String is Kafka's state name, as DescribeTransactions and ListTransactions report it.
func (s TransactionState) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("TransactionState(%d)", int8(s))
}

// StateFromName is TransactionState.fromName.
func StateFromName(name string) (TransactionState, bool) {
	for i, n := range stateNames {
		if n == name {
			return TransactionState(i), true
		}
	}
	return 0, false
}

// stateFromID is TransactionState.fromId.
func stateFromID(id int8) (TransactionState, error) {
	if id < 0 || int(id) >= len(stateNames) {
		return 0, fmt.Errorf("%w: unknown transaction state id %d", ErrMalformedRecord, id)
	}
	return TransactionState(id), nil
}

// validPreviousStates is each state's validPreviousStates in Kafka 3.7.
func (s TransactionState) validPrevious(prev TransactionState) bool {
	switch s {
	case Empty:
		return prev == Empty || prev == CompleteCommit || prev == CompleteAbort
	case Ongoing:
		return prev == Ongoing || prev == Empty || prev == CompleteCommit || prev == CompleteAbort
	case PrepareCommit:
		return prev == Ongoing
	case PrepareAbort:
		return prev == Ongoing || prev == PrepareEpochFence
	case CompleteCommit:
		return prev == PrepareCommit
	case CompleteAbort:
		return prev == PrepareAbort
	case Dead:
		return prev == Empty || prev == CompleteAbort || prev == CompleteCommit
	case PrepareEpochFence:
		return prev == Ongoing
	}
	return false
}

// isExpirationAllowed: only ids without a transaction in flight may expire.
func (s TransactionState) isExpirationAllowed() bool {
	return s == Empty || s == CompleteCommit || s == CompleteAbort
}

// noProducerID and noProducerEpoch are RecordBatch.NO_PRODUCER_ID/NO_PRODUCER_EPOCH.
const (
	noProducerID    int64 = -1
	noProducerEpoch int16 = -1
)

// isEpochExhausted is TransactionMetadata.isEpochExhausted: clients never get Short.MaxValue,
// so the coordinator can always bump once more to fence.
func isEpochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// errIllegalState marks a transition Kafka refuses with IllegalStateException: a bug or a
// corrupt log, never a client mistake. The request gets UNKNOWN_SERVER_ERROR.
var errIllegalState = errors.New("transaction: illegal state transition")

// TopicPartition names a partition taking part in a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String is TopicPartition.toString ("topic-partition").
func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

func sortPartitions(tps []TopicPartition) {
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
}

// TxnTransitMetadata is the immutable target of a prepared transition; it is what gets
// written to __transaction_state.
type TxnTransitMetadata struct {
	ProducerID             int64
	LastProducerID         int64
	ProducerEpoch          int16
	LastProducerEpoch      int16
	TxnTimeoutMs           int32
	TxnState               TransactionState
	TopicPartitions        []TopicPartition // sorted
	TxnStartTimestamp      int64
	TxnLastUpdateTimestamp int64
}

func (t TxnTransitMetadata) String() string {
	return fmt.Sprintf("TxnTransitMetadata(producerId=%d, lastProducerId=%d, producerEpoch=%d, lastProducerEpoch=%d, txnTimeoutMs=%d, txnState=%s, topicPartitions=%s, txnStartTimestamp=%d, txnLastUpdateTimestamp=%d)",
		t.ProducerID, t.LastProducerID, t.ProducerEpoch, t.LastProducerEpoch, t.TxnTimeoutMs, t.TxnState,
		formatPartitions(t.TopicPartitions), t.TxnStartTimestamp, t.TxnLastUpdateTimestamp)
}

func formatPartitions(tps []TopicPartition) string {
	s := make([]string, len(tps))
	for i, tp := range tps {
		s[i] = tp.String()
	}
	return "[" + strings.Join(s, ",") + "]"
}

// TransactionMetadata is Kafka's TransactionMetadata: the cached state of one transactional
// id. All fields are guarded by mu (Kafka's inLock); a TransactionStateManager lock is never
// taken while mu is held.
type TransactionMetadata struct {
	mu sync.Mutex

	transactionalID        string
	producerID             int64
	lastProducerID         int64
	producerEpoch          int16
	lastProducerEpoch      int16
	txnTimeoutMs           int32
	state                  TransactionState
	topicPartitions        map[TopicPartition]struct{}
	txnStartTimestamp      int64
	txnLastUpdateTimestamp int64

	// pendingState is the state a prepared transition leads to; while set, other
	// transitions are refused (CONCURRENT_TRANSACTIONS).
	pendingState    TransactionState
	hasPendingState bool
	// hasFailedEpochFence: a fencing epoch bump may not have reached the log; the next fence
	// reuses the bumped epoch instead of bumping again.
	hasFailedEpochFence bool
}

func newTransactionMetadata(id string, pid, lastPID int64, epoch, lastEpoch int16, timeoutMs int32, state TransactionState, startTs, updateTs int64) *TransactionMetadata {
	return &TransactionMetadata{transactionalID: id, producerID: pid, lastProducerID: lastPID, producerEpoch: epoch,
		lastProducerEpoch: lastEpoch, txnTimeoutMs: timeoutMs, state: state, topicPartitions: map[TopicPartition]struct{}{},
		txnStartTimestamp: startTs, txnLastUpdateTimestamp: updateTs}
}

func (m *TransactionMetadata) partitionsLocked() []TopicPartition {
	out := make([]TopicPartition, 0, len(m.topicPartitions))
	for tp := range m.topicPartitions {
		out = append(out, tp)
	}
	sortPartitions(out)
	return out
}

func (m *TransactionMetadata) pending() (TransactionState, bool) {
	return m.pendingState, m.hasPendingState
}

func (m *TransactionMetadata) setPending(s TransactionState) {
	m.pendingState, m.hasPendingState = s, true
}

func (m *TransactionMetadata) clearPending() { m.hasPendingState = false }

func (m *TransactionMetadata) pendingIs(s TransactionState) bool {
	return m.hasPendingState && m.pendingState == s
}

func (m *TransactionMetadata) String() string {
	pending := "None"
	if m.hasPendingState {
		pending = "Some(" + m.pendingState.String() + ")"
	}
	return fmt.Sprintf("TransactionMetadata(transactionalId=%s, producerId=%d, producerEpoch=%d, txnTimeoutMs=%d, state=%s, pendingState=%s, topicPartitions=%s, txnStartTimestamp=%d, txnLastUpdateTimestamp=%d)",
		m.transactionalID, m.producerID, m.producerEpoch, m.txnTimeoutMs, m.state, pending,
		formatPartitions(m.partitionsLocked()), m.txnStartTimestamp, m.txnLastUpdateTimestamp)
}

// removePartition drops a partition whose marker is written; only legal in Prepare*.
func (m *TransactionMetadata) removePartition(tp TopicPartition) error {
	if m.state != PrepareCommit && m.state != PrepareAbort {
		return fmt.Errorf("%w: removing partition %s of %s in state %s", errIllegalState, tp, m.transactionalID, m.state)
	}
	delete(m.topicPartitions, tp)
	return nil
}

// prepareFenceProducerEpoch bumps the epoch (unless a previous fence failed to persist) on
// the way to aborting the ongoing transaction.
func (m *TransactionMetadata) prepareFenceProducerEpoch() (TxnTransitMetadata, error) {
	if m.producerEpoch == math.MaxInt16 {
		return TxnTransitMetadata{}, fmt.Errorf("%w: cannot fence producer with epoch equal to Short.MaxValue", errIllegalState)
	}
	bumped := m.producerEpoch
	if !m.hasFailedEpochFence {
		bumped++
	}
	return m.prepareTransitionTo(PrepareEpochFence, m.producerID, bumped, noProducerEpoch, m.txnTimeoutMs,
		m.partitionsLocked(), m.txnStartTimestamp, m.txnLastUpdateTimestamp)
}

// prepareIncrementProducerEpoch is the InitProducerId bump, with KIP-360's expected epoch:
// none → bump; expected == current (or no epoch yet) → bump and remember the old epoch; expected
// == the previous epoch → a retry of a bump that succeeded, answer the current epoch again;
// otherwise PRODUCER_FENCED (returned as fenced=true).
func (m *TransactionMetadata) prepareIncrementProducerEpoch(newTimeoutMs int32, expectedEpoch *int16, now int64) (t TxnTransitMetadata, fenced bool, err error) {
	if isEpochExhausted(m.producerEpoch) {
		return TxnTransitMetadata{}, false, fmt.Errorf("%w: cannot allocate any more producer epochs for producerId %d", errIllegalState, m.producerID)
	}
	bumped := m.producerEpoch + 1
	var next, last int16
	switch {
	case expectedEpoch == nil:
		next, last = bumped, noProducerEpoch
	case m.producerEpoch == noProducerEpoch || *expectedEpoch == m.producerEpoch:
		next, last = bumped, m.producerEpoch
	case *expectedEpoch == m.lastProducerEpoch:
		next, last = m.producerEpoch, m.lastProducerEpoch
	default:
		return TxnTransitMetadata{}, true, nil
	}
	t, err = m.prepareTransitionTo(Empty, m.producerID, next, last, newTimeoutMs, nil, -1, now)
	return t, false, err
}

// prepareProducerIdRotation moves to a new producer id with epoch 0 (epoch exhausted).
func (m *TransactionMetadata) prepareProducerIdRotation(newPID int64, newTimeoutMs int32, now int64, recordLastEpoch bool) (TxnTransitMetadata, error) {
	if m.state == Ongoing || m.state == PrepareAbort || m.state == PrepareCommit {
		return TxnTransitMetadata{}, fmt.Errorf("%w: cannot rotate producer ids while a transaction is still pending", errIllegalState)
	}
	last := noProducerEpoch
	if recordLastEpoch {
		last = m.producerEpoch
	}
	return m.prepareTransitionTo(Empty, newPID, 0, last, newTimeoutMs, nil, -1, now)
}

// prepareAddPartitions starts (or extends) the transaction; the start timestamp is set by the
// first add after Empty/Complete*.
func (m *TransactionMetadata) prepareAddPartitions(added []TopicPartition, now int64) (TxnTransitMetadata, error) {
	start := m.txnStartTimestamp
	switch m.state {
	case Empty, CompleteAbort, CompleteCommit:
		start = now
	}
	all := make(map[TopicPartition]struct{}, len(m.topicPartitions)+len(added))
	for tp := range m.topicPartitions {
		all[tp] = struct{}{}
	}
	for _, tp := range added {
		all[tp] = struct{}{}
	}
	tps := make([]TopicPartition, 0, len(all))
	for tp := range all {
		tps = append(tps, tp)
	}
	sortPartitions(tps)
	return m.prepareTransitionTo(Ongoing, m.producerID, m.producerEpoch, m.lastProducerEpoch, m.txnTimeoutMs, tps, start, now)
}

func (m *TransactionMetadata) prepareAbortOrCommit(newState TransactionState, now int64) (TxnTransitMetadata, error) {
	return m.prepareTransitionTo(newState, m.producerID, m.producerEpoch, m.lastProducerEpoch, m.txnTimeoutMs,
		m.partitionsLocked(), m.txnStartTimestamp, now)
}

func (m *TransactionMetadata) prepareComplete(now int64) (TxnTransitMetadata, error) {
	newState := CompleteAbort
	if m.state == PrepareCommit {
		newState = CompleteCommit
	}
	// The Prepare* state is durable, so a failed fence is behind us.
	m.hasFailedEpochFence = false
	return m.prepareTransitionTo(newState, m.producerID, m.producerEpoch, m.lastProducerEpoch, m.txnTimeoutMs,
		nil, m.txnStartTimestamp, now)
}

func (m *TransactionMetadata) prepareDead() (TxnTransitMetadata, error) {
	return m.prepareTransitionTo(Dead, m.producerID, m.producerEpoch, m.lastProducerEpoch, m.txnTimeoutMs,
		nil, m.txnStartTimestamp, m.txnLastUpdateTimestamp)
}

func (m *TransactionMetadata) prepareTransitionTo(newState TransactionState, newPID int64, newEpoch, newLastEpoch int16,
	newTimeoutMs int32, tps []TopicPartition, newStart, now int64) (TxnTransitMetadata, error) {
	if m.hasPendingState {
		return TxnTransitMetadata{}, fmt.Errorf("%w: preparing transition to %s while it already has pending state %s", errIllegalState, newState, m.pendingState)
	}
	if newPID < 0 {
		return TxnTransitMetadata{}, fmt.Errorf("%w: illegal new producer id %d", errIllegalState, newPID)
	}
	// A new id keeps NO_PRODUCER_EPOCH until its first bump, and may die like that.
	if newState != Dead && newEpoch < 0 {
		return TxnTransitMetadata{}, fmt.Errorf("%w: illegal new producer epoch %d", errIllegalState, newEpoch)
	}
	if !newState.validPrevious(m.state) {
		return TxnTransitMetadata{}, fmt.Errorf("%w: %s is not a valid previous state of %s", errIllegalState, m.state, newState)
	}
	m.setPending(newState)
	return TxnTransitMetadata{ProducerID: newPID, LastProducerID: m.producerID, ProducerEpoch: newEpoch, LastProducerEpoch: newLastEpoch,
		TxnTimeoutMs: newTimeoutMs, TxnState: newState, TopicPartitions: tps, TxnStartTimestamp: newStart, TxnLastUpdateTimestamp: now}, nil
}

// completeTransitionTo applies a transition whose record is durable. It checks what Kafka
// checks: the pending state matches, epochs move only as allowed, partitions only grow while
// Ongoing.
func (m *TransactionMetadata) completeTransitionTo(t TxnTransitMetadata) error {
	if !m.hasPendingState {
		return fmt.Errorf("%w: %s completing a transition to %s without a pending state", errIllegalState, m.transactionalID, t.TxnState)
	}
	fail := func() error {
		return fmt.Errorf("%w: %s failed transition to %s due to unexpected metadata (%s)", errIllegalState, m.transactionalID, t, m)
	}
	if m.pendingState != t.TxnState {
		return fail()
	}
	sameEpoch := t.ProducerEpoch == m.producerEpoch && t.ProducerID == m.producerID
	switch t.TxnState {
	case Empty: // from InitProducerId
		validBump := t.ProducerEpoch == m.producerEpoch+1 || (t.ProducerEpoch == 0 && t.ProducerID != m.producerID)
		if (m.producerEpoch != t.ProducerEpoch && !validBump) || len(t.TopicPartitions) != 0 || t.TxnStartTimestamp != -1 {
			return fail()
		}
		m.txnTimeoutMs = t.TxnTimeoutMs
		m.producerEpoch = t.ProducerEpoch
		m.lastProducerEpoch = t.LastProducerEpoch
		m.producerID = t.ProducerID
		m.lastProducerID = t.LastProducerID
	case Ongoing: // from AddPartitions
		if !sameEpoch || m.txnTimeoutMs != t.TxnTimeoutMs || !m.subsetOf(t.TopicPartitions) {
			return fail()
		}
		m.txnStartTimestamp = t.TxnStartTimestamp
		for _, tp := range t.TopicPartitions {
			m.topicPartitions[tp] = struct{}{}
		}
	case PrepareAbort, PrepareCommit: // from EndTxn
		if !sameEpoch || m.txnTimeoutMs != t.TxnTimeoutMs || m.txnStartTimestamp != t.TxnStartTimestamp ||
			len(t.TopicPartitions) != len(m.topicPartitions) || !m.subsetOf(t.TopicPartitions) {
			return fail()
		}
	case CompleteAbort, CompleteCommit: // from the markers
		if !sameEpoch || m.txnTimeoutMs != t.TxnTimeoutMs || t.TxnStartTimestamp == -1 {
			return fail()
		}
		m.txnStartTimestamp = t.TxnStartTimestamp
		clear(m.topicPartitions)
	default:
		// PrepareEpochFence is never written (the fence goes straight on to PrepareAbort),
		// and Dead ends in removal from the cache, never in a completed transition.
		return fail()
	}
	m.txnLastUpdateTimestamp = t.TxnLastUpdateTimestamp
	m.clearPending()
	m.state = t.TxnState
	return nil
}

func (m *TransactionMetadata) subsetOf(tps []TopicPartition) bool {
	set := make(map[TopicPartition]struct{}, len(tps))
	for _, tp := range tps {
		set[tp] = struct{}{}
	}
	for tp := range m.topicPartitions {
		if _, ok := set[tp]; !ok {
			return false
		}
	}
	return true
}
