package broker

// partition.go mirrors kafka.cluster.Partition: one hosted partition's replica state
// (leader or follower, leader epoch, ISR), its local log, the leader's view of its
// followers, and the high watermark.

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-kafka/samsa/internal/mutation"
	"github.com/samsa-kafka/samsa/logstore"
)

// replicaState is the leader's view of one follower (kafka.cluster.Replica).
type replicaState struct {
	logEndOffset       int64 // -1 until the follower's first fetch
	lastFetchLeaderLEO int64
	lastFetchTime      time.Time
	lastCaughtUpTime   time.Time
	brokerEpoch        int64 // from the follower's Fetch (v15+ ReplicaState), -1 if not sent
	logStartOffset     int64 // from the follower's Fetch, -1 until known
}

// isCaughtUp is Kafka's ReplicaState.isCaughtUp: at the leader's LEO, or caught up within
// replica.lag.time.max.ms.
func (rs *replicaState) isCaughtUp(leaderLEO int64, now time.Time, lagMax time.Duration) bool {
	return rs.logEndOffset == leaderLEO || now.Sub(rs.lastCaughtUpTime) <= lagMax
}

// Partition is safe for concurrent use.
//
// Locks: mu (Kafka's leaderIsrUpdateLock) is held for reading by appends and reads and for
// writing by leadership changes; hwMu orders high-watermark recomputation so the HW only
// moves forward; watchMu guards the waiter set. Order: mu → hwMu → watchMu. No lock is
// held while waiting, and waiters are signalled after the locks are released.
type Partition struct {
	tp            logstore.TopicPartition
	localBrokerID int32
	lagMax        time.Duration // replica.lag.time.max.ms
	now           func() time.Time
	log           *logrus.Entry

	mu struct {
		sync.RWMutex
		log                    *logstore.Log // nil until LeaderAndIsr created it
		topicID                [16]byte
		leaderID               int32 // -1: none known
		leaderEpoch            int32 // -1: never set (any controller epoch 0 is newer)
		leaderEpochStartOffset int64 // LEO when this broker became leader at leaderEpoch
		partitionEpoch         int32 // zkVersion of the partition state znode
		controllerEpoch        int32
		replicas               []int32
		isr                    []int32
		adding, removing       []int32
		remotes                map[int32]*replicaState // followers, when leader
		// Kafka 3.7's PartitionState: while an AlterPartition proposal is in flight
		// (pending != nil) the leader acts on maximalISR (old ISR ∪ added) for the HW and
		// acks, makes no other proposal, and commits isr only when the controller accepts.
		// A proposal refused as stale stays pending until the next LeaderAndIsr.
		maximalISR []int32
		pending    *isrProposal
	}
	hooks *partitionHooks
	hwMu  sync.Mutex

	watchMu  sync.Mutex
	watchers map[*waiter]struct{}
}

// partitionHooks connect a Partition to its ReplicaManager: sending an ISR proposal
// (AlterPartitionManager) and broker liveness from the metadata cache. Nil fields disable.
type partitionHooks struct {
	alterPartition func(p *Partition, prop *isrProposal)
	isBrokerAlive  func(id int32) bool
	isrMeters      atomic.Pointer[isrMeters] // IsrExpands/Shrinks/FailedIsrUpdatesPerSec once registered (metrics_replica.go)
}

func newPartition(tp logstore.TopicPartition, localBrokerID int32, lagMax time.Duration, now func() time.Time, log *logrus.Entry) *Partition {
	p := &Partition{tp: tp, localBrokerID: localBrokerID, lagMax: lagMax, now: now, watchers: map[*waiter]struct{}{}, hooks: &partitionHooks{},
		log: log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition})}
	p.mu.leaderID = NoLeader
	p.mu.leaderEpoch = -1
	return p
}

// TopicPartition names the partition.
func (p *Partition) TopicPartition() logstore.TopicPartition { return p.tp }

// Log returns the local log, or nil if none was created.
func (p *Partition) Log() *logstore.Log {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.mu.log
}

// PartitionState is a snapshot of a partition's replica state.
type PartitionState struct {
	LeaderID, LeaderEpoch, PartitionEpoch, ControllerEpoch int32
	Replicas, ISR                                          []int32
	IsLeader                                               bool
}

