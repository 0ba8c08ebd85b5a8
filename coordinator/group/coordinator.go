package group

// coordinator.go mirrors GroupCoordinator.scala (Kafka 3.7, classic protocol): JoinGroup and
// the rebalance state machine; SyncGroup, Heartbeat and LeaveGroup are in sync_leave.go,
// DescribeGroups, ListGroups and DeleteGroups in describe.go, the offsets side in manager.go. Callbacks given to handle*
// methods run under the group's lock and must not block.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Log is the part of the broker the coordinator uses: its view of the __consumer_offsets
// partitions. Errors carry a Kafka error (errors.As to *kerr.Error); anything else counts
// as UNKNOWN_SERVER_ERROR.
type Log interface {
	// LeaderEpoch reports whether this broker leads offsets partition p, and its epoch.
	LeaderEpoch(partition int32) (epoch int32, isLeader bool)
	// Append appends one record batch to partition as its leader. With acksAll it waits
	// until the high watermark passes the batch (offsets.commit.required.acks=-1) or the
	// timeout (REQUEST_TIMED_OUT).
	// It returns the batch's base offset.
	Append(ctx context.Context, partition int32, batch []byte, acksAll bool, timeout time.Duration) (int64, error)
	// Offsets returns the partition's log start and log end offsets.
	Offsets(partition int32) (logStart, logEnd int64, err error)
	// Read returns raw batches from offset (at most about maxBytes, at least one batch) up to
	// the log end offset.
	Read(partition int32, offset int64, maxBytes int32) ([]byte, error)
	// VerifyTransaction is ReplicaManager.maybeStartTransactionVerificationForPartition for a
	// TxnOffsetCommit (KIP-890, transaction.partition.verification.enable): unless the
	// producer already has a transaction open in offsets partition p, the transaction
	// coordinator must confirm that p was added to the producer's transaction
	// (AddOffsetsToTxn). It returns the guard to append with (nil: none needed) or the
	// verification's error (INVALID_TXN_STATE, INVALID_PRODUCER_EPOCH, NOT_ENOUGH_REPLICAS
	// for a busy or moving transaction coordinator, NETWORK_EXCEPTION, ...).
	VerifyTransaction(ctx context.Context, partition int32, transactionalID string, producerID int64, producerEpoch int16) (VerificationGuard, error)
	// AppendTransactional appends a transactional batch of TxnOffsetCommit records as leader
	// with origin COORDINATOR (no sequence checks) and guard, waiting like Append with
	// acksAll. It returns the batch's base offset.
	AppendTransactional(ctx context.Context, partition int32, batch []byte, guard VerificationGuard, timeout time.Duration) (int64, error)
}

// VerificationGuard is the Log's token from VerifyTransaction, handed back unchanged to
// AppendTransactional (Kafka's VerificationGuard); nil means none.
type VerificationGuard any

// Config holds the coordinator's settings; zero values take Kafka's defaults.
type Config struct {
	BrokerID                      int32
	NumPartitions                 int32         // offsets.topic.num.partitions (50)
	MinSessionTimeout             time.Duration // group.min.session.timeout.ms (6 s)
	MaxSessionTimeout             time.Duration // group.max.session.timeout.ms (30 min)
	InitialRebalanceDelay         time.Duration // group.initial.rebalance.delay.ms (3 s); <0 means 0
	MaxSize                       int           // group.max.size (Int.MaxValue)
	OffsetMetadataMaxBytes        int           // offset.metadata.max.bytes (4096)
	OffsetsRetention              time.Duration // offsets.retention.minutes (7 days)
	OffsetsRetentionCheckInterval time.Duration // offsets.retention.check.interval.ms (10 min)
	OffsetCommitTimeout           time.Duration // offsets.commit.timeout.ms (5 s)
	LoadBufferSize                int32         // offsets.load.buffer.size (5 MiB)
	Clock                         Clock
	Logger                        *logrus.Entry
}

