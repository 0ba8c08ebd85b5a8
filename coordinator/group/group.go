package group

// group.go mirrors GroupMetadata.scala and MemberMetadata.scala: the state of one group and
// its members. Every field is guarded by GroupMetadata.mu (Kafka's group lock); the
// coordinator takes it.

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a group state; String is Kafka's name.
type State int8

const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	case Dead:
		return "Dead"
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// validPreviousStates is GroupState.validPreviousStates.
var validPreviousStates = map[State][]State{
	Empty:               {PreparingRebalance},
	PreparingRebalance:  {Stable, CompletingRebalance, Empty},
	CompletingRebalance: {PreparingRebalance},
	Stable:              {CompletingRebalance},
	Dead:                {Stable, PreparingRebalance, CompletingRebalance, Empty, Dead},
}

// Protocol is one (name, metadata) a member supports, in its order of preference.
type Protocol struct {
	Name     string
	Metadata []byte
}

// JoinResult is what a JoinGroup caller receives (JoinGroupResult).
type JoinResult struct {
	Err            *kerr.Error // nil: NONE
	MemberID       string
	GenerationID   int32
	ProtocolType   *string
	ProtocolName   *string
	LeaderID       string
	SkipAssignment bool
	Members        []JoinMember // only for the leader
}

// JoinMember is one member in the leader's JoinGroup response.
type JoinMember struct {
	MemberID        string
	GroupInstanceID *string
	Metadata        []byte
}

// SyncResult is what a SyncGroup caller receives.
type SyncResult struct {
	Err          *kerr.Error
	ProtocolType *string
	ProtocolName *string
	Assignment   []byte
}

// Member is MemberMetadata.
type Member struct {
	MemberID         string
	GroupInstanceID  *string
	ClientID         string
	ClientHost       string
	RebalanceTimeout time.Duration
	SessionTimeout   time.Duration
	ProtocolType     string
	Protocols        []Protocol
	Assignment       []byte

	awaitingJoin       func(JoinResult)
	awaitingSync       func(SyncResult)
	isNew              bool
	isLeaving          bool
	heartbeatSatisfied bool
}

func (m *Member) isStatic() bool       { return m.GroupInstanceID != nil }
func (m *Member) isAwaitingJoin() bool { return m.awaitingJoin != nil }
func (m *Member) isAwaitingSync() bool { return m.awaitingSync != nil }

// hasSatisfiedHeartbeat is MemberMetadata.hasSatisfiedHeartbeat.
func (m *Member) hasSatisfiedHeartbeat() bool {
	if m.isNew {
		return m.heartbeatSatisfied
	}
	if m.isAwaitingJoin() || m.isAwaitingSync() {
		return true
	}
	return m.heartbeatSatisfied
}

