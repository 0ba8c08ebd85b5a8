package group

// manager.go mirrors GroupMetadataManager.scala: the groups and offsets cache of the
// offsets partitions this broker leads, their records in __consumer_offsets (storeGroup,
// storeOffsets, cleanupGroupMetadata), loading on election and unloading on resignation,
// and offset expiry (offsets.retention.minutes).

import (
	"context"
	"errors"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
)

// appendAsync appends recs to g's offsets partition with acks=-1 in a tracked goroutine and
// calls done under g's lock with the append's base offset (-1 on error). The caller holds g.mu.
func (c *Coordinator) appendAsync(g *Group, recs []kv, done func(offset int64, err *kerr.Error)) {
	batch, err := buildBatch(c.now(), recs)
	if err != nil {
		done(-1, kerr.UnknownServerError)
		return
	}
	c.appendBatchAsync(g, func(ctx context.Context, p int32) (int64, error) {
		return c.log.Append(ctx, p, batch, true, c.cfg.OffsetCommitTimeout)
	}, done)
}

// appendBatchAsync runs appendFn for g's offsets partition in a tracked goroutine and calls
// done under g's lock (Kafka's appendForGroup with its putCacheCallback). The caller holds g.mu.
func (c *Coordinator) appendBatchAsync(g *Group, appendFn func(ctx context.Context, p int32) (int64, error), done func(offset int64, err *kerr.Error)) {
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
		off, aerr := appendFn(c.ctx, p)
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
// A record that cannot be encoded (ErrFieldTooLong: a group id, member id, instance id or
// protocol over 32767 bytes) is returned at once and done is never called: Kafka's
// serializer throws there, before the append, and the request that got this far fails with
// UNKNOWN_SERVER_ERROR, leaving the group as it was at that point.
func (c *Coordinator) storeGroup(g *Group, assignment map[string][]byte, done func(*kerr.Error)) error {
	key, keyErr := encodeGroupMetadataKey(g.ID)
	value, valErr := encodeGroupMetadataValue(g.groupMetadataValue(assignment))
	if err := errors.Join(keyErr, valErr); err != nil {
		return err
	}
	c.appendAsync(g, []kv{{key, value}}, func(_ int64, err *kerr.Error) {
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
	return nil
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
	if err := c.validateOffsetCommit(g, req.GenerationID, req.MemberID, req.GroupInstanceID, false); err != nil {
		cb(all(req.Offsets, err))
		return
	}
	switch g.state {
	case Empty:
		c.storeOffsets(g, req.Offsets, nil, cb)
	case Stable, PreparingRebalance:
		// Allowed while preparing: the heartbeat tells the member about the rebalance.
		c.completeAndScheduleNextHeartbeatExpiration(g, g.members[req.MemberID])
		c.storeOffsets(g, req.Offsets, nil, cb)
	default: // CompletingRebalance
		cb(all(req.Offsets, kerr.RebalanceInProgress))
	}
}

// validateOffsetCommit is GroupCoordinator.validateOffsetCommit (Kafka 3.7): a commit
// without a generation goes to an Empty group; a member's commit must name a current member
// of the current generation; anonymous commits to a group with members are refused, except
// transactional ones (TxnOffsetCommit before v3 carries no member or generation).
func (c *Coordinator) validateOffsetCommit(g *Group, generationID int32, memberID string, instanceID *string, transactional bool) *kerr.Error {
	switch {
	case g.is(Dead):
		return kerr.CoordinatorNotAvailable
	case generationID < 0 && g.is(Empty):
		return nil
	case generationID >= 0 || memberID != "" || instanceID != nil:
		if err := g.validateCurrentMember(memberID, instanceID); err != nil {
			return err
		}
		if generationID != g.generationID {
			return kerr.IllegalGeneration
		}
	case !transactional && !g.is(Empty):
		return kerr.UnknownMemberID
	}
	return nil
}

// txnProducer is the producer of a transactional offset commit.
type txnProducer struct {
	producerID    int64
	producerEpoch int16
	guard         VerificationGuard
}

// storeOffsets is GroupMetadataManager.storeOffsets: offset records appended with acks=-1;
// the cache changes only once the append succeeded, so OffsetFetch never sees an offset
// that is not replicated. With txn set (TxnOffsetCommit) the records form a transactional
// batch of the producer and the offsets stay pending in the group until the producer's
// marker (ScheduleHandleTxnCompletion). The caller holds g.mu.
func (c *Coordinator) storeOffsets(g *Group, offsets map[TopicPartition]OffsetAndMetadata, txn *txnProducer, cb func(map[TopicPartition]*kerr.Error)) {
	if g.receivedConsumerOffsetCommits && g.receivedTxnOffsetCommits {
		c.logger.WithFields(logrus.Fields{"group": g.ID, "leader": g.leaderOrEmpty()}).
			Warn("group has received offset commits from consumers as well as transactional producers; mixing both types of offset commits will generally result in surprises and should be avoided")
	}
	out := make(map[TopicPartition]*kerr.Error, len(offsets))
	var recs []kv
	var valid []TopicPartition
	filtered := make(map[TopicPartition]OffsetAndMetadata, len(offsets))
	for tp, om := range offsets {
		if len(om.Metadata) > c.cfg.OffsetMetadataMaxBytes {
			out[tp] = kerr.OffsetMetadataTooLarge
			continue
		}
		key, keyErr := encodeOffsetCommitKey(g.ID, tp)
		value, valErr := encodeOffsetCommitValue(om)
		if err := errors.Join(keyErr, valErr); err != nil {
			// GroupMetadataManager.generateOffsetRecords throws from the serializer before
			// anything is pending; KafkaApis answers the whole request with the error response
			// of the exception: UNKNOWN_SERVER_ERROR for every partition.
			c.logger.WithError(err).WithField("group_bytes", len(g.ID)).Debug("offset commit record cannot be serialized")
			cb(all(offsets, kerr.UnknownServerError))
			return
		}
		valid = append(valid, tp)
		filtered[tp] = om
		recs = append(recs, kv{key, value})
	}
	if len(valid) == 0 {
		cb(out)
		return
	}
	var batch []byte
	var err error
	if txn == nil {
		batch, err = buildBatch(c.now(), recs)
	} else {
		batch, err = buildTxnBatch(c.now(), recs, txn.producerID, txn.producerEpoch)
	}
	if err != nil {
		for _, tp := range valid {
			out[tp] = kerr.UnknownServerError
		}
		cb(out)
		return
	}
	var appendFn func(ctx context.Context, p int32) (int64, error)
	if txn == nil {
		g.receivedConsumerOffsetCommits = true
		for _, tp := range valid {
			g.pendingOffsetCommits[tp]++
		}
		appendFn = func(ctx context.Context, p int32) (int64, error) {
			return c.log.Append(ctx, p, batch, true, c.cfg.OffsetCommitTimeout)
		}
	} else {
		c.addProducerGroup(txn.producerID, g.ID)
		g.prepareTxnOffsetCommit(txn.producerID, filtered)
		appendFn = func(ctx context.Context, p int32) (int64, error) {
			return c.log.AppendTransactional(ctx, p, batch, txn.guard, c.cfg.OffsetCommitTimeout)
		}
	}
	c.appendBatchAsync(g, appendFn, func(off int64, err *kerr.Error) {
		if txn == nil {
			for _, tp := range valid {
				if g.pendingOffsetCommits[tp]--; g.pendingOffsetCommits[tp] <= 0 {
					delete(g.pendingOffsetCommits, tp)
				}
				if err == nil && !g.is(Dead) {
					// A later append may have completed first: keep the newest record.
					cr := commitRecord{appendedOffset: off, om: filtered[tp]}
					if cur, ok := g.offsets[tp]; !ok || cur.olderThan(cr) {
						g.offsets[tp] = cr
					}
				}
			}
		} else if !g.is(Dead) {
			for _, tp := range valid {
				if err == nil {
					g.onTxnOffsetCommitAppend(txn.producerID, tp, commitRecord{appendedOffset: off, om: filtered[tp]})
				} else {
					g.failPendingTxnOffsetCommit(txn.producerID, tp)
				}
			}
			if _, ok := g.pendingTxnOffsetCommits[txn.producerID]; !ok {
				c.removeProducerGroup(txn.producerID, g.ID)
			}
		}
		err = maybeConvertOffsetCommitError(err)
		for _, tp := range valid {
			out[tp] = err
		}
		cb(out)
	})
}

// maybeConvertOffsetCommitError is GroupMetadataManager.maybeConvertOffsetCommitError: the
// append's (or the transaction verification's) error as a commit answers it.
func maybeConvertOffsetCommitError(err *kerr.Error) *kerr.Error {
	switch err {
	case kerr.NetworkException:
		// A verification that could not reach the transaction coordinator: a retriable
		// error that older clients retry without looking the coordinator up again.
		return kerr.CoordinatorLoadInProgress
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend:
		return kerr.CoordinatorNotAvailable
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return kerr.NotCoordinator
	case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
		return kerr.InvalidCommitOffsetSize
	}
	return err
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
		if requireStable && g.hasPendingOffsetCommitsForTopicPartition(tp) {
			// OffsetFetch v7+ require_stable (KIP-447): the partition's offset may change when
			// a transaction ends or a commit lands; the consumer retries.
			out[i].Err = kerr.UnstableOffsetCommit
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
			return g.removeOffsets(eligible)
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
		// A key that cannot be encoded (a group id over 32767 bytes) has no record to delete:
		// none could be written. Kafka's serializer throws out of the cleanup there, leaving
		// the remaining groups for the next run; here the tombstone is skipped.
		var recs []kv
		for _, tp := range removed {
			if key, err := encodeOffsetCommitKey(g.ID, tp); err == nil {
				recs = append(recs, kv{key, nil})
			}
		}
		if dead {
			c.removeGroupFromCache(g)
			// Generation 0 means the group only stored offsets: it has no group record.
			if key, err := encodeGroupMetadataKey(g.ID); gen > 0 && err == nil {
				recs = append(recs, kv{key, nil})
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
	delete(c.mu.deferredTxnCompletions, p)
	var groups []*Group
	for id, g := range c.mu.groups {
		if c.PartitionFor(id) == p {
			groups = append(groups, g)
			delete(c.mu.groups, id)
			c.removeGroupFromAllProducersLocked(id)
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

// groupTP names one group's offset of one partition while loading.
type groupTP struct {
	group string
	tp    TopicPartition
}

// loadPartition is GroupMetadataManager.doLoadGroupsAndOffsets: read the partition from
// its log start to its log end; the last record per key wins and a tombstone deletes.
// Offsets in transactional batches are pending per producer until the producer's control
// batch: COMMIT applies them (unless the partition's committed offset was appended later),
// ABORT drops them, and those without a marker at the end stay pending in their groups.
func (c *Coordinator) loadPartition(p int32, epoch int32) {
	started := c.now()
	log := c.logger.WithFields(logrus.Fields{"partition": p, "leader_epoch": epoch})
	offsets := map[string]map[TopicPartition]commitRecord{}
	pending := map[int64]map[groupTP]commitRecord{}
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
		next, err = forEachBatch(raw, func(b recordbatch.Batch) error {
			pid := b.ProducerID()
			if b.Control() {
				var typ int16
				var seen, valid bool
				if ferr := b.ForEachRecord(false, func(r *recordbatch.Record) error {
					if !seen {
						seen = true
						typ, valid = controlRecordType(r.Key)
					}
					return nil
				}); ferr != nil {
					return ferr
				}
				if !seen {
					return nil
				}
				if !valid {
					log.WithFields(logrus.Fields{"offset": b.BaseOffset(), "producer_id": pid}).Warn("skipping a control record with a malformed key in the offsets topic")
				}
				if valid && typ == controlCommit {
					for gtp, cr := range pending[pid] {
						if offsets[gtp.group] == nil {
							offsets[gtp.group] = map[TopicPartition]commitRecord{}
						}
						if cur, ok := offsets[gtp.group][gtp.tp]; !ok || cur.olderThan(cr) {
							offsets[gtp.group][gtp.tp] = cr
						}
					}
				}
				delete(pending, pid)
				return nil
			}
			txn := b.Transactional()
			batchBase := int64(-1) // the offset of the batch's first record, as Kafka records it
			return b.ForEachRecord(false, func(rec *recordbatch.Record) error {
				offset := b.BaseOffset() + int64(rec.OffsetDelta)
				if batchBase < 0 {
					batchBase = offset
				}
				r, derr := DecodeRecord(rec.Key, rec.Value)
				if derr != nil {
					log.WithError(derr).WithField("offset", offset).Warn("skipping an undecodable record in the offsets topic")
					return nil
				}
				if r.IsOffset {
					gtp := groupTP{r.Group, r.TP}
					if txn {
						if pending[pid] == nil {
							pending[pid] = map[groupTP]commitRecord{}
						}
						if r.Offset == nil {
							delete(pending[pid], gtp)
						} else {
							pending[pid][gtp] = commitRecord{appendedOffset: batchBase, om: *r.Offset}
						}
						return nil
					}
					if r.Offset == nil {
						delete(offsets[r.Group], r.TP)
						return nil
					}
					if offsets[r.Group] == nil {
						offsets[r.Group] = map[TopicPartition]commitRecord{}
					}
					offsets[r.Group][r.TP] = commitRecord{appendedOffset: batchBase, om: *r.Offset}
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
		})
		if next <= off {
			break // no progress: nothing more readable
		}
		off = next
		if err == nil {
			// The log end moves while loading (Kafka re-reads it every round): read what
			// was appended meanwhile too, markers included.
			var lerr error
			if _, end, lerr = c.log.Offsets(p); lerr != nil {
				err = lerr
			}
		}
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
	// Transactions still open at the log end: their offsets wait in their groups, which
	// exist (Empty) even with nothing else stored.
	openGroups := map[int64][]string{}
	for pid, po := range pending {
		for gtp, cr := range po {
			g, ok := loaded[gtp.group]
			if !ok {
				g = newGroup(gtp.group, Empty, now)
				loaded[gtp.group] = g
			}
			m := g.pendingTxnOffsetCommits[pid]
			if m == nil {
				m = map[TopicPartition]commitRecord{}
				g.pendingTxnOffsetCommits[pid] = m
				openGroups[pid] = append(openGroups[pid], gtp.group)
			}
			m[gtp.tp] = cr
		}
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
	for pid, ids := range openGroups {
		for _, id := range ids {
			c.addProducerGroupLocked(pid, id)
		}
	}
	delete(c.mu.loading, p)
	deferred := c.mu.deferredTxnCompletions[p]
	delete(c.mu.deferredTxnCompletions, p)
	c.mu.Unlock()
	c.replayTxnCompletions(p, deferred)
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