func (c *Config) defaults() {
	if c.NumPartitions <= 0 {
		c.NumPartitions = 50
	}
	if c.MinSessionTimeout <= 0 {
		c.MinSessionTimeout = 6 * time.Second
	}
	if c.MaxSessionTimeout <= 0 {
		c.MaxSessionTimeout = 30 * time.Minute
	}
	if c.InitialRebalanceDelay < 0 {
		c.InitialRebalanceDelay = 0
	}
	if c.MaxSize <= 0 {
		c.MaxSize = math.MaxInt32
	}
	if c.OffsetMetadataMaxBytes <= 0 {
		c.OffsetMetadataMaxBytes = 4096
	}
	if c.OffsetsRetention <= 0 {
		c.OffsetsRetention = 7 * 24 * time.Hour
	}
	if c.OffsetsRetentionCheckInterval <= 0 {
		c.OffsetsRetentionCheckInterval = 10 * time.Minute
	}
	if c.OffsetCommitTimeout <= 0 {
		c.OffsetCommitTimeout = 5 * time.Second
	}
	if c.LoadBufferSize <= 0 {
		c.LoadBufferSize = 5 << 20
	}
	if c.Clock == nil {
		c.Clock = SystemClock
	}
	if c.Logger == nil {
		c.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
}

// NewMemberJoinTimeout is GroupCoordinator.NewMemberJoinTimeoutMs: how long a new member
// may wait in a rebalance before it is expired.
const NewMemberJoinTimeout = 5 * time.Minute

// Coordinator is GroupCoordinator together with GroupMetadataManager.
type Coordinator struct {
	cfg    Config
	log    Log
	logger *logrus.Entry
	clock  Clock
	timers *timerQueue

	ctx    context.Context // appends and loads; cancelled by Shutdown
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		active  bool
		groups  map[string]*Group
		owned   map[int32]int32 // offsets partition -> leader epoch loaded or loading
		loading map[int32]bool
		// openGroupsForProducer lists, per producer id, the groups holding its pending
		// transactional offsets, so a marker finds them (GroupMetadataManager's map).
		openGroupsForProducer map[int64]map[string]bool
		// deferredTxnCompletions are markers that landed in a partition while it loaded;
		// they are replayed once its groups are in the cache.
		deferredTxnCompletions map[int32][]txnCompletion
	}
}

// New returns an active coordinator owning no partition; Start runs its timers.
func New(cfg Config, log Log) *Coordinator {
	cfg.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	c := &Coordinator{cfg: cfg, log: log, clock: cfg.Clock, timers: newTimerQueue(cfg.Clock), ctx: ctx, cancel: cancel,
		logger: cfg.Logger.WithField("component", "group.coordinator")}
	c.mu.active = true
	c.mu.groups = map[string]*Group{}
	c.mu.owned = map[int32]int32{}
	c.mu.loading = map[int32]bool{}
	c.mu.openGroupsForProducer = map[int64]map[string]bool{}
	c.mu.deferredTxnCompletions = map[int32][]txnCompletion{}
	return c
}

// Start arms the timers (heartbeats, rebalances, offset expiry, leadership sweep). A
// coordinator that is not started fires nothing unless FireDueTimers is called (tests).
func (c *Coordinator) Start() {
	c.scheduleExpiry()
	c.scheduleSweep()
	c.timers.start()
}

func (c *Coordinator) scheduleExpiry() {
	c.timers.schedule("expiry", c.cfg.OffsetsRetentionCheckInterval, func() {
		c.CleanupGroupMetadata()
		c.scheduleExpiry()
	})
}

func (c *Coordinator) scheduleSweep() {
	c.timers.schedule("sweep", time.Second, func() {
		c.sweepLeadership()
		c.scheduleSweep()
	})
}

