package group

// txn_offsets.go holds the transactional offset commits of GroupCoordinator and
// GroupMetadataManager (Kafka 3.7): TxnOffsetCommit (handleTxnCommitOffsets,
// doTxnCommitOffsets), the producers' open groups (openGroupsForProducer) and the end of a
// transaction (scheduleHandleTxnCompletion / handleTxnCompletion). Loading the pending
// offsets and their markers from __consumer_offsets is in manager.go's loadPartition.
//
// A transactional commit is appended to the group's offsets partition as a transactional
// batch of the producer (its id and epoch, base sequence 0); the offsets stay pending in
// the group, invisible to OffsetFetch, until the transaction coordinator's COMMIT or ABORT
// marker is written to that partition. A committed one then replaces the group's offset
// unless a plain OffsetCommit was appended after it.

import (
	"context"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TxnCommitRequest holds TxnOffsetCommit's parameters (v3 adds the member, the generation
// and the group instance id; older versions send "", -1 and nil).
type TxnCommitRequest struct {
	GroupID         string
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	MemberID        string
	GroupInstanceID *string
	GenerationID    int32
	Offsets         map[TopicPartition]OffsetAndMetadata
}

// TxnCommitOffsets is GroupCoordinator.handleTxnCommitOffsets: it verifies the transaction
// for the group's offsets partition, checks the member (doTxnCommitOffsets) and blocks until
// the transactional batch is appended with acks=all (or failed).
func (c *Coordinator) TxnCommitOffsets(ctx context.Context, req TxnCommitRequest) map[TopicPartition]*kerr.Error {
	if err := c.validateGroupStatus(req.GroupID, apiTxnCommit); err != nil {
		return all(req.Offsets, err)
	}
	// Kafka adds the group before the verification: a transactional producer may commit to
	// a group that has never been used.
	g := c.getOrMaybeCreateGroup(req.GroupID, true)
	guard, verr := c.log.VerifyTransaction(ctx, c.PartitionFor(req.GroupID), req.TransactionalID, req.ProducerID, req.ProducerEpoch)
	if verr != nil {
		c.logger.WithError(verr).WithFields(logrus.Fields{"group": req.GroupID, "transactional_id": req.TransactionalID,
			"producer_id": req.ProducerID}).Debug("transaction verification for a transactional offset commit failed")
		return all(req.Offsets, maybeConvertOffsetCommitError(kafkaError(verr)))
	}
	ch := make(chan map[TopicPartition]*kerr.Error, 1)
	g.mu.Lock()
	if err := c.validateOffsetCommit(g, req.GenerationID, req.MemberID, req.GroupInstanceID, true); err != nil {
		g.mu.Unlock()
		return all(req.Offsets, err)
	}
	c.storeOffsets(g, req.Offsets, &txnProducer{producerID: req.ProducerID, producerEpoch: req.ProducerEpoch, guard: guard},
		func(r map[TopicPartition]*kerr.Error) { ch <- r })
	g.mu.Unlock()
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return all(req.Offsets, kerr.RequestTimedOut)
	}
}

// txnCompletion is one producer's marker written to one offsets partition.
type txnCompletion struct {
	producerID int64
	commit     bool
}

// ScheduleHandleTxnCompletion is GroupCoordinator.scheduleHandleTxnCompletion: the COMMIT
// (commit true) or ABORT marker of producerID has been written to the given
// __consumer_offsets partitions; the pending transactional offsets of the producer's groups
// in those partitions are applied or dropped.
//
// Kafka runs this on its scheduler thread because its caller may hold a group lock. Here it
// runs before returning: the caller (WriteTxnMarkers) must not hold a group's lock, and in
// exchange the offsets are settled before the marker is acknowledged, so the producer's next
// transaction cannot add pending offsets that this marker would then settle. A marker that
// lands in a partition still loading is kept and replayed once the partition's groups are
// loaded (the load may have read the log before the marker).
func (c *Coordinator) ScheduleHandleTxnCompletion(producerID int64, partitions []int32, commit bool) {
	completed := make(map[int32]bool, len(partitions))
	for _, p := range partitions {
		completed[p] = true
	}
	c.mu.Lock()
	for p := range completed {
		if c.mu.loading[p] {
			c.mu.deferredTxnCompletions[p] = append(c.mu.deferredTxnCompletions[p], txnCompletion{producerID: producerID, commit: commit})
		}
	}
	c.mu.Unlock()
	c.handleTxnCompletion(producerID, completed, commit)
}