// metadata returns the member's metadata for protocol.
func (m *Member) metadata(protocol string) []byte {
	for _, p := range m.Protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// matches reports whether protocols equal the member's (MemberMetadata.matches).
func (m *Member) matches(protocols []Protocol) bool {
	if len(protocols) != len(m.Protocols) {
		return false
	}
	for i := range protocols {
		if protocols[i].Name != m.Protocols[i].Name || !bytes.Equal(protocols[i].Metadata, m.Protocols[i].Metadata) {
			return false
		}
	}
	return true
}

// vote is the member's first protocol among candidates.
func (m *Member) vote(candidates map[string]bool) string {
	for _, p := range m.Protocols {
		if candidates[p.Name] {
			return p.Name
		}
	}
	return ""
}

// commitRecord is Kafka's CommitRecordMetadataAndOffset: an offset and the log offset of
// the batch that holds its record (-1 until appended).
type commitRecord struct {
	appendedOffset int64
	om             OffsetAndMetadata
}

// olderThan is CommitRecordMetadataAndOffset.olderThan: which of two records of the same
// partition was appended first; a commit and a transactional commit of one partition
// resolve by their place in the log, not by when they were answered.
func (cr commitRecord) olderThan(other commitRecord) bool {
	return cr.appendedOffset < other.appendedOffset
}

// Group is GroupMetadata.
type Group struct {
	mu sync.Mutex

	ID                    string
	state                 State
	currentStateTimestamp int64 // ms; -1: unknown
	protocolType          *string
	protocolName          *string
	generationID          int32
	leaderID              *string

	members            map[string]*Member
	staticMembers      map[string]string // instance id -> member id
	pendingMembers     map[string]bool
	pendingSyncMembers map[string]bool
	numAwaitingJoin    int
	supportedProtocols map[string]int
	newMemberAdded     bool
	subscribedTopics   map[string]bool // nil: unknown

	offsets              map[TopicPartition]commitRecord
	pendingOffsetCommits map[TopicPartition]int // in-flight appends per partition
	// pendingTxnOffsetCommits are TxnOffsetCommit offsets per producer id, waiting for the
	// producer's COMMIT or ABORT marker in the offsets partition
	// (pendingTransactionalOffsetCommits). An entry is -1 until its record is appended.
	pendingTxnOffsetCommits map[int64]map[TopicPartition]commitRecord
	// Both kinds of commits in one generation draw a warning, as in Kafka
	// (hasReceivedConsistentOffsetCommits).
	receivedConsumerOffsetCommits bool
	receivedTxnOffsetCommits      bool

	// initialJoin: the armed join timer is an InitialDelayedJoin with joinRemaining left.
	initialJoin   bool
	joinRemaining time.Duration
}

func newGroup(id string, state State, now time.Time) *Group {
	return &Group{ID: id, state: state, currentStateTimestamp: now.UnixMilli(), members: map[string]*Member{},
		staticMembers: map[string]string{}, pendingMembers: map[string]bool{}, pendingSyncMembers: map[string]bool{},
		supportedProtocols: map[string]int{}, offsets: map[TopicPartition]commitRecord{},
		pendingOffsetCommits: map[TopicPartition]int{}, pendingTxnOffsetCommits: map[int64]map[TopicPartition]commitRecord{}}
}

func (g *Group) is(s State) bool { return g.state == s }

func (g *Group) canRebalance() bool {
	for _, s := range validPreviousStates[PreparingRebalance] {
		if g.state == s {
			return true
		}
	}
	return false
}

func (g *Group) transitionTo(s State, now time.Time) {
	ok := false
	for _, p := range validPreviousStates[s] {
		if g.state == p {
			ok = true
		}
	}
	if !ok {
		panic(fmt.Sprintf("group %s should be in %v to move to %s but is in %s", g.ID, validPreviousStates[s], s, g.state))
	}
	g.state = s
	g.currentStateTimestamp = now.UnixMilli()
}

func (g *Group) has(memberID string) bool { _, ok := g.members[memberID]; return ok }
func (g *Group) isLeader(memberID string) bool {
	return g.leaderID != nil && *g.leaderID == memberID
}
func (g *Group) leaderOrEmpty() string {
	if g.leaderID == nil {
		return ""
	}
	return *g.leaderID
}

func (g *Group) add(m *Member, cb func(JoinResult)) {
	if len(g.members) == 0 {
		pt := m.ProtocolType
		g.protocolType = &pt
	}
	if g.leaderID == nil {
		id := m.MemberID
		g.leaderID = &id
	}
	if m.isStatic() {
		g.staticMembers[*m.GroupInstanceID] = m.MemberID
	}
	g.members[m.MemberID] = m
	for _, p := range m.Protocols {
		g.supportedProtocols[p.Name]++
	}
	m.awaitingJoin = cb
	if cb != nil {
		g.numAwaitingJoin++
	}
	delete(g.pendingMembers, m.MemberID)
}

// remove is GroupMetadata.remove (also of a pending member).
func (g *Group) remove(memberID string) {
	delete(g.pendingMembers, memberID)
	m, ok := g.members[memberID]
	if !ok {
		return
	}
	for _, p := range m.Protocols {
		g.supportedProtocols[p.Name]--
	}
	if m.isAwaitingJoin() {
		g.numAwaitingJoin--
	}
	if m.isStatic() && g.staticMembers[*m.GroupInstanceID] == memberID {
		delete(g.staticMembers, *m.GroupInstanceID)
	}
	delete(g.members, memberID)
	delete(g.pendingSyncMembers, memberID)
	if g.isLeader(memberID) {
		g.leaderID = nil
		for _, id := range g.sortedMemberIDs() {
			id := id
			g.leaderID = &id
			break
		}
	}
}

func (g *Group) sortedMemberIDs() []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (g *Group) allMembers() []*Member {
	out := make([]*Member, 0, len(g.members))
	for _, id := range g.sortedMemberIDs() {
		out = append(out, g.members[id])
	}
	return out
}

func (g *Group) updateMember(m *Member, protocols []Protocol, rebalanceTimeout, sessionTimeout time.Duration, cb func(JoinResult)) {
	for _, p := range m.Protocols {
		g.supportedProtocols[p.Name]--
	}
	for _, p := range protocols {
		g.supportedProtocols[p.Name]++
	}
	m.Protocols, m.RebalanceTimeout, m.SessionTimeout = protocols, rebalanceTimeout, sessionTimeout
	if cb != nil && !m.isAwaitingJoin() {
		g.numAwaitingJoin++
	} else if cb == nil && m.isAwaitingJoin() {
		g.numAwaitingJoin--
	}
	m.awaitingJoin = cb
}

func (g *Group) invokeJoin(m *Member, r JoinResult) bool {
	if m.awaitingJoin == nil {
		return false
	}
	cb := m.awaitingJoin
	m.awaitingJoin = nil
	g.numAwaitingJoin--
	cb(r)
	return true
}

func (g *Group) invokeSync(m *Member, r SyncResult) bool {
	if m.awaitingSync == nil {
		return false
	}
	cb := m.awaitingSync
	m.awaitingSync = nil
	cb(r)
	return true
}

func (g *Group) hasAllMembersJoined() bool {
	return len(g.members) == g.numAwaitingJoin && len(g.pendingMembers) == 0
}

func (g *Group) notYetRejoinedMembers() []*Member {
	var out []*Member
	for _, m := range g.allMembers() {
		if !m.isAwaitingJoin() {
			out = append(out, m)
		}
	}
	return out
}

// maybeElectNewJoinedLeader keeps a leader that rejoined, else picks a member that did.
func (g *Group) maybeElectNewJoinedLeader() bool {
	if g.leaderID == nil {
		return false
	}
	if l, ok := g.members[*g.leaderID]; ok && l.isAwaitingJoin() {
		return true
	}
	for _, m := range g.allMembers() {
		if m.isAwaitingJoin() {
			id := m.MemberID
			g.leaderID = &id
			return true
		}
	}
	return false
}

func (g *Group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.RebalanceTimeout)
	}
	return d
}