// Shutdown stops the coordinator: waiting joins and syncs get NOT_COORDINATOR, and every
// goroutine it started has ended when it returns.
func (c *Coordinator) Shutdown() {
	c.mu.Lock()
	c.mu.active = false
	parts := make([]int32, 0, len(c.mu.owned))
	for p := range c.mu.owned {
		parts = append(parts, p)
	}
	c.mu.Unlock()
	for _, p := range parts {
		c.OnResignation(p)
	}
	c.timers.shutdown()
	c.cancel()
	c.wg.Wait()
}

// PartitionFor returns the offsets partition of groupID.
func (c *Coordinator) PartitionFor(groupID string) int32 {
	return PartitionFor(groupID, c.cfg.NumPartitions)
}

// NumPartitions is offsets.topic.num.partitions.
func (c *Coordinator) NumPartitions() int32 { return c.cfg.NumPartitions }

func (c *Coordinator) now() time.Time { return c.clock.Now() }

// FireDueTimers runs due heartbeat/join/sync expirations (tests with a fake clock).
func (c *Coordinator) FireDueTimers() { c.timers.FireDue() }

func hbKey(g, m string) string { return "hb\x00" + g + "\x00" + m }
func joinKey(g string) string  { return "join\x00" + g }
func syncKey(g string) string  { return "sync\x00" + g }

// kafkaError extracts the Kafka error of err.
func kafkaError(err error) *kerr.Error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return kerr.RequestTimedOut
	}
	return kerr.UnknownServerError
}

type api int

const (
	apiJoin api = iota
	apiSync
	apiHeartbeat
	apiLeave
	apiCommit
	apiFetch
	apiDescribe
	apiDelete
	apiOffsetDelete
	apiTxnCommit
)

// validateGroupStatus is GroupCoordinator.validateGroupStatus. It also starts loading an
// offsets partition this broker has become leader of (the broker's LeaderAndIsr hook does
// the same; this catches any missed transition).
func (c *Coordinator) validateGroupStatus(groupID string, a api) *kerr.Error {
	switch a {
	case apiCommit, apiFetch, apiDescribe, apiDelete, apiOffsetDelete:
	default:
		if groupID == "" {
			return kerr.InvalidGroupID
		}
	}
	c.mu.Lock()
	active := c.mu.active
	c.mu.Unlock()
	if !active {
		return kerr.CoordinatorNotAvailable
	}
	return c.checkPartition(c.PartitionFor(groupID))
}

// checkPartition answers for offsets partition p: nil when loaded here, else
// COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR, reconciling with the log's leadership.
func (c *Coordinator) checkPartition(p int32) *kerr.Error {
	epoch, leader := c.log.LeaderEpoch(p)
	c.mu.Lock()
	cur, owned := c.mu.owned[p]
	loading := c.mu.loading[p]
	c.mu.Unlock()
	switch {
	case !leader:
		if owned {
			c.OnResignation(p)
		}
		return kerr.NotCoordinator
	case !owned || cur != epoch:
		c.OnElection(p, epoch)
		return kerr.CoordinatorLoadInProgress
	case loading:
		return kerr.CoordinatorLoadInProgress
	}
	return nil
}

// sweepLeadership reconciles every offsets partition with the log's leadership: load the
// ones this broker now leads, unload the ones it lost (a safety net behind the broker's
// LeaderAndIsr/StopReplica hooks).
func (c *Coordinator) sweepLeadership() {
	c.mu.Lock()
	owned := make(map[int32]int32, len(c.mu.owned))
	for p, e := range c.mu.owned {
		owned[p] = e
	}
	c.mu.Unlock()
	for p := int32(0); p < c.cfg.NumPartitions; p++ {
		epoch, leader := c.log.LeaderEpoch(p)
		cur, ok := owned[p]
		switch {
		case ok && !leader:
			c.OnResignation(p)
		case leader && (!ok || cur != epoch):
			c.OnElection(p, epoch)
		}
	}
}

