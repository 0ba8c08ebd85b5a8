package broker

// fetch_session.go — incremental fetch sessions (KIP-227, Fetch v7+), after Kafka's
// FetchSession.scala (FetchManager, FetchSessionCache, CachedPartition):
//   - (id 0, epoch -1): sessionless full fetch; (id, -1): close the session, then a
//     sessionless full fetch; (any id, 0): close id if set, full fetch, and a new session
//     is created if a slot is free (response session id 0 otherwise); (id, n>0):
//     incremental — an unknown id gives FETCH_SESSION_ID_NOT_FOUND, a wrong epoch
//     INVALID_FETCH_SESSION_EPOCH, a session created with topic ids used by a v<13
//     request (or the reverse) FETCH_SESSION_TOPIC_ID_ERROR.
//   - An incremental request lists only added or changed partitions and forgets others
//     with ForgottenTopicsData; the broker fetches every partition of the session and
//     answers only those with records, a changed high watermark / last stable offset /
//     log start offset, a diverging epoch, a current leader, or an error. Partitions
//     answered are moved to the end of the session's order, for fairness under max_bytes.
//     An incremental request that forgets the last partition closes the session and is
//     answered sessionless (session id 0).
//   - Epochs wrap from MaxInt32 to 1. v13+ sessions key partitions by topic id.
//   - Cache size: max.incremental.fetch.session.cache.slots (1000). When full, a new
//     session may evict (FetchSessionCache.tryEvict): first the least recently used
//     session if it is stale (unused for more than min.incremental.fetch.session.eviction.ms,
//     120000); otherwise the least valuable session of evictableByPrivileged (for a
//     follower's session) or evictableByAll (for a consumer's), ordered as EvictableKey
//     (privileged, size, id), if the new session's key (privileged, size, 0) is not
//     smaller. Both sets are decided when a session is touched (created or used): a
//     consumer session is always evictable by a follower's, and any session created more
//     than the eviction time before its last use is evictable by all; the size compared
//     is the one at that touch. Kafka keeps the sets in tree maps; here a linear scan over
//     at most max slots sessions picks the same minimum, only when the cache is full.
//   - v13+: a partition whose topic id differs from the id of the hosted partition is
//     answered INCONSISTENT_TOPIC_ID (ReplicaManager.readFromLocalLog); an id the metadata
//     cache does not know, UNKNOWN_TOPIC_ID (01_fetch.go).
//
// Lock order: FetchSessionCache.mu → FetchSession.mu, as Kafka (cache lock, then session).