// candidateProtocols are the protocols every member supports.
func (g *Group) candidateProtocols() map[string]bool {
	out := map[string]bool{}
	for p, n := range g.supportedProtocols {
		if n == len(g.members) {
			out[p] = true
		}
	}
	return out
}

// selectProtocol is GroupMetadata.selectProtocol: every member votes for its first candidate;
// most votes wins (ties: the earliest in the leader's preference, for determinism).
func (g *Group) selectProtocol() string {
	cands := g.candidateProtocols()
	votes := map[string]int{}
	for _, m := range g.members {
		votes[m.vote(cands)]++
	}
	best, bestN := "", -1
	var order []Protocol
	if g.leaderID != nil {
		if l, ok := g.members[*g.leaderID]; ok {
			order = l.Protocols
		}
	}
	for _, p := range order {
		if n := votes[p.Name]; cands[p.Name] && n > bestN {
			best, bestN = p.Name, n
		}
	}
	for p, n := range votes { // members whose leader is unknown
		if n > bestN {
			best, bestN = p, n
		}
	}
	return best
}

// supportsProtocols is GroupMetadata.supportsProtocols.
func (g *Group) supportsProtocols(protocolType string, protocols []Protocol) bool {
	if g.is(Empty) {
		return protocolType != "" && len(protocols) > 0
	}
	if g.protocolType == nil || *g.protocolType != protocolType {
		return false
	}
	for _, p := range protocols {
		if g.supportedProtocols[p.Name] == len(g.members) {
			return true
		}
	}
	return false
}