func (c *Coordinator) getGroup(id string) *Group {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.groups[id]
}

// getOrMaybeCreateGroup is GroupMetadataManager.getOrMaybeCreateGroup.
func (c *Coordinator) getOrMaybeCreateGroup(id string, create bool) *Group {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.mu.groups[id]
	if g == nil && create {
		g = newGroup(id, Empty, c.now())
		c.mu.groups[id] = g
	}
	return g
}

func (c *Coordinator) removeGroupFromCache(g *Group) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.groups[g.ID] == g {
		delete(c.mu.groups, g.ID)
	}
}

// JoinRequest holds JoinGroup's parameters.
type JoinRequest struct {
	GroupID              string
	MemberID             string
	GroupInstanceID      *string
	RequireKnownMemberID bool // JoinGroup v4+
	SkipAssignmentOK     bool // JoinGroup v9+
	ClientID, ClientHost string
	RebalanceTimeout     time.Duration
	SessionTimeout       time.Duration
	ProtocolType         string
	Protocols            []Protocol
	Reason               string
}

func joinError(memberID string, err *kerr.Error) JoinResult {
	return JoinResult{Err: err, MemberID: memberID, GenerationID: -1}
}

// JoinGroup blocks until the join completes or ctx ends.
func (c *Coordinator) JoinGroup(ctx context.Context, req JoinRequest) JoinResult {
	ch := make(chan JoinResult, 1)
	c.HandleJoinGroup(req, func(r JoinResult) { ch <- r })
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return joinError(req.MemberID, kerr.RebalanceInProgress)
	}
}