// handleTxnCompletion is GroupMetadataManager.handleTxnCompletion.
func (c *Coordinator) handleTxnCompletion(producerID int64, partitions map[int32]bool, commit bool) {
	for _, id := range c.groupsBelongingToPartitions(producerID, partitions) {
		g := c.getGroup(id)
		if g == nil {
			// Deleted, or unloaded meanwhile; the producer's entry goes either way (Kafka
			// keeps it for a deleted group until the broker restarts).
			c.removeProducerGroup(producerID, id)
			c.logger.WithFields(logrus.Fields{"group": id, "producer_id": producerID}).
				Info("group moved away after the transaction marker was written but before the cache was updated; the new coordinator loads it")
			continue
		}
		g.mu.Lock()
		if g.is(Dead) {
			c.removeProducerGroup(producerID, id)
		} else {
			applied, unappended := g.completePendingTxnOffsetCommit(producerID, commit)
			c.removeProducerGroup(producerID, id)
			log := c.logger.WithFields(logrus.Fields{"group": id, "producer_id": producerID, "commit": commit, "applied": applied})
			if unappended > 0 {
				log.WithField("unappended", unappended).Warn("transaction marker for offsets whose records were not appended; they are skipped")
			} else {
				log.Debug("completed pending transactional offset commits")
			}
		}
		g.mu.Unlock()
	}
}

// replayTxnCompletions settles the markers that landed in p while it loaded.
func (c *Coordinator) replayTxnCompletions(p int32, deferred []txnCompletion) {
	for _, tc := range deferred {
		c.handleTxnCompletion(tc.producerID, map[int32]bool{p: true}, tc.commit)
	}
}

// addProducerGroup records that groupID holds pending offsets of producerID.
func (c *Coordinator) addProducerGroup(producerID int64, groupID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addProducerGroupLocked(producerID, groupID)
}

func (c *Coordinator) addProducerGroupLocked(producerID int64, groupID string) {
	gs := c.mu.openGroupsForProducer[producerID]
	if gs == nil {
		gs = map[string]bool{}
		c.mu.openGroupsForProducer[producerID] = gs
	}
	gs[groupID] = true
}

func (c *Coordinator) removeProducerGroup(producerID int64, groupID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gs := c.mu.openGroupsForProducer[producerID]; gs != nil {
		delete(gs, groupID)
		if len(gs) == 0 {
			delete(c.mu.openGroupsForProducer, producerID)
		}
	}
}

// groupsBelongingToPartitions lists the producer's open groups whose offsets partition is
// in partitions.
func (c *Coordinator) groupsBelongingToPartitions(producerID int64, partitions map[int32]bool) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for id := range c.mu.openGroupsForProducer[producerID] {
		if partitions[c.PartitionFor(id)] {
			out = append(out, id)
		}
	}
	return out
}

// removeGroupFromAllProducersLocked forgets an unloaded group. The caller holds c.mu.
func (c *Coordinator) removeGroupFromAllProducersLocked(groupID string) {
	for pid, gs := range c.mu.openGroupsForProducer {
		delete(gs, groupID)
		if len(gs) == 0 {
			delete(c.mu.openGroupsForProducer, pid)
		}
	}
}

// pendingTxnProducers lists the producers with pending transactional offsets in groupID
// (GroupMetadata.activeProducers).
func (c *Coordinator) pendingTxnProducers(groupID string) []int64 {
	g := c.getGroup(groupID)
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]int64, 0, len(g.pendingTxnOffsetCommits))
	for pid := range g.pendingTxnOffsetCommits {
		out = append(out, pid)
	}
	return out
}