// isStaticMemberFenced: instanceID maps to a different member.
func (g *Group) currentStaticMemberID(instanceID *string) (string, bool) {
	if instanceID == nil {
		return "", false
	}
	id, ok := g.staticMembers[*instanceID]
	return id, ok
}

// validateCurrentMember is GroupCoordinator.validateCurrentMember.
// A group instance id that maps to no member is UNKNOWN_MEMBER_ID, as in Kafka 3.7.
func (g *Group) validateCurrentMember(memberID string, instanceID *string) *kerr.Error {
	if instanceID != nil {
		cur, ok := g.currentStaticMemberID(instanceID)
		if !ok {
			return kerr.UnknownMemberID
		}
		if cur != memberID {
			return kerr.FencedInstanceID
		}
	}
	if !g.has(memberID) {
		return kerr.UnknownMemberID
	}
	return nil
}

// replaceStaticMember moves a static member to a new member id; the old id's waiting
// JoinGroup/SyncGroup get FENCED_INSTANCE_ID.
func (g *Group) replaceStaticMember(instanceID, oldID, newID string) *Member {
	m := g.members[oldID]
	if m.isAwaitingJoin() {
		g.invokeJoin(m, JoinResult{Err: kerr.FencedInstanceID, MemberID: oldID, GenerationID: -1})
	}
	g.invokeSync(m, SyncResult{Err: kerr.FencedInstanceID})
	delete(g.members, oldID)
	m.MemberID = newID
	g.members[newID] = m
	if g.isLeader(oldID) {
		g.leaderID = &newID
	}
	g.staticMembers[instanceID] = newID
	if g.pendingSyncMembers[oldID] {
		delete(g.pendingSyncMembers, oldID)
		g.pendingSyncMembers[newID] = true
	}
	return m
}

func (g *Group) currentMemberMetadata() []JoinMember {
	var out []JoinMember
	proto := ""
	if g.protocolName != nil {
		proto = *g.protocolName
	}
	for _, m := range g.allMembers() {
		out = append(out, JoinMember{MemberID: m.MemberID, GroupInstanceID: m.GroupInstanceID, Metadata: m.metadata(proto)})
	}
	return out
}

// initNextGeneration is GroupMetadata.initNextGeneration.
func (g *Group) initNextGeneration(now time.Time) {
	g.generationID++
	if len(g.members) > 0 {
		p := g.selectProtocol()
		g.protocolName = &p
		g.subscribedTopics = g.computeSubscribedTopics()
		g.transitionTo(CompletingRebalance, now)
	} else {
		g.protocolName = nil
		g.subscribedTopics = g.computeSubscribedTopics()
		g.transitionTo(Empty, now)
	}
	g.receivedConsumerOffsetCommits, g.receivedTxnOffsetCommits = false, false
	g.pendingSyncMembers = map[string]bool{}
}

// computeSubscribedTopics parses the consumer protocol's subscriptions; nil when unknown.
func (g *Group) computeSubscribedTopics() map[string]bool {
	if g.protocolType == nil || *g.protocolType != "consumer" {
		return nil
	}
	if len(g.members) == 0 {
		return map[string]bool{}
	}
	if g.protocolName == nil {
		return nil
	}
	out := map[string]bool{}
	for _, m := range g.members {
		var s kmsg.ConsumerMemberMetadata
		if err := s.ReadFrom(m.metadata(*g.protocolName)); err != nil {
			return nil
		}
		for _, t := range s.Topics {
			out[t] = true
		}
	}
	return out
}

func (g *Group) isSubscribedToTopic(topic string) bool {
	if g.subscribedTopics == nil {
		return true
	}
	return g.subscribedTopics[topic]
}

