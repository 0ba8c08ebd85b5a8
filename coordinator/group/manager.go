package group

// manager.go mirrors GroupMetadataManager.scala: the groups and offsets cache of the
// offsets partitions this broker leads, their records in __consumer_offsets (storeGroup,
// storeOffsets, cleanupGroupMetadata), loading on election and unloading on resignation,
// and offset expiry (offsets.retention.minutes).

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// appendAsync appends recs to g's offsets partition in a tracked goroutine and calls done
// under g's lock with the append's base offset (-1 on error). The caller holds g.mu.
func (c *Coordinator) appendAsync(g *Group, recs []kv, done func(offset int64, err *kerr.Error)) {
	batch, err := buildBatch(c.now(), recs)
	if err != nil {
		done(-1, kerr.UnknownServerError)
		return
	}
	c.mu.Lock()
	active := c.mu.active
	if active {
		c.wg.Add(1)
	}
	c.mu.Unlock()
	if !active {
		done(-1, kerr.NotCoordinator)
		return
	}
	p := c.PartitionFor(g.ID)
	go func() {
		defer c.wg.Done()
		off, aerr := c.log.Append(c.ctx, p, batch, true, c.cfg.OffsetCommitTimeout)
		g.mu.Lock()
		defer g.mu.Unlock()
		if aerr != nil {
			c.logger.WithError(aerr).WithFields(logrus.Fields{"group": g.ID, "partition": p}).Debug("append to the offsets topic failed")
			done(-1, kafkaError(aerr))
			return
		}
		done(off, nil)
	}()
}

// storeGroup is GroupMetadataManager.storeGroup: the group record with assignment, acks=-1.
func (c *Coordinator) storeGroup(g *Group, assignment map[string][]byte, done func(*kerr.Error)) {
	value := GroupMetadataValue(g.groupMetadataValue(assignment))
	c.appendAsync(g, []kv{{GroupMetadataKey(g.ID), value}}, func(_ int64, err *kerr.Error) {
		switch err {
		case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
			err = kerr.CoordinatorNotAvailable
		case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
			err = kerr.NotCoordinator
		case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
			err = kerr.UnknownServerError
		}
		done(err)
	})
}

// CommitRequest holds OffsetCommit's parameters for one group.
type CommitRequest struct {
	GroupID         string
	MemberID        string
	GroupInstanceID *string
	GenerationID    int32
	Offsets         map[TopicPartition]OffsetAndMetadata
}

// CommitOffsets blocks until the commit is appended with acks=all (or failed).
func (c *Coordinator) CommitOffsets(ctx context.Context, req CommitRequest) map[TopicPartition]*kerr.Error {
	ch := make(chan map[TopicPartition]*kerr.Error, 1)
	c.HandleCommitOffsets(req, func(r map[TopicPartition]*kerr.Error) { ch <- r })
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return all(req.Offsets, kerr.RequestTimedOut)
	}
}

func all(offsets map[TopicPartition]OffsetAndMetadata, err *kerr.Error) map[TopicPartition]*kerr.Error {
	out := make(map[TopicPartition]*kerr.Error, len(offsets))
	for tp := range offsets {
		out[tp] = err
	}
	return out
}