import (
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

const (
	defaultFetchSessionSlots      = 1000
	defaultFetchSessionEvictionMs = 120000
)

// fetchSessionKey names a session partition: by topic id from v13, else by name.
type fetchSessionKey struct {
	id        [16]byte
	topic     string
	partition int32
}

// cachedPartition is Kafka's CachedPartition: the request parameters last sent for the
// partition and the response fields last returned for it.
type cachedPartition struct {
	key                fetchSessionKey
	topic              string // name as sent (v<13), "" for id-keyed partitions
	topicID            [16]byte
	fetchOffset        int64
	logStartOffset     int64
	maxBytes           int32
	currentLeaderEpoch int32
	lastFetchedEpoch   int32
	// response state; -1 until first answered
	highWatermark    int64
	lastStableOffset int64
	localLogStart    int64
}

func newCachedPartition(key fetchSessionKey, t *kmsg.FetchRequestTopic, p *kmsg.FetchRequestTopicPartition) *cachedPartition {
	cp := &cachedPartition{key: key, topic: t.Topic, topicID: t.TopicID, highWatermark: -1, lastStableOffset: -1, localLogStart: -1}
	cp.updateRequest(p)
	return cp
}

func (cp *cachedPartition) updateRequest(p *kmsg.FetchRequestTopicPartition) {
	cp.fetchOffset, cp.logStartOffset, cp.maxBytes = p.FetchOffset, p.LogStartOffset, p.PartitionMaxBytes
	cp.currentLeaderEpoch, cp.lastFetchedEpoch = p.CurrentLeaderEpoch, p.LastFetchedEpoch
}

// maybeUpdateResponse is CachedPartition.maybeUpdateResponseData: whether an incremental
// response must carry p, updating the cached fields when update is set.
func (cp *cachedPartition) maybeUpdateResponse(p *kmsg.FetchResponseTopicPartition, hasRecords, update bool) bool {
	must := hasRecords || len(p.RecordBatches) > 0
	if cp.highWatermark != p.HighWatermark {
		must = true
		if update {
			cp.highWatermark = p.HighWatermark
		}
	}
	if cp.localLogStart != p.LogStartOffset {
		must = true
		if update {
			cp.localLogStart = p.LogStartOffset
		}
	}
	if cp.lastStableOffset != p.LastStableOffset {
		must = true
		if update {
			cp.lastStableOffset = p.LastStableOffset
		}
	}
	if p.PreferredReadReplica >= 0 || p.ErrorCode != 0 ||
		p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1 ||
		p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1 {
		must = true
	}
	return must
}

// FetchSession is one incremental fetch session. mu guards the partitions and the epoch;
// the fields below "cache state" are the cache's and guarded by FetchSessionCache.mu.
type FetchSession struct {
	mu           sync.Mutex
	id           int32
	privileged   bool // created by a follower
	usesTopicIDs bool
	creationMs   int64
	epoch        int32 // next expected epoch
	order        []fetchSessionKey
	parts        map[fetchSessionKey]*cachedPartition

	// cache state, set by FetchSessionCache.touchLocked
	lastUsedMs            int64
	cachedSize            int // partitions at the last touch; -1 before the first
	evictableByPrivileged bool
	evictableByAll        bool
}

// ID returns the session id.
func (s *FetchSession) ID() int32 { return s.id }

// Epoch returns the next expected epoch.
func (s *FetchSession) Epoch() int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
}

// Size returns the number of partitions in the session.
func (s *FetchSession) Size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.order)
}

func (s *FetchSession) add(cp *cachedPartition) {
	if _, ok := s.parts[cp.key]; ok {
		return
	}
	s.parts[cp.key] = cp
	s.order = append(s.order, cp.key)
}

func (s *FetchSession) remove(k fetchSessionKey) {
	if _, ok := s.parts[k]; !ok {
		return
	}
	delete(s.parts, k)
	for i, o := range s.order {
		if o == k {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
}

// nextFetchSessionEpoch is FetchMetadata.nextEpoch: MaxInt32 wraps to 1 (0 is the
// initial epoch) and the final epoch -1 stays -1.
func nextFetchSessionEpoch(e int32) int32 {
	switch {
	case e < 0:
		return -1
	case e == math.MaxInt32:
		return 1
	}
	return e + 1
}

// FetchSessionStats are counters exposed for tests and metrics.
type FetchSessionStats struct {
	Created, Evicted, Incremental, Full, Errors int64
	// Partitions is NumIncrementalFetchPartitionsCached: the sessions' sizes at their
	// last touch.
	Partitions int64
}

// evictableKey is Kafka's EvictableKey: sessions compare by (privileged, size, id),
// false before true; the smallest is the least valuable.
type evictableKey struct {
	privileged bool
	size       int
	id         int32
}

func (k evictableKey) less(o evictableKey) bool {
	if k.privileged != o.privileged {
		return !k.privileged
	}
	if k.size != o.size {
		return k.size < o.size
	}
	return k.id < o.id
}

// FetchSessionCache is Kafka's FetchSessionCache (one shard: Kafka 3.7 has no sharding).
// Safe for concurrent use; see the file comment for the lock order.
type FetchSessionCache struct {
	mu            sync.Mutex
	maxSlots      int
	evictionMs    int64
	sessions      map[int32]*FetchSession
	numPartitions int64

	created, evicted, incremental, full, errors atomic.Int64
}

// NewFetchSessionCache returns a cache of at most slots sessions.
func NewFetchSessionCache(slots int, evictionMs int64) *FetchSessionCache {
	return &FetchSessionCache{maxSlots: slots, evictionMs: evictionMs, sessions: map[int32]*FetchSession{}}
}

// Stats returns the counters.
func (c *FetchSessionCache) Stats() FetchSessionStats {
	c.mu.Lock()
	n := c.numPartitions
	c.mu.Unlock()
	return FetchSessionStats{Created: c.created.Load(), Evicted: c.evicted.Load(), Incremental: c.incremental.Load(),
		Full: c.full.Load(), Errors: c.errors.Load(), Partitions: n}
}

// Len returns the number of cached sessions.
func (c *FetchSessionCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}

// Get returns the session with id.
func (c *FetchSessionCache) Get(id int32) *FetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[id]
}

// Remove drops session id.
func (c *FetchSessionCache) Remove(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.sessions[id]; s != nil {
		c.removeLocked(s)
	}
}

// Clear drops every session (as a broker restart would); their owners get
// FETCH_SESSION_ID_NOT_FOUND on their next incremental fetch.
func (c *FetchSessionCache) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.sessions {
		c.removeLocked(s)
	}
}