// State returns a snapshot of the replica state.
func (p *Partition) State() PartitionState {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return PartitionState{
		LeaderID: p.mu.leaderID, LeaderEpoch: p.mu.leaderEpoch, PartitionEpoch: p.mu.partitionEpoch,
		ControllerEpoch: p.mu.controllerEpoch, Replicas: slices.Clone(p.mu.replicas), ISR: slices.Clone(p.mu.isr),
		IsLeader: p.mu.leaderID == p.localBrokerID,
	}
}

// IsLeader reports whether this broker leads the partition.
func (p *Partition) IsLeader() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.mu.leaderID == p.localBrokerID
}

// LeaderEpoch returns the current leader epoch (-1 if none yet).
func (p *Partition) LeaderEpoch() int32 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.mu.leaderEpoch
}

// partitionStateChange is one LeaderAndIsr partition state.
type partitionStateChange struct {
	controllerEpoch, leader, leaderEpoch, partitionEpoch int32
	isr, replicas, adding, removing                      []int32
	topicID                                              [16]byte
}

// makeLeader (Partition.makeLeader) adopts the state with this broker as leader. The log
// must already be attached. It returns whether this broker was not the leader before.
func (p *Partition) makeLeader(s partitionStateChange, l *logstore.Log) bool {
	p.mu.Lock()
	wasLeader := p.mu.leaderID == p.localBrokerID
	p.setStateLocked(s, l)
	leo := l.LogEndOffset()
	p.mu.leaderEpochStartOffset = leo
	// The new epoch starts at the LEO even before anything is appended in it, so
	// OffsetsForLeaderEpoch and follower truncation see it (maybeAssignEpochStartOffset).
	if err := l.MaybeAssignEpochStartOffset(s.leaderEpoch, leo); err != nil {
		p.log.WithError(err).WithField("leader_epoch", s.leaderEpoch).Warn("could not record the leader epoch start offset")
	}
	// Reset followers' state: their LEO is unknown until they fetch from this leader.
	remotes := map[int32]*replicaState{}
	now := p.now()
	for _, r := range s.replicas {
		if r == p.localBrokerID {
			continue
		}
		rs := &replicaState{logEndOffset: -1, lastFetchLeaderLEO: -1, logStartOffset: -1}
		if slices.Contains(s.isr, r) {
			rs.lastCaughtUpTime = now // Kafka resets ISR members as caught up at leadership start
		}
		remotes[r] = rs
	}
	p.mu.remotes = remotes
	p.mu.Unlock()

	p.maybeIncrementLeaderHW()
	p.notify()
	return !wasLeader
}

// makeFollower (Partition.makeFollower) adopts the state with another broker (or none) as
// leader. It returns whether the leader changed.
func (p *Partition) makeFollower(s partitionStateChange, l *logstore.Log) bool {
	p.mu.Lock()
	changed := p.mu.leaderID != s.leader
	p.setStateLocked(s, l)
	p.mu.remotes = nil
	p.mu.leaderEpochStartOffset = -1
	p.mu.Unlock()
	p.notify() // waiters re-check and see NOT_LEADER_OR_FOLLOWER
	return changed
}

func (p *Partition) setStateLocked(s partitionStateChange, l *logstore.Log) {
	p.mu.log = l
	p.mu.topicID = s.topicID
	p.mu.controllerEpoch = s.controllerEpoch
	p.mu.leaderID = s.leader
	p.mu.leaderEpoch = s.leaderEpoch
	p.mu.partitionEpoch = s.partitionEpoch
	p.mu.replicas = slices.Clone(s.replicas)
	p.mu.isr = slices.Clone(s.isr)
	p.mu.maximalISR = slices.Clone(s.isr)
	p.mu.pending = nil // a LeaderAndIsr ends any proposal in flight
	p.mu.adding = slices.Clone(s.adding)
	p.mu.removing = slices.Clone(s.removing)
}

// detach drops leadership and the log reference (StopReplica with delete): waiters wake
// and find the partition gone.
func (p *Partition) detach() {
	p.mu.Lock()
	p.mu.log = nil
	p.mu.leaderID = NoLeader
	p.mu.remotes = nil
	p.mu.Unlock()
	p.notify()
}