// HandleCommitOffsets is GroupCoordinator.handleCommitOffsets.
func (c *Coordinator) HandleCommitOffsets(req CommitRequest, cb func(map[TopicPartition]*kerr.Error)) {
	if err := c.validateGroupStatus(req.GroupID, apiCommit); err != nil {
		cb(all(req.Offsets, err))
		return
	}
	g := c.getGroup(req.GroupID)
	if g == nil {
		if req.GenerationID >= 0 {
			// A commit from an older generation of a group that no longer exists.
			cb(all(req.Offsets, kerr.IllegalGeneration))
			return
		}
		// Not using Kafka for group management: a standalone (assign) consumer.
		g = c.getOrMaybeCreateGroup(req.GroupID, true)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := c.validateOffsetCommit(g, req); err != nil {
		cb(all(req.Offsets, err))
		return
	}
	switch g.state {
	case Empty:
		c.storeOffsets(g, req.Offsets, cb)
	case Stable, PreparingRebalance:
		// Allowed while preparing: the heartbeat tells the member about the rebalance.
		c.completeAndScheduleNextHeartbeatExpiration(g, g.members[req.MemberID])
		c.storeOffsets(g, req.Offsets, cb)
	default: // CompletingRebalance
		cb(all(req.Offsets, kerr.RebalanceInProgress))
	}
}

// validateOffsetCommit is GroupCoordinator.validateOffsetCommit.
func (c *Coordinator) validateOffsetCommit(g *Group, req CommitRequest) *kerr.Error {
	switch {
	case g.is(Dead):
		return kerr.CoordinatorNotAvailable
	case req.GenerationID >= 0 || req.MemberID != "" || req.GroupInstanceID != nil:
		if err := g.validateCurrentMember(req.MemberID, req.GroupInstanceID); err != nil {
			return err
		}
		if req.GenerationID != g.generationID {
			return kerr.IllegalGeneration
		}
	case !g.is(Empty):
		// Only members may commit to a group that has members.
		return kerr.UnknownMemberID
	}
	return nil
}

// storeOffsets is GroupMetadataManager.storeOffsets: offset records appended with acks=-1;
// the cache changes only once the append succeeded, so OffsetFetch never sees an offset
// that is not replicated.
func (c *Coordinator) storeOffsets(g *Group, offsets map[TopicPartition]OffsetAndMetadata, cb func(map[TopicPartition]*kerr.Error)) {
	out := make(map[TopicPartition]*kerr.Error, len(offsets))
	var recs []kv
	var valid []TopicPartition
	for tp, om := range offsets {
		if len(om.Metadata) > c.cfg.OffsetMetadataMaxBytes {
			out[tp] = kerr.OffsetMetadataTooLarge
			continue
		}
		valid = append(valid, tp)
		recs = append(recs, kv{OffsetCommitKey(g.ID, tp), OffsetCommitValue(om)})
	}
	if len(valid) == 0 {
		cb(out)
		return
	}
	for _, tp := range valid {
		g.pendingOffsetCommits[tp]++
	}
	c.appendAsync(g, recs, func(off int64, err *kerr.Error) {
		for _, tp := range valid {
			if g.pendingOffsetCommits[tp]--; g.pendingOffsetCommits[tp] <= 0 {
				delete(g.pendingOffsetCommits, tp)
			}
			if err == nil && !g.is(Dead) {
				// A later append may have completed first: keep the newest record.
				if cur, ok := g.offsets[tp]; !ok || cur.appendedOffset < off {
					g.offsets[tp] = commitRecord{appendedOffset: off, om: offsets[tp]}
				}
			}
		}
		switch err {
		case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend:
			err = kerr.CoordinatorNotAvailable
		case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
			err = kerr.NotCoordinator
		case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
			err = kerr.InvalidCommitOffsetSize
		}
		for _, tp := range valid {
			out[tp] = err
		}
		cb(out)
	})
}

// FetchedOffset is one partition of an OffsetFetch answer.
type FetchedOffset struct {
	TP          TopicPartition
	Offset      int64 // -1: none
	LeaderEpoch int32 // -1: none
	Metadata    string
	Err         *kerr.Error
}

// FetchOffsets is GroupCoordinator.handleFetchOffsets; tps nil means every partition.
func (c *Coordinator) FetchOffsets(groupID string, tps []TopicPartition, requireStable bool) ([]FetchedOffset, *kerr.Error) {
	if err := c.validateGroupStatus(groupID, apiFetch); err != nil {
		return nil, err
	}
	none := func(tps []TopicPartition) []FetchedOffset {
		out := make([]FetchedOffset, len(tps))
		for i, tp := range tps {
			out[i] = FetchedOffset{TP: tp, Offset: -1, LeaderEpoch: -1}
		}
		return out
	}
	g := c.getGroup(groupID)
	if g == nil {
		return none(tps), nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.is(Dead) {
		return none(tps), nil
	}
	if tps == nil {
		for tp := range g.offsets {
			tps = append(tps, tp)
		}
	}
	out := none(tps)
	for i, tp := range tps {
		if requireStable && g.pendingOffsetCommits[tp] > 0 {
			// Only transactional commits make offsets unstable in Kafka; ours are never
			// visible before they are appended, so this is the same answer.
			continue
		}
		if cr, ok := g.offsets[tp]; ok {
			out[i].Offset, out[i].LeaderEpoch, out[i].Metadata = cr.om.Offset, cr.om.LeaderEpoch, cr.om.Metadata
		}
	}
	return out, nil
}

// DeleteOffsets is GroupCoordinator.handleDeleteOffsets (OffsetDelete).
func (c *Coordinator) DeleteOffsets(ctx context.Context, groupID string, tps []TopicPartition) (*kerr.Error, map[TopicPartition]*kerr.Error) {
	if err := c.validateGroupStatus(groupID, apiOffsetDelete); err != nil {
		return err, nil
	}
	g := c.getGroup(groupID)
	if g == nil {
		return kerr.GroupIDNotFound, nil
	}
	out := map[TopicPartition]*kerr.Error{}
	var eligible []TopicPartition
	g.mu.Lock()
	switch {
	case g.is(Dead):
		g.mu.Unlock()
		return kerr.GroupIDNotFound, nil
	case g.is(Empty):
		eligible = tps
	case g.protocolType != nil && *g.protocolType == "consumer":
		for _, tp := range tps {
			if g.isSubscribedToTopic(tp.Topic) {
				out[tp] = kerr.GroupSubscribedToTopic
			} else {
				eligible = append(eligible, tp)
			}
		}
	default:
		g.mu.Unlock()
		return kerr.NonEmptyGroup, nil
	}
	g.mu.Unlock()
	if len(eligible) > 0 {
		c.cleanupGroupMetadata(ctx, []*Group{g}, func(g *Group) []TopicPartition {
			var removed []TopicPartition
			for _, tp := range eligible {
				if _, ok := g.offsets[tp]; ok {
					removed = append(removed, tp)
				}
			}
			return removed
		})
		for _, tp := range eligible {
			out[tp] = nil
		}
	}
	return nil, out
}

// CleanupGroupMetadata expires offsets by offsets.retention.minutes (the
// offsets.retention.check.interval.ms task).
func (c *Coordinator) CleanupGroupMetadata() int {
	c.mu.Lock()
	groups := make([]*Group, 0, len(c.mu.groups))
	for _, g := range c.mu.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	nowMs := c.now().UnixMilli()
	return c.cleanupGroupMetadata(c.ctx, groups, func(g *Group) []TopicPartition {
		return g.expiredOffsets(nowMs, c.cfg.OffsetsRetention)
	})
}

// cleanupGroupMetadata is GroupMetadataManager.cleanupGroupMetadata: remove the offsets
// selector picks, turn an Empty group without offsets Dead, and append tombstones.
func (c *Coordinator) cleanupGroupMetadata(ctx context.Context, groups []*Group, selector func(*Group) []TopicPartition) int {
	removedTotal := 0
	for _, g := range groups {
		g.mu.Lock()
		removed := selector(g)
		for _, tp := range removed {
			delete(g.offsets, tp)
		}
		if g.is(Empty) && !g.hasOffsets() {
			g.transitionTo(Dead, c.now())
		}
		dead, gen := g.is(Dead), g.generationID
		g.mu.Unlock()
		var recs []kv
		for _, tp := range removed {
			recs = append(recs, kv{OffsetCommitKey(g.ID, tp), nil})
		}
		if dead {
			c.removeGroupFromCache(g)
			// Generation 0 means the group only stored offsets: it has no group record.
			if gen > 0 {
				recs = append(recs, kv{GroupMetadataKey(g.ID), nil})
			}
		}
		removedTotal += len(removed)
		if len(recs) == 0 {
			continue
		}
		batch, err := buildBatch(c.now(), recs)
		if err == nil {
			_, err = c.log.Append(ctx, c.PartitionFor(g.ID), batch, false, c.cfg.OffsetCommitTimeout)
		}
		if err != nil {
			c.logger.WithError(err).WithField("group", g.ID).Warn("failed to append tombstones for expired or deleted group metadata")
		}
		if len(removed) > 0 {
			c.logger.WithFields(logrus.Fields{"group": g.ID, "offsets": len(removed), "dead": dead}).Info("removed group offsets")
		}
	}
	return removedTotal
}

// OnElection is GroupCoordinator.onElection: this broker became leader of offsets partition
// p with leader epoch epoch; its groups load in the background, and requests for them get
// COORDINATOR_LOAD_IN_PROGRESS until they are loaded.
func (c *Coordinator) OnElection(p int32, epoch int32) {
	c.mu.Lock()
	cur, owned := c.mu.owned[p]
	if !c.mu.active || (owned && cur == epoch) {
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	if owned {
		c.OnResignation(p)
	}
	c.mu.Lock()
	if _, again := c.mu.owned[p]; again || !c.mu.active {
		c.mu.Unlock()
		return
	}
	c.mu.owned[p] = epoch
	c.mu.loading[p] = true
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		c.loadPartition(p, epoch)
	}()
}

// OnResignation is GroupCoordinator.onResignation: unload the partition's groups.
func (c *Coordinator) OnResignation(p int32) {
	c.mu.Lock()
	_, owned := c.mu.owned[p]
	delete(c.mu.owned, p)
	delete(c.mu.loading, p)
	var groups []*Group
	for id, g := range c.mu.groups {
		if c.PartitionFor(id) == p {
			groups = append(groups, g)
			delete(c.mu.groups, id)
		}
	}
	c.mu.Unlock()
	for _, g := range groups {
		g.mu.Lock()
		c.onGroupUnloaded(g)
		g.mu.Unlock()
	}
	if owned {
		c.logger.WithFields(logrus.Fields{"partition": p, "groups": len(groups)}).Info("unloaded groups of offsets partition")
	}
}

// onGroupUnloaded is GroupMetadataManager.onGroupUnloaded: waiting joins and syncs learn
// that this broker is no longer the coordinator.
func (c *Coordinator) onGroupUnloaded(g *Group) {
	prev := g.state
	g.transitionTo(Dead, c.now())
	for _, m := range g.allMembers() {
		switch prev {
		case PreparingRebalance:
			g.invokeJoin(m, joinError(m.MemberID, kerr.NotCoordinator))
		case Stable, CompletingRebalance:
			g.invokeSync(m, SyncResult{Err: kerr.NotCoordinator})
		}
		c.timers.cancel(hbKey(g.ID, m.MemberID))
	}
	for id := range g.pendingMembers {
		c.timers.cancel(hbKey(g.ID, id))
	}
	c.timers.cancel(joinKey(g.ID))
	c.timers.cancel(syncKey(g.ID))
}

// loadPartition is GroupMetadataManager.doLoadGroupsAndOffsets: read the partition from
// its log start to its log end; the last record per key wins and a tombstone deletes.
func (c *Coordinator) loadPartition(p int32, epoch int32) {
	started := c.now()
	log := c.logger.WithFields(logrus.Fields{"partition": p, "leader_epoch": epoch})
	offsets := map[string]map[TopicPartition]commitRecord{}
	groups := map[string]*kmsg.GroupMetadataValue{}
	removed := map[string]bool{}
	start, end, err := c.log.Offsets(p)
	for off := start; err == nil && off < end; {
		var raw []byte
		raw, err = c.log.Read(p, off, c.cfg.LoadBufferSize)
		if err != nil {
			break
		}
		var next int64
		next, err = forEachRecord(raw, func(offset int64, key, value []byte) error {
			r, derr := DecodeRecord(key, value)
			if derr != nil {
				log.WithError(derr).WithField("offset", offset).Warn("skipping an undecodable record in the offsets topic")
				return nil
			}
			if r.IsOffset {
				if r.Offset == nil {
					delete(offsets[r.Group], r.TP)
					return nil
				}
				if offsets[r.Group] == nil {
					offsets[r.Group] = map[TopicPartition]commitRecord{}
				}
				offsets[r.Group][r.TP] = commitRecord{appendedOffset: offset, om: *r.Offset}
				return nil
			}
			if r.Value == nil {
				delete(groups, r.Group)
				removed[r.Group] = true
			} else {
				groups[r.Group] = r.Value
				delete(removed, r.Group)
			}
			return nil
		})
		if next <= off {
			break // no progress: nothing more readable
		}
		off = next
	}
	if err != nil {
		log.WithError(err).Error("failed to load the offsets partition; its groups stay unavailable")
	}
	now := c.now()
	loaded := map[string]*Group{}
	for id, v := range groups {
		g := loadGroup(id, v, now)
		loaded[id] = g
	}
	for id, offs := range offsets {
		if len(offs) == 0 {
			continue
		}
		g, ok := loaded[id]
		if !ok {
			g = newGroup(id, Empty, now)
			loaded[id] = g
		}
		g.offsets = offs
	}
	c.mu.Lock()
	if cur, ok := c.mu.owned[p]; !ok || cur != epoch || !c.mu.active {
		c.mu.Unlock()
		log.Info("discarding loaded groups: leadership moved during the load")
		return
	}
	if err != nil {
		c.mu.Unlock()
		return // stays "loading": COORDINATOR_LOAD_IN_PROGRESS until leadership changes
	}
	for id, g := range loaded {
		c.mu.groups[id] = g
	}
	delete(c.mu.loading, p)
	c.mu.Unlock()
	for _, g := range loaded {
		g.mu.Lock()
		for _, m := range g.allMembers() {
			c.completeAndScheduleNextHeartbeatExpiration(g, m)
		}
		g.mu.Unlock()
	}
	log.WithFields(logrus.Fields{"groups": len(loaded), "log_start_offset": start, "log_end_offset": end,
		"took": now.Sub(started).Round(time.Millisecond)}).Info("finished loading offsets and group metadata")
}