// generateMemberID is GroupMetadata.generateMemberId: prefix + "-" + UUID.
func generateMemberID(clientID string, instanceID *string) string {
	prefix := clientID
	if instanceID != nil {
		prefix = *instanceID
	}
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", prefix, u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// groupMetadataValue is the group record (GroupMetadataManager.groupMetadataValue).
func (g *Group) groupMetadataValue(assignment map[string][]byte) *kmsg.GroupMetadataValue {
	v := kmsg.NewGroupMetadataValue()
	v.Version = 3
	if g.protocolType != nil {
		v.ProtocolType = *g.protocolType
	}
	v.Generation = g.generationID
	v.Protocol = g.protocolName
	v.Leader = g.leaderID
	v.CurrentStateTimestamp = g.currentStateTimestamp
	proto := ""
	if g.protocolName != nil {
		proto = *g.protocolName
	}
	for _, m := range g.allMembers() {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.InstanceID, vm.ClientID, vm.ClientHost = m.MemberID, m.GroupInstanceID, m.ClientID, m.ClientHost
		vm.RebalanceTimeoutMillis = int32(m.RebalanceTimeout / time.Millisecond)
		vm.SessionTimeoutMillis = int32(m.SessionTimeout / time.Millisecond)
		vm.Subscription = m.metadata(proto)
		if vm.Subscription == nil {
			vm.Subscription = []byte{}
		}
		vm.Assignment = assignment[m.MemberID]
		if vm.Assignment == nil {
			vm.Assignment = []byte{}
		}
		v.Members = append(v.Members, vm)
	}
	return &v
}

// loadGroup rebuilds a group from its record (GroupMetadata.loadGroup).
func loadGroup(id string, v *kmsg.GroupMetadataValue, now time.Time) *Group {
	state := Stable
	if len(v.Members) == 0 {
		state = Empty
	}
	g := newGroup(id, state, now)
	g.generationID = v.Generation
	if v.ProtocolType != "" {
		pt := v.ProtocolType
		g.protocolType = &pt
	}
	g.protocolName, g.leaderID = v.Protocol, v.Leader
	g.currentStateTimestamp = -1
	if v.Version >= 2 {
		g.currentStateTimestamp = v.CurrentStateTimestamp
	}
	proto := ""
	if v.Protocol != nil {
		proto = *v.Protocol
	}
	for _, vm := range v.Members {
		m := &Member{MemberID: vm.MemberID, GroupInstanceID: vm.InstanceID, ClientID: vm.ClientID, ClientHost: vm.ClientHost,
			RebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
			SessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
			ProtocolType:     v.ProtocolType, Protocols: []Protocol{{Name: proto, Metadata: vm.Subscription}}, Assignment: vm.Assignment}
		if vm.RebalanceTimeoutMillis < 0 {
			m.RebalanceTimeout = m.SessionTimeout
		}
		g.add(m, nil)
	}
	if v.Leader != nil {
		g.leaderID = v.Leader
	}
	g.subscribedTopics = g.computeSubscribedTopics()
	return g
}

// hasOffsets reports committed, in-flight or pending transactional offsets: a group whose
// only offsets wait for a transaction's outcome does not expire.
func (g *Group) hasOffsets() bool {
	return len(g.offsets) > 0 || len(g.pendingOffsetCommits) > 0 || len(g.pendingTxnOffsetCommits) > 0
}

// prepareTxnOffsetCommit is GroupMetadata.prepareTxnOffsetCommit: the producer's offsets
// are pending (not yet appended) until the marker.
func (g *Group) prepareTxnOffsetCommit(producerID int64, offsets map[TopicPartition]OffsetAndMetadata) {
	g.receivedTxnOffsetCommits = true
	po := g.pendingTxnOffsetCommits[producerID]
	if po == nil {
		po = map[TopicPartition]commitRecord{}
		g.pendingTxnOffsetCommits[producerID] = po
	}
	for tp, om := range offsets {
		po[tp] = commitRecord{appendedOffset: -1, om: om}
	}
}

// onTxnOffsetCommitAppend is GroupMetadata.onTxnOffsetCommitAppend: the record is in the
// log at offset; a later TxnOffsetCommit of the same partition that replaced the pending
// entry meanwhile keeps its own.
func (g *Group) onTxnOffsetCommitAppend(producerID int64, tp TopicPartition, cr commitRecord) {
	po := g.pendingTxnOffsetCommits[producerID]
	if cur, ok := po[tp]; ok && cur.om == cr.om {
		po[tp] = cr
	}
}

// failPendingTxnOffsetCommit is GroupMetadata.failPendingTxnOffsetCommit: the append
// failed; the client gets the error and retries, maybe at another coordinator.
func (g *Group) failPendingTxnOffsetCommit(producerID int64, tp TopicPartition) {
	po, ok := g.pendingTxnOffsetCommits[producerID]
	if !ok {
		return
	}
	delete(po, tp)
	if len(po) == 0 {
		delete(g.pendingTxnOffsetCommits, producerID)
	}
}

// completePendingTxnOffsetCommit is GroupMetadata.completePendingTxnOffsetCommit: on a
// COMMIT marker each pending offset replaces the committed one unless that one's record is
// newer in the log (a plain OffsetCommit appended after the transactional one wins); on
// ABORT they are dropped. It returns how many offsets were applied.
func (g *Group) completePendingTxnOffsetCommit(producerID int64, commit bool) (applied int, unappended int) {
	po := g.pendingTxnOffsetCommits[producerID]
	delete(g.pendingTxnOffsetCommits, producerID)
	if !commit {
		return 0, 0
	}
	for tp, cr := range po {
		if cr.appendedOffset < 0 {
			// Kafka throws IllegalStateException: the marker cannot follow a record that is
			// not in the log yet. Skip it rather than apply an offset that is not stored.
			unappended++
			continue
		}
		if cur, ok := g.offsets[tp]; !ok || cur.olderThan(cr) {
			g.offsets[tp] = cr
			applied++
		}
	}
	return applied, unappended
}

// hasPendingOffsetCommitsForTopicPartition is GroupMetadata's check behind
// UNSTABLE_OFFSET_COMMIT: an OffsetCommit in flight or a transactional one pending.
func (g *Group) hasPendingOffsetCommitsForTopicPartition(tp TopicPartition) bool {
	if g.pendingOffsetCommits[tp] > 0 {
		return true
	}
	for _, po := range g.pendingTxnOffsetCommits {
		if _, ok := po[tp]; ok {
			return true
		}
	}
	return false
}

// removeOffsets is GroupMetadata.removeOffsets: committed offsets of tps are removed (and
// returned) and pending transactional ones of tps are dropped. A producer keeps its
// (possibly empty) pending entry until its marker, as in Kafka, so its transaction still
// holds the group.
func (g *Group) removeOffsets(tps []TopicPartition) []TopicPartition {
	var removed []TopicPartition
	for _, tp := range tps {
		for _, po := range g.pendingTxnOffsetCommits {
			delete(po, tp)
		}
		if _, ok := g.offsets[tp]; ok {
			delete(g.offsets, tp)
			removed = append(removed, tp)
		}
	}
	return removed
}

// expiredOffsets is GroupMetadata.removeExpiredOffsets' selection.
func (g *Group) expiredOffsets(nowMs int64, retention time.Duration) []TopicPartition {
	retMs := retention.Milliseconds()
	pick := func(base func(cr commitRecord) int64, subscribed map[string]bool) []TopicPartition {
		var out []TopicPartition
		for tp, cr := range g.offsets {
			if subscribed[tp.Topic] || g.pendingOffsetCommits[tp] > 0 {
				continue
			}
			if cr.om.ExpireTimestamp >= 0 {
				if nowMs >= cr.om.ExpireTimestamp {
					out = append(out, tp)
				}
			} else if nowMs-base(cr) >= retMs {
				out = append(out, tp)
			}
		}
		return out
	}
	byCommit := func(cr commitRecord) int64 { return cr.om.CommitTimestamp }
	switch {
	case g.protocolType != nil && g.is(Empty):
		return pick(func(cr commitRecord) int64 {
			if g.currentStateTimestamp >= 0 {
				return g.currentStateTimestamp
			}
			return cr.om.CommitTimestamp
		}, nil)
	case g.protocolType != nil && *g.protocolType == "consumer" && g.subscribedTopics != nil && g.is(Stable):
		return pick(byCommit, g.subscribedTopics)
	case g.protocolType == nil:
		return pick(byCommit, nil)
	}
	return nil
}
