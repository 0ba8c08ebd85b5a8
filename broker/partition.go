package broker

// partition.go mirrors kafka.cluster.Partition: one hosted partition's replica state
// (leader or follower, leader epoch, ISR), its local log, the leader's view of its
// followers, and the high watermark.

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/logstore"
)

// replicaState is the leader's view of one follower (kafka.cluster.Replica).
type replicaState struct {
	logEndOffset       int64 // -1 until the follower's first fetch
	lastFetchLeaderLEO int64
	lastFetchTime      time.Time
	lastCaughtUpTime   time.Time
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
	}
	hwMu sync.Mutex

	watchMu  sync.Mutex
	watchers map[*waiter]struct{}
}

func newPartition(tp logstore.TopicPartition, localBrokerID int32, lagMax time.Duration, now func() time.Time, log *logrus.Entry) *Partition {
	p := &Partition{tp: tp, localBrokerID: localBrokerID, lagMax: lagMax, now: now, watchers: map[*waiter]struct{}{},
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
		rs := &replicaState{logEndOffset: -1, lastFetchLeaderLEO: -1}
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
// leader. With acks=-1 it first checks that the ISR is at least the effective
// min.insync.replicas (NOT_ENOUGH_REPLICAS).
func (p *Partition) appendRecordsToLeader(records []byte, acks int16) (logstore.AppendInfo, error) {
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
	info, err := l.AppendAsLeader(records, p.mu.leaderEpoch)
	p.mu.RUnlock()
	if err != nil {
		return info, fmt.Errorf("append to %s: %w", p.tp, err)
	}
	p.maybeIncrementLeaderHW()
	p.notify()
	return info, nil
}

// maybeIncrementLeaderHW (Partition.maybeIncrementLeaderHW): HW = min LEO over the leader
// and every ISR follower (and followers caught up to the HW, who are about to join); it only
// moves forward, and not at all while the ISR is below the effective min.insync.replicas.
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
	newHW := l.LogEndOffset()
	for id, rs := range p.mu.remotes {
		inISR := slices.Contains(p.mu.isr, id)
		caughtUp := rs.logEndOffset >= oldHW && p.now().Sub(rs.lastCaughtUpTime) <= p.replicaLagMax()
		if inISR || caughtUp {
			if rs.logEndOffset < 0 { // unknown: an ISR follower that has not fetched yet holds the HW
				return false
			}
			newHW = min(newHW, rs.logEndOffset)
		}
	}
	if newHW <= oldHW {
		return false
	}
	l.UpdateHighWatermark(newHW)
	return true
}

// replicaLagMax is replica.lag.time.max.ms.
func (p *Partition) replicaLagMax() time.Duration { return p.lagMax }

// updateFollowerFetchState (Partition.updateFollowerFetchState) records a follower's fetch
// offset as its LEO and recomputes the HW. ISR expansion comes with replication.
func (p *Partition) updateFollowerFetchState(replicaID int32, fetchOffset int64) {
	p.mu.RLock()
	rs, ok := p.mu.remotes[replicaID]
	var leaderLEO int64
	if ok && p.mu.log != nil {
		leaderLEO = p.mu.log.LogEndOffset()
	}
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
	p.hwMu.Unlock()
	if p.maybeIncrementLeaderHW() {
		p.notify()
	}
}

// waiter is a pending delayed operation's wake-up channel (capacity 1).
type waiter struct{ ch chan struct{} }

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