// HandleJoinGroup is GroupCoordinator.handleJoinGroup; cb runs exactly once.
func (c *Coordinator) HandleJoinGroup(req JoinRequest, cb func(JoinResult)) {
	if err := c.validateGroupStatus(req.GroupID, apiJoin); err != nil {
		cb(joinError(req.MemberID, err))
		return
	}
	if req.SessionTimeout < c.cfg.MinSessionTimeout || req.SessionTimeout > c.cfg.MaxSessionTimeout {
		cb(joinError(req.MemberID, kerr.InvalidSessionTimeout))
		return
	}
	unknown := req.MemberID == ""
	g := c.getOrMaybeCreateGroup(req.GroupID, unknown)
	if g == nil {
		cb(joinError(req.MemberID, kerr.UnknownMemberID))
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !c.acceptJoiningMember(g, req.MemberID) {
		g.remove(req.MemberID)
		cb(joinError("", kerr.GroupMaxSizeReached))
	} else if unknown {
		c.doNewMemberJoinGroup(g, req, cb)
	} else {
		c.doCurrentMemberJoinGroup(g, req, cb)
	}
	if g.is(PreparingRebalance) {
		c.checkAndCompleteJoin(g)
	}
}

// acceptJoiningMember is GroupCoordinator.acceptJoiningMember (group.max.size).
func (c *Coordinator) acceptJoiningMember(g *Group, memberID string) bool {
	switch g.state {
	case Empty, Dead:
		return true
	case PreparingRebalance:
		if m, ok := g.members[memberID]; ok && m.isAwaitingJoin() {
			return true
		}
		return g.numAwaitingJoin < c.cfg.MaxSize
	default:
		return g.has(memberID) || len(g.members) < c.cfg.MaxSize
	}
}

func (c *Coordinator) doNewMemberJoinGroup(g *Group, req JoinRequest, cb func(JoinResult)) {
	switch {
	case g.is(Dead):
		cb(joinError("", kerr.CoordinatorNotAvailable))
	case !g.supportsProtocols(req.ProtocolType, req.Protocols):
		cb(joinError("", kerr.InconsistentGroupProtocol))
	default:
		newID := generateMemberID(req.ClientID, req.GroupInstanceID)
		switch {
		case req.GroupInstanceID != nil:
			if old, ok := g.staticMembers[*req.GroupInstanceID]; ok {
				c.updateStaticMemberAndRebalance(g, old, newID, req, cb)
			} else {
				c.addMemberAndRebalance(g, newID, req, cb)
			}
		case req.RequireKnownMemberID:
			c.logger.WithFields(logrus.Fields{"group": g.ID, "member_id": newID}).Debug("dynamic member joins with an unknown member id: member id required")
			g.pendingMembers[newID] = true
			key := hbKey(g.ID, newID)
			c.timers.schedule(key, req.SessionTimeout, func() { c.onExpirePendingMember(g, newID) })
			cb(joinError(newID, kerr.MemberIDRequired))
		default:
			c.addMemberAndRebalance(g, newID, req, cb)
		}
	}
}

func (c *Coordinator) doCurrentMemberJoinGroup(g *Group, req JoinRequest, cb func(JoinResult)) {
	if g.is(Dead) {
		cb(joinError(req.MemberID, kerr.CoordinatorNotAvailable))
		return
	}
	if !g.supportsProtocols(req.ProtocolType, req.Protocols) {
		cb(joinError(req.MemberID, kerr.InconsistentGroupProtocol))
		return
	}
	if g.pendingMembers[req.MemberID] {
		if req.GroupInstanceID != nil { // Kafka: IllegalStateException; a static member is never pending
			cb(joinError(req.MemberID, kerr.UnknownServerError))
			return
		}
		c.addMemberAndRebalance(g, req.MemberID, req, cb)
		return
	}
	if err := g.validateCurrentMember(req.MemberID, req.GroupInstanceID); err != nil {
		cb(joinError(req.MemberID, err))
		return
	}
	m := g.members[req.MemberID]
	current := func() {
		r := JoinResult{MemberID: m.MemberID, GenerationID: g.generationID, ProtocolType: g.protocolType,
			ProtocolName: g.protocolName, LeaderID: g.leaderOrEmpty()}
		if g.isLeader(m.MemberID) {
			r.Members = g.currentMemberMetadata()
		}
		cb(r)
	}
	switch g.state {
	case PreparingRebalance:
		c.updateMemberAndRebalance(g, m, req, cb)
	case CompletingRebalance:
		if m.matches(req.Protocols) {
			current()
		} else {
			c.updateMemberAndRebalance(g, m, req, cb)
		}
	case Stable:
		if g.isLeader(m.MemberID) || !m.matches(req.Protocols) {
			c.updateMemberAndRebalance(g, m, req, cb)
		} else {
			cb(JoinResult{MemberID: m.MemberID, GenerationID: g.generationID, ProtocolType: g.protocolType,
				ProtocolName: g.protocolName, LeaderID: g.leaderOrEmpty()})
		}
	default: // Empty
		cb(joinError(req.MemberID, kerr.UnknownMemberID))
	}
}

func (c *Coordinator) addMemberAndRebalance(g *Group, memberID string, req JoinRequest, cb func(JoinResult)) {
	m := &Member{MemberID: memberID, GroupInstanceID: req.GroupInstanceID, ClientID: req.ClientID, ClientHost: req.ClientHost,
		RebalanceTimeout: req.RebalanceTimeout, SessionTimeout: req.SessionTimeout, ProtocolType: req.ProtocolType,
		Protocols: req.Protocols, isNew: true}
	if g.is(PreparingRebalance) && g.generationID == 0 {
		g.newMemberAdded = true
	}
	g.add(m, cb)
	// A new member may wait for the rebalance for NewMemberJoinTimeout before it expires.
	c.completeAndScheduleNextExpiration(g, m, NewMemberJoinTimeout)
	reason := req.Reason
	if reason == "" {
		reason = "Adding new member " + memberID
	}
	c.maybePrepareRebalance(g, reason)
}

func (c *Coordinator) updateMemberAndRebalance(g *Group, m *Member, req JoinRequest, cb func(JoinResult)) {
	g.updateMember(m, req.Protocols, req.RebalanceTimeout, req.SessionTimeout, cb)
	reason := req.Reason
	if reason == "" {
		reason = "Updating metadata for member " + m.MemberID
	}
	c.maybePrepareRebalance(g, reason)
}

// updateStaticMemberAndRebalance is GroupCoordinator.updateStaticMemberAndRebalance: a known
// instance id joins with a new member id; the old id is fenced.
func (c *Coordinator) updateStaticMemberAndRebalance(g *Group, oldID, newID string, req JoinRequest, cb func(JoinResult)) {
	instanceID := *req.GroupInstanceID
	c.timers.cancel(hbKey(g.ID, oldID))
	m := g.replaceStaticMember(instanceID, oldID, newID)
	oldProtocols, oldRebalance, oldSession := m.Protocols, m.RebalanceTimeout, m.SessionTimeout
	g.updateMember(m, req.Protocols, req.RebalanceTimeout, req.SessionTimeout, nil)
	c.completeAndScheduleNextHeartbeatExpiration(g, m)
	log := c.logger.WithFields(logrus.Fields{"group": g.ID, "member_id": newID, "group_instance_id": instanceID})
	switch g.state {
	case Stable:
		// No rebalance if the next generation's protocol stays the same: persist the new
		// member id and return the current assignment.
		if g.protocolName != nil && g.selectProtocol() == *g.protocolName {
			log.Info("static member with unknown member id joins a stable group: replacing the old member id without a rebalance")
			assignment := map[string][]byte{}
			for _, mm := range g.members {
				assignment[mm.MemberID] = mm.Assignment
			}
			gen := g.generationID
			serr := c.storeGroup(g, assignment, func(err *kerr.Error) {
				if err != nil {
					log.WithField("error", err.Message).Warn("failed to persist the static member's new member id: reverting")
					if g.members[newID] == m {
						g.replaceStaticMember(instanceID, newID, oldID)
						g.updateMember(m, oldProtocols, oldRebalance, oldSession, nil)
					}
					cb(joinError(newID, err))
					return
				}
				isLeader := g.isLeader(newID)
				r := JoinResult{MemberID: newID, GenerationID: gen, ProtocolType: g.protocolType, ProtocolName: g.protocolName,
					LeaderID: g.leaderOrEmpty(), SkipAssignment: isLeader && req.SkipAssignmentOK}
				if isLeader && req.SkipAssignmentOK {
					r.Members = g.currentMemberMetadata()
				}
				cb(r)
			})
			if serr != nil {
				// Kafka's serializer throws inside storeGroup: the JoinGroup fails with
				// UNKNOWN_SERVER_ERROR (JoinGroupRequest.getErrorResponse) and, unlike an append
				// error, nothing is reverted: the new member id stays in place.
				log.WithError(serr).Debug("static member's group record cannot be serialized")
				cb(JoinResult{Err: kerr.UnknownServerError, GenerationID: -1})
			}
		} else {
			g.updateMember(m, req.Protocols, req.RebalanceTimeout, req.SessionTimeout, cb)
			c.maybePrepareRebalance(g, "group's selected protocol will change because static member "+newID+" joined with a change of protocol")
		}
	case CompletingRebalance:
		g.updateMember(m, req.Protocols, req.RebalanceTimeout, req.SessionTimeout, cb)
		c.prepareRebalance(g, "updating metadata for static member "+newID+" in CompletingRebalance")
	case PreparingRebalance:
		g.updateMember(m, req.Protocols, req.RebalanceTimeout, req.SessionTimeout, cb)
	default:
		cb(joinError(newID, kerr.UnknownServerError))
	}
}

func (c *Coordinator) maybePrepareRebalance(g *Group, reason string) {
	if g.canRebalance() {
		c.prepareRebalance(g, reason)
	}
}

// prepareRebalance is GroupCoordinator.prepareRebalance: DelayedJoin, or InitialDelayedJoin
// for an Empty group (group.initial.rebalance.delay.ms, extended per new member).
func (c *Coordinator) prepareRebalance(g *Group, reason string) {
	if g.is(CompletingRebalance) {
		c.resetAndPropagateAssignmentError(g, kerr.RebalanceInProgress)
	}
	c.timers.cancel(syncKey(g.ID))
	initial := g.is(Empty)
	g.transitionTo(PreparingRebalance, c.now())
	c.logger.WithFields(logrus.Fields{"group": g.ID, "generation": g.generationID, "reason": reason}).
		Info("preparing to rebalance group")
	if initial {
		delay := c.cfg.InitialRebalanceDelay
		g.joinRemaining = max(g.rebalanceTimeout()-delay, 0)
		g.initialJoin = true
		c.timers.schedule(joinKey(g.ID), delay, func() { c.onInitialJoinExpire(g) })
		return
	}
	g.initialJoin = false
	c.timers.schedule(joinKey(g.ID), g.rebalanceTimeout(), func() { c.onJoinExpire(g) })
	c.checkAndCompleteJoin(g)
}

// checkAndCompleteJoin completes a DelayedJoin (not an InitialDelayedJoin) when every
// member rejoined.
func (c *Coordinator) checkAndCompleteJoin(g *Group) {
	if !g.is(PreparingRebalance) || !g.hasAllMembersJoined() {
		return
	}
	if g.initialJoin { // InitialDelayedJoin never completes early
		return
	}
	c.timers.cancel(joinKey(g.ID))
	c.onCompleteJoin(g)
}

func (c *Coordinator) onInitialJoinExpire(g *Group) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.is(PreparingRebalance) {
		return
	}
	if g.newMemberAdded && g.joinRemaining != 0 {
		g.newMemberAdded = false
		delay := min(c.cfg.InitialRebalanceDelay, g.joinRemaining)
		g.joinRemaining = max(g.joinRemaining-delay, 0)
		c.timers.schedule(joinKey(g.ID), delay, func() { c.onInitialJoinExpire(g) })
		return
	}
	g.initialJoin = false
	c.onCompleteJoin(g)
}