func (c *FetchSessionCache) removeLocked(s *FetchSession) {
	if c.sessions[s.id] != s {
		return
	}
	delete(c.sessions, s.id)
	if s.cachedSize > 0 {
		c.numPartitions -= int64(s.cachedSize)
	}
}

// touchLocked is FetchSessionCache.touch: the session was used at nowMs with its current
// partitions; it re-decides which eviction sets the session is in. Caller holds c.mu and,
// for a session already in the cache, s.mu.
func (c *FetchSessionCache) touchLocked(s *FetchSession, nowMs int64) {
	s.lastUsedMs = nowMs
	if s.cachedSize > 0 {
		c.numPartitions -= int64(s.cachedSize)
	}
	s.cachedSize = len(s.order)
	c.numPartitions += int64(s.cachedSize)
	old := nowMs-s.creationMs > c.evictionMs
	s.evictableByPrivileged = !s.privileged || old
	s.evictableByAll = old
}

// maybeCreate (maybeCreateSession) caches a new session holding parts if a slot is free or
// tryEvict frees one; nil otherwise.
func (c *FetchSessionCache) maybeCreate(nowMs int64, privileged, usesTopicIDs bool, parts []*cachedPartition) *FetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sessions) >= c.maxSlots && !c.tryEvictLocked(privileged, evictableKey{privileged, len(parts), 0}, nowMs) {
		return nil
	}
	id := int32(0)
	for id == 0 || c.sessions[id] != nil {
		id = rand.Int32N(math.MaxInt32) + 1
	}
	s := &FetchSession{id: id, privileged: privileged, usesTopicIDs: usesTopicIDs, epoch: nextFetchSessionEpoch(0),
		creationMs: nowMs, cachedSize: -1, parts: make(map[fetchSessionKey]*cachedPartition, len(parts))}
	for _, cp := range parts {
		s.add(cp)
	}
	c.sessions[id] = s
	c.touchLocked(s, nowMs)
	c.created.Add(1)
	return s
}

// tryEvictLocked is FetchSessionCache.tryEvict: a proposed new session (privileged, key)
// may evict the least recently used session if it is stale, else the least valuable
// session of its eviction set if that one is not worth more than the new one.
func (c *FetchSessionCache) tryEvictLocked(privileged bool, key evictableKey, nowMs int64) bool {
	var lru *FetchSession
	for _, s := range c.sessions {
		if lru == nil || s.lastUsedMs < lru.lastUsedMs || (s.lastUsedMs == lru.lastUsedMs && s.id < lru.id) {
			lru = s
		}
	}
	if lru == nil {
		return false
	}
	if nowMs-lru.lastUsedMs > c.evictionMs {
		c.removeLocked(lru)
		c.evicted.Add(1)
		return true
	}
	var victim *FetchSession
	var victimKey evictableKey
	for _, s := range c.sessions {
		if privileged && !s.evictableByPrivileged || !privileged && !s.evictableByAll {
			continue
		}
		k := evictableKey{s.privileged, s.cachedSize, s.id}
		if victim == nil || k.less(victimKey) {
			victim, victimKey = s, k
		}
	}
	if victim == nil || key.less(victimKey) {
		return false
	}
	c.removeLocked(victim)
	c.evicted.Add(1)
	return true
}