// leaderLog returns the log if this broker is the leader, checking the client's current
// leader epoch when it sent one (-1 = none): FENCED_LEADER_EPOCH if older,
// UNKNOWN_LEADER_EPOCH if newer (Partition.getLocalLog). Caller holds mu for reading.
func (p *Partition) leaderLogLocked(currentLeaderEpoch int32, requireLeader bool) (*logstore.Log, error) {
	if currentLeaderEpoch >= 0 {
		if currentLeaderEpoch < p.mu.leaderEpoch {
			return nil, fmt.Errorf("%s: leader epoch %d < current %d: %w", p.tp, currentLeaderEpoch, p.mu.leaderEpoch, ErrFencedLeaderEpoch)
		}
		if currentLeaderEpoch > p.mu.leaderEpoch {
			return nil, fmt.Errorf("%s: leader epoch %d > current %d: %w", p.tp, currentLeaderEpoch, p.mu.leaderEpoch, ErrUnknownLeaderEpoch)
		}
	}
	if requireLeader && p.mu.leaderID != p.localBrokerID {
		return nil, fmt.Errorf("%s: leader is %d: %w", p.tp, p.mu.leaderID, ErrNotLeaderOrFollower)
	}
	if p.mu.log == nil {
		return nil, fmt.Errorf("%s: no local log: %w", p.tp, ErrNotLeaderOrFollower)
	}
	return p.mu.log, nil
}

// effectiveMinISRLocked is min(min.insync.replicas, replication factor) (Kafka 3.7).
func (p *Partition) effectiveMinISRLocked() int {
	minISR := int(p.mu.log.Config().MinInSyncReplicas)
	return max(1, min(minISR, len(p.mu.replicas)))
}

// appendRecordsToLeader (Partition.appendRecordsToLeader) appends records (one v2 batch) as
// leader from a client. With acks=-1 it first checks that the ISR is at least the effective
// min.insync.replicas (NOT_ENOUGH_REPLICAS).
func (p *Partition) appendRecordsToLeader(records []byte, acks int16) (logstore.AppendInfo, error) {
	return p.appendRecordsToLeaderOpts(records, acks, logstore.AppendOptions{})
}

// appendRecordsToLeaderOpts is appendRecordsToLeader with the append's origin and
// transaction verification guard (UnifiedLog.appendAsLeader's origin and verificationGuard).
func (p *Partition) appendRecordsToLeaderOpts(records []byte, acks int16, opts logstore.AppendOptions) (logstore.AppendInfo, error) {
	return p.appendToLeader(acks, func(l *logstore.Log, leaderEpoch int32) (logstore.AppendInfo, error) {
		return l.AppendAsLeaderOpts(records, leaderEpoch, opts)
	})
}

// appendTxnMarker writes a COMMIT or ABORT control batch for a producer as leader
// (WriteTxnMarkers: ReplicaManager.appendRecords with origin COORDINATOR and acks=-1, so
// the same min.insync.replicas check applies).
func (p *Partition) appendTxnMarker(producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32) (logstore.AppendInfo, error) {
	return p.appendToLeader(-1, func(l *logstore.Log, leaderEpoch int32) (logstore.AppendInfo, error) {
		return l.AppendTxnMarker(producerID, producerEpoch, commit, coordinatorEpoch, leaderEpoch)
	})
}

// appendToLeader runs one leader append under mu (read), after the leadership and
// min.insync.replicas checks, then moves the HW and wakes waiters: delayed produces and
// fetches, read_committed ones included (a marker moves the LSO).
func (p *Partition) appendToLeader(acks int16, appendFn func(l *logstore.Log, leaderEpoch int32) (logstore.AppendInfo, error)) (logstore.AppendInfo, error) {
	p.mu.RLock()
	l, err := p.leaderLogLocked(-1, true)
	if err != nil {
		p.mu.RUnlock()
		return logstore.AppendInfo{}, err
	}
	if acks == -1 && len(p.mu.isr) < p.effectiveMinISRLocked() {
		isr, minISR := len(p.mu.isr), p.effectiveMinISRLocked()
		p.mu.RUnlock()
		return logstore.AppendInfo{}, fmt.Errorf("%s: ISR size %d < min.insync.replicas %d: %w", p.tp, isr, minISR, ErrNotEnoughReplicas)
	}
	info, err := appendFn(l, p.mu.leaderEpoch)
	p.mu.RUnlock()
	if err != nil {
		return info, fmt.Errorf("append to %s: %w", p.tp, err)
	}
	p.maybeIncrementLeaderHW()
	p.notify()
	return info, nil
}