func (c *Coordinator) onJoinExpire(g *Group) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.is(PreparingRebalance) {
		c.onCompleteJoin(g)
	}
}

// onCompleteJoin is GroupCoordinator.onCompleteJoin.
func (c *Coordinator) onCompleteJoin(g *Group) {
	g.initialJoin = false
	log := c.logger.WithField("group", g.ID)
	for _, m := range g.notYetRejoinedMembers() {
		if m.isStatic() {
			continue
		}
		log.WithField("member_id", m.MemberID).Info("removing member that did not rejoin before the rebalance timeout")
		g.remove(m.MemberID)
		c.timers.cancel(hbKey(g.ID, m.MemberID))
	}
	if g.is(Dead) {
		return
	}
	if !g.maybeElectNewJoinedLeader() && len(g.members) > 0 {
		log.Error("group could not complete rebalance because no members rejoined")
		c.timers.schedule(joinKey(g.ID), g.rebalanceTimeout(), func() { c.onJoinExpire(g) })
		return
	}
	g.initNextGeneration(c.now())
	if g.is(Empty) {
		log.WithField("generation", g.generationID).Info("group is now empty")
		serr := c.storeGroup(g, nil, func(err *kerr.Error) {
			if err != nil {
				log.WithField("error", err.Message).Warn("failed to write the empty group's metadata")
			}
		})
		if serr != nil {
			// Kafka's serializer throws out of onCompleteJoin after the generation moved on;
			// the empty group simply has no record of this generation.
			log.WithError(serr).Warn("failed to write the empty group's metadata")
		}
		return
	}
	log.WithFields(logrus.Fields{"generation": g.generationID, "protocol": *g.protocolName, "members": len(g.members)}).
		Info("stabilized group")
	for _, m := range g.allMembers() {
		r := JoinResult{MemberID: m.MemberID, GenerationID: g.generationID, ProtocolType: g.protocolType,
			ProtocolName: g.protocolName, LeaderID: g.leaderOrEmpty()}
		if g.isLeader(m.MemberID) {
			r.Members = g.currentMemberMetadata()
		}
		g.invokeJoin(m, r)
		c.completeAndScheduleNextHeartbeatExpiration(g, m)
		m.isNew = false
		g.pendingSyncMembers[m.MemberID] = true
	}
	// DelayedSync: members that do not sync within the rebalance timeout are removed.
	gen := g.generationID
	c.timers.schedule(syncKey(g.ID), g.rebalanceTimeout(), func() { c.onExpirePendingSync(g, gen) })
}