// fetchContext is one Fetch request's view of its session (Kafka's FetchContext).
type fetchContext struct {
	cache       *FetchSessionCache
	errCode     int16 // session error: answer with no topics
	incremental bool
	session     *FetchSession // incremental: the session
	create      bool          // full fetch with epoch 0: try to create a session
	privileged  bool
	version     int16
	topics      []kmsg.FetchRequestTopic // the partitions to fetch
	keys        []fetchSessionKey        // incremental: in fetch order
}

func sessionKey(version int16, t *kmsg.FetchRequestTopic, partition int32) fetchSessionKey {
	if version >= 13 {
		return fetchSessionKey{id: t.TopicID, partition: partition}
	}
	return fetchSessionKey{topic: t.Topic, partition: partition}
}

// newFetchContext is FetchManager.newContext.
func (c *FetchSessionCache) newFetchContext(req *kmsg.FetchRequest, privileged bool, nowMs int64) *fetchContext {
	fc := &fetchContext{cache: c, privileged: privileged, version: req.Version, topics: req.Topics}
	if req.Version < 7 {
		return fc
	}
	if req.SessionEpoch == -1 || req.SessionEpoch == 0 { // full
		if req.SessionID != 0 {
			c.Remove(req.SessionID)
		}
		fc.create = req.SessionEpoch == 0
		c.full.Add(1)
		return fc
	}
	// The cache lock is held across the update, as Kafka does, so the session cannot be
	// evicted half-updated.
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[req.SessionID]
	if s == nil {
		fc.errCode = kerr.FetchSessionIDNotFound.Code
		c.errors.Add(1)
		return fc
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != req.SessionEpoch {
		fc.errCode = kerr.InvalidFetchSessionEpoch.Code
		c.errors.Add(1)
		return fc
	}
	if s.usesTopicIDs != (req.Version >= 13) {
		fc.errCode = kerr.FetchSessionTopicIDError.Code
		c.errors.Add(1)
		return fc
	}
	for ti := range req.Topics {
		t := &req.Topics[ti]
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			k := sessionKey(req.Version, t, p.Partition)
			if cp, ok := s.parts[k]; ok {
				cp.updateRequest(p)
			} else {
				s.add(newCachedPartition(k, t, p))
			}
		}
	}
	for _, f := range req.ForgottenTopics {
		for _, part := range f.Partitions {
			if req.Version >= 13 {
				s.remove(fetchSessionKey{id: f.TopicID, partition: part})
			} else {
				s.remove(fetchSessionKey{topic: f.Topic, partition: part})
			}
		}
	}
	if len(s.order) == 0 {
		// Nothing left to fetch: the session closes and the request is answered
		// sessionless (SessionlessFetchContext).
		c.removeLocked(s)
		c.full.Add(1)
		return fc
	}
	c.touchLocked(s, nowMs)
	s.epoch = nextFetchSessionEpoch(s.epoch)
	fc.incremental, fc.session = true, s
	fc.topics = fc.topics[:0:0]
	for _, k := range s.order {
		cp := s.parts[k]
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition, p.FetchOffset, p.LogStartOffset, p.PartitionMaxBytes = k.partition, cp.fetchOffset, cp.logStartOffset, cp.maxBytes
		p.CurrentLeaderEpoch, p.LastFetchedEpoch = cp.currentLeaderEpoch, cp.lastFetchedEpoch
		if n := len(fc.topics); n > 0 && fc.topics[n-1].Topic == cp.topic && fc.topics[n-1].TopicID == cp.topicID {
			fc.topics[n-1].Partitions = append(fc.topics[n-1].Partitions, p)
		} else {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = cp.topic, cp.topicID
			t.Partitions = append(t.Partitions, p)
			fc.topics = append(fc.topics, t)
		}
		fc.keys = append(fc.keys, k)
	}
	c.incremental.Add(1)
	return fc
}