// maybeStartTransactionVerification (Partition.maybeStartTransactionVerification): the
// leader's guard for a producer's first transactional append, nil when the producer already
// has an ongoing transaction here (no verification needed). sequence is the batch's base
// sequence (the log keeps the lowest one it was asked with).
func (p *Partition) maybeStartTransactionVerification(producerID int64, sequence int32, producerEpoch int16) (*logstore.VerificationGuard, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	l, err := p.leaderLogLocked(-1, true)
	if err != nil {
		return nil, err
	}
	return l.MaybeStartTransactionVerification(producerID, sequence, producerEpoch), nil
}

// maybeIncrementLeaderHW (Partition.maybeIncrementLeaderHW): HW = min LEO over the leader,
// every follower in the maximal ISR, and every caught-up follower eligible to join it; it
// only moves forward, and not at all while the committed ISR is below the effective
// min.insync.replicas (Kafka 3.7, KAFKA-15583).
func (p *Partition) maybeIncrementLeaderHW() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	l := p.mu.log
	if l == nil || p.mu.leaderID != p.localBrokerID {
		return false
	}
	if len(p.mu.isr) < p.effectiveMinISRLocked() {
		return false
	}
	p.hwMu.Lock()
	defer p.hwMu.Unlock()
	oldHW := l.HighWatermark()
	leaderLEO := l.LogEndOffset()
	newHW := leaderLEO
	now := p.now()
	ignoreISR := mutation.HWIgnoresISR.Load() // the deliberate bug (off in production): HW := leader LEO
	for id, rs := range p.mu.remotes {
		if ignoreISR {
			break
		}
		wait := slices.Contains(p.mu.maximalISR, id) ||
			(rs.isCaughtUp(leaderLEO, now, p.lagMax) && p.isReplicaISREligibleLocked(id))
		if wait && rs.logEndOffset < newHW {
			newHW = rs.logEndOffset // -1 (not fetched yet) holds the HW where it is
		}
	}
	if newHW <= oldHW {
		return false
	}
	l.UpdateHighWatermark(newHW)
	return true
}

// isReplicaISREligibleLocked: the follower's broker is alive (ZK mode's isReplicaIsrEligible).
func (p *Partition) isReplicaISREligibleLocked(id int32) bool {
	if p.hooks.isBrokerAlive == nil {
		return true
	}
	return p.hooks.isBrokerAlive(id)
}

// replicaLagMax is replica.lag.time.max.ms.
func (p *Partition) replicaLagMax() time.Duration { return p.lagMax }

// updateFollowerFetchState (Partition.updateFollowerFetchState) records a follower's fetch
// offset as its LEO, given the leader's LEO when the fetch was read, then tries to expand
// the ISR and advance the HW.
func (p *Partition) updateFollowerFetchState(replicaID int32, fetchOffset, leaderLEO, brokerEpoch, logStartOffset int64) {
	p.mu.RLock()
	rs, ok := p.mu.remotes[replicaID]
	p.mu.RUnlock()
	if !ok {
		return
	}
	p.hwMu.Lock() // remotes' fields are written under hwMu with mu held for reading
	now := p.now()
	if fetchOffset >= leaderLEO {
		rs.lastCaughtUpTime = now
	} else if fetchOffset >= rs.lastFetchLeaderLEO && rs.lastFetchLeaderLEO >= 0 {
		rs.lastCaughtUpTime = rs.lastFetchTime
	}
	rs.logEndOffset = fetchOffset
	rs.lastFetchLeaderLEO = leaderLEO
	rs.lastFetchTime = now
	rs.brokerEpoch = brokerEpoch
	movedStart := logStartOffset > rs.logStartOffset
	rs.logStartOffset = logStartOffset
	p.hwMu.Unlock()
	if movedStart {
		defer p.notify() // DeleteRecords waiters watch the low watermark
	}
	p.maybeExpandISR(replicaID)
	if p.maybeIncrementLeaderHW() {
		p.notify()
	}
}

// isrProposal is one AlterPartition in flight (Kafka's PendingExpandIsr/PendingShrinkIsr).
type isrProposal struct {
	tp             logstore.TopicPartition
	topicID        [16]byte
	leaderEpoch    int32
	partitionEpoch int32
	newISR         []int32
	brokerEpochs   map[int32]int64 // follower broker epochs from their fetches (-1: unknown)
	expand         bool
}