func (c *Coordinator) onExpirePendingSync(g *Group, gen int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if gen != g.generationID || !(g.is(CompletingRebalance) || g.is(Stable)) || len(g.pendingSyncMembers) == 0 {
		return
	}
	var ids []string
	for id := range g.pendingSyncMembers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		g.remove(id)
		c.timers.cancel(hbKey(g.ID, id))
	}
	c.prepareRebalance(g, fmt.Sprintf("removing %v on pending sync request expiration", ids))
}

// completeAndScheduleNextHeartbeatExpiration resets the member's session timer.
func (c *Coordinator) completeAndScheduleNextHeartbeatExpiration(g *Group, m *Member) {
	c.completeAndScheduleNextExpiration(g, m, m.SessionTimeout)
}

func (c *Coordinator) completeAndScheduleNextExpiration(g *Group, m *Member, timeout time.Duration) {
	m.heartbeatSatisfied = false
	id := m.MemberID
	c.timers.schedule(hbKey(g.ID, id), timeout, func() { c.onExpireHeartbeat(g, id) })
}

// onExpireHeartbeat is GroupCoordinator.onExpireHeartbeat.
func (c *Coordinator) onExpireHeartbeat(g *Group, memberID string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m, ok := g.members[memberID]
	if !ok || g.is(Dead) || m.hasSatisfiedHeartbeat() {
		return
	}
	c.logger.WithFields(logrus.Fields{"group": g.ID, "member_id": memberID, "state": g.state.String()}).
		Info("member has failed (session timeout), removing it from the group")
	c.removeMemberAndUpdateGroup(g, m, "removing member "+memberID+" on heartbeat expiration")
}