// finish sets the response's session id, creates the session of a full fetch, and for
// an incremental fetch drops the partitions without changes, renumbering the zero-copy
// parts (z may be nil) that point into resp.
func (fc *fetchContext) finish(resp *kmsg.FetchResponse, z *zeroCopyFetch, nowMs int64) {
	hasRecords := map[[2]int]bool{}
	if z != nil {
		for _, p := range z.parts {
			hasRecords[[2]int{p.ti, p.pi}] = true
		}
	}
	switch {
	case fc.create:
		var parts []*cachedPartition
		for ti := range fc.topics {
			t := &fc.topics[ti]
			for pi := range t.Partitions {
				p := &t.Partitions[pi]
				cp := newCachedPartition(sessionKey(fc.version, t, p.Partition), t, p)
				if ti < len(resp.Topics) && pi < len(resp.Topics[ti].Partitions) {
					cp.maybeUpdateResponse(&resp.Topics[ti].Partitions[pi], false, true)
				}
				parts = append(parts, cp)
			}
		}
		if s := fc.cache.maybeCreate(nowMs, fc.privileged, fc.version >= 13, parts); s != nil {
			resp.SessionID = s.id
		}
	case fc.incremental:
		s := fc.session
		s.mu.Lock()
		defer s.mu.Unlock()
		resp.SessionID = s.id
		var (
			answered []fetchSessionKey
			keep     = map[fetchSessionKey]bool{}
			newParts []zeroCopyPart
			oldParts map[[2]int]zeroCopyPart
			i        int
		)
		if z != nil {
			oldParts = make(map[[2]int]zeroCopyPart, len(z.parts))
			for _, p := range z.parts {
				oldParts[[2]int{p.ti, p.pi}] = p
			}
		}
		topics := resp.Topics[:0]
		for ti := range resp.Topics {
			t := resp.Topics[ti]
			parts := t.Partitions[:0]
			for pi := range t.Partitions {
				p := t.Partitions[pi]
				k := fc.keys[i]
				i++
				cp := s.parts[k]
				if cp == nil { // forgotten by a concurrent request
					continue
				}
				if !cp.maybeUpdateResponse(&p, hasRecords[[2]int{ti, pi}], true) {
					continue
				}
				if zp, ok := oldParts[[2]int{ti, pi}]; ok {
					zp.ti, zp.pi = len(topics), len(parts)
					newParts = append(newParts, zp)
				}
				parts = append(parts, p)
				answered = append(answered, k)
				keep[k] = true
			}
			if len(parts) > 0 {
				t.Partitions = parts
				topics = append(topics, t)
			}
		}
		resp.Topics = topics
		if z != nil {
			clear(z.parts)
			z.parts = append(z.parts[:0], newParts...)
		}
		// Fairness: answered partitions go to the end of the session's order.
		if len(answered) > 0 {
			order := make([]fetchSessionKey, 0, len(s.order))
			for _, k := range s.order {
				if !keep[k] {
					order = append(order, k)
				}
			}
			s.order = append(order, answered...)
		}
	}
}

// inconsistentTopicID is ReplicaManager.hasConsistentTopicId negated, for v13+: the
// topic id of the request (or session) is set and differs from the id of the partition
// hosted here. A partition not hosted is left to the read, which reports why.
func (a *APIs) inconsistentTopicID(tp logstore.TopicPartition, id [16]byte) bool {
	if id == ([16]byte{}) || a.Replicas == nil {
		return false
	}
	p, err := a.Replicas.Partition(tp)
	if err != nil {
		return false
	}
	hosted := p.topicIDSnapshot()
	return hosted != [16]byte{} && hosted != id
}

// fetchSessions returns a's session cache, sized by max.incremental.fetch.session.cache.slots
// and min.incremental.fetch.session.eviction.ms.
func (a *APIs) fetchSessions() *FetchSessionCache {
	a.services.mu.Lock()
	defer a.services.mu.Unlock()
	if a.services.fetchSessions != nil {
		return a.services.fetchSessions
	}
	slots, evictionMs := defaultFetchSessionSlots, int64(defaultFetchSessionEvictionMs)
	if a.Config != nil {
		if v, ok := a.Config.Props["max.incremental.fetch.session.cache.slots"]; ok {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				slots = n
			}
		}
		if v, ok := a.Config.Props["min.incremental.fetch.session.eviction.ms"]; ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
				evictionMs = n
			}
		}
	}
	a.services.fetchSessions = NewFetchSessionCache(slots, evictionMs)
	return a.services.fetchSessions
}

func (a *APIs) nowMs() int64 { return a.now().UnixNano() / int64(time.Millisecond) }