// maybeExpandISR (Partition.maybeExpandIsr): a follower not in the ISR joins once its LEO
// reached the HW and the start of the leader's current epoch, and its broker is alive.
func (p *Partition) maybeExpandISR(replicaID int32) {
	p.mu.Lock()
	prop := p.expandProposalLocked(replicaID)
	p.mu.Unlock()
	if prop != nil {
		p.send(prop)
	}
}

func (p *Partition) expandProposalLocked(replicaID int32) *isrProposal {
	l := p.mu.log
	if l == nil || p.mu.leaderID != p.localBrokerID || p.mu.pending != nil || slices.Contains(p.mu.isr, replicaID) {
		return nil
	}
	rs, ok := p.mu.remotes[replicaID]
	if !ok || rs.logEndOffset < l.HighWatermark() || rs.logEndOffset < p.mu.leaderEpochStartOffset ||
		!p.isReplicaISREligibleLocked(replicaID) {
		return nil
	}
	newISR := append(slices.Clone(p.mu.isr), replicaID)
	return p.proposeLocked(newISR, true)
}

// proposeLocked records a pending ISR change: with an expansion the maximal ISR includes
// the new member at once (so the HW waits for it); a shrink keeps the old ISR as maximal
// until the controller commits it. Caller holds mu for writing.
func (p *Partition) proposeLocked(newISR []int32, expand bool) *isrProposal {
	prop := &isrProposal{tp: p.tp, topicID: p.mu.topicID, leaderEpoch: p.mu.leaderEpoch, partitionEpoch: p.mu.partitionEpoch,
		newISR: newISR, brokerEpochs: map[int32]int64{}, expand: expand}
	for _, id := range newISR {
		prop.brokerEpochs[id] = -1
		if rs, ok := p.mu.remotes[id]; ok {
			prop.brokerEpochs[id] = rs.brokerEpoch
		}
	}
	p.mu.pending = prop
	if expand {
		p.mu.maximalISR = slices.Clone(newISR)
	} else {
		p.mu.maximalISR = slices.Clone(p.mu.isr)
	}
	p.log.WithFields(logrus.Fields{"component": "state.change", "isr": p.mu.isr, "new_isr": newISR, "leader_epoch": p.mu.leaderEpoch,
		"partition_epoch": p.mu.partitionEpoch}).Info("proposing ISR change")
	return prop
}

func (p *Partition) send(prop *isrProposal) {
	if p.hooks.alterPartition != nil {
		p.hooks.alterPartition(p, prop)
	}
}

// maybeShrinkISR (Partition.maybeShrinkIsr), run every replica.lag.time.max.ms/2: ISR
// followers that have not caught up within replica.lag.time.max.ms are proposed out.
func (p *Partition) maybeShrinkISR() {
	p.mu.Lock()
	var prop *isrProposal
	if l := p.mu.log; l != nil && p.mu.leaderID == p.localBrokerID && p.mu.pending == nil {
		leaderLEO, now := l.LogEndOffset(), p.now()
		var outOfSync []int32
		for _, id := range p.mu.isr {
			if id == p.localBrokerID {
				continue
			}
			rs, ok := p.mu.remotes[id]
			if !ok || !rs.isCaughtUp(leaderLEO, now, p.lagMax) {
				outOfSync = append(outOfSync, id)
			}
		}
		if len(outOfSync) > 0 {
			newISR := slices.DeleteFunc(slices.Clone(p.mu.isr), func(id int32) bool { return slices.Contains(outOfSync, id) })
			p.log.WithFields(logrus.Fields{"out_of_sync": outOfSync, "leader_log_end_offset": leaderLEO,
				"high_watermark": l.HighWatermark()}).Info("shrinking ISR: followers not caught up within replica.lag.time.max.ms")
			prop = p.proposeLocked(newISR, false)
		}
	}
	p.mu.Unlock()
	if prop != nil {
		p.send(prop)
	}
}

// alterPartitionResult is the outcome of one proposal: the controller's state on success,
// or its error code.
type alterPartitionResult struct {
	code           int16
	leaderEpoch    int32
	partitionEpoch int32
	isr            []int32
}