func (c *Coordinator) onExpirePendingMember(g *Group, memberID string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pendingMembers[memberID] {
		c.removePendingMemberAndUpdateGroup(g, memberID)
	}
}

func (c *Coordinator) removePendingMemberAndUpdateGroup(g *Group, memberID string) {
	g.remove(memberID)
	c.timers.cancel(hbKey(g.ID, memberID))
	if g.is(PreparingRebalance) {
		c.checkAndCompleteJoin(g)
	}
}

// removeMemberAndUpdateGroup is GroupCoordinator.removeMemberAndUpdateGroup.
func (c *Coordinator) removeMemberAndUpdateGroup(g *Group, m *Member, reason string) {
	g.invokeJoin(m, joinError(m.MemberID, kerr.UnknownMemberID))
	g.invokeSync(m, SyncResult{Err: kerr.UnknownMemberID})
	g.remove(m.MemberID)
	c.timers.cancel(hbKey(g.ID, m.MemberID))
	switch g.state {
	case Stable, CompletingRebalance:
		c.maybePrepareRebalance(g, reason)
	case PreparingRebalance:
		c.checkAndCompleteJoin(g)
	}
}

// Loaded reports whether offsets partition p is loaded here (tests, metrics).
func (c *Coordinator) Loaded(p int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, owned := c.mu.owned[p]
	return owned && !c.mu.loading[p]
}