// handleAlterPartitionResult (Partition.sendAlterPartitionRequest's callback): commit the
// controller's ISR on success; on INELIGIBLE_REPLICA / OPERATION_NOT_ATTEMPTED go back to
// the committed state (the controller says it applied nothing); on any other error
// (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, ...) stay pending, so this leader makes no
// further ISR change on stale state until the next LeaderAndIsr.
func (p *Partition) handleAlterPartitionResult(prop *isrProposal, r alterPartitionResult) {
	p.mu.Lock()
	if p.mu.pending != prop {
		p.mu.Unlock()
		return // superseded by a LeaderAndIsr
	}
	log := p.log.WithFields(logrus.Fields{"component": "state.change", "new_isr": prop.newISR, "leader_epoch": prop.leaderEpoch,
		"partition_epoch": prop.partitionEpoch})
	committed := false
	switch {
	case r.code == 0:
		if r.leaderEpoch != p.mu.leaderEpoch || r.partitionEpoch < p.mu.partitionEpoch {
			log.WithFields(logrus.Fields{"resp_leader_epoch": r.leaderEpoch, "resp_partition_epoch": r.partitionEpoch}).
				Info("ignoring AlterPartition response for another leader or partition epoch")
			break
		}
		p.mu.isr = slices.Clone(r.isr)
		p.mu.maximalISR = slices.Clone(r.isr)
		p.mu.partitionEpoch = r.partitionEpoch
		p.mu.pending = nil
		committed = true
		log.WithFields(logrus.Fields{"isr": r.isr, "new_partition_epoch": r.partitionEpoch}).Info("ISR updated")
	case r.code == kerr.IneligibleReplica.Code || r.code == kerr.OperationNotAttempted.Code:
		p.mu.maximalISR = slices.Clone(p.mu.isr)
		p.mu.pending = nil
		log.WithField("error_code", r.code).Info("AlterPartition not applied; back to the committed ISR")
	default:
		log.WithField("error", kerr.ErrorForCode(r.code)).
			Warn("AlterPartition refused; no further ISR changes until the next LeaderAndIsr")
	}
	p.mu.Unlock()
	p.hooks.markISRResult(committed, prop.expand)
	if committed && p.maybeIncrementLeaderHW() {
		p.notify()
	}
	p.notify() // acks=all waiters re-check against the new ISR
}

// waiter is a pending delayed operation's wake-up channel (capacity 1).
type waiter struct {
	ch chan struct{}
	op delayedOp // the purgatory it counts in (metrics_replica.go)
}

func newWaiter() *waiter { return &waiter{ch: make(chan struct{}, 1)} }

func (p *Partition) watch(w *waiter) {
	p.watchMu.Lock()
	p.watchers[w] = struct{}{}
	p.watchMu.Unlock()
}

func (p *Partition) unwatch(w *waiter) {
	p.watchMu.Lock()
	delete(p.watchers, w)
	p.watchMu.Unlock()
}

// notify wakes every waiter: the LEO, HW or leadership moved (Kafka's
// tryCompleteDelayedRequests). Sends happen after watchMu is released.
func (p *Partition) notify() {
	p.watchMu.Lock()
	if len(p.watchers) == 0 {
		p.watchMu.Unlock()
		return
	}
	ws := make([]*waiter, 0, len(p.watchers))
	for w := range p.watchers {
		ws = append(ws, w)
	}
	p.watchMu.Unlock()
	for _, w := range ws {
		select {
		case w.ch <- struct{}{}:
		default: // already signalled
		}
	}
}

func (p *Partition) topicIDSnapshot() [16]byte {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.mu.topicID
}

// appendRecordsToFollower (Partition.appendRecordsToFollowerOrFutureReplica) appends
// fetched batches with the leader's offsets, unless this broker became leader meanwhile.
func (p *Partition) appendRecordsToFollower(records []byte) (logstore.AppendInfo, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.mu.log == nil || p.mu.leaderID == p.localBrokerID {
		return logstore.AppendInfo{}, fmt.Errorf("%s: not a follower: %w", p.tp, ErrNotLeaderOrFollower)
	}
	info, err := p.mu.log.AppendAsFollower(records)
	if err != nil {
		return info, fmt.Errorf("append to follower %s: %w", p.tp, err)
	}
	return info, nil
}

// isPending reports whether prop is still the partition's proposal in flight.
func (p *Partition) isPending(prop *isrProposal) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.mu.pending == prop
}
