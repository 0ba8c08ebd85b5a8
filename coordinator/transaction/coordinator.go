package transaction

// coordinator.go mirrors TransactionCoordinator.scala (Kafka 3.7): InitProducerId,
// AddPartitionsToTxn (and its v4 verify-only form), EndTxn, DescribeTransactions,
// ListTransactions, the election/resignation hooks, and the timed-out transaction abort.
// Handlers block until their transition is durable (acks=-1) and then answer; marker sending
// and completion continue in the background.

import (
	"context"
	"errors"
	"sort"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TransactionCoordinator is Kafka's TransactionCoordinator. It is safe for concurrent use.
type TransactionCoordinator struct {
	cfg     Config
	logger  *logrus.Entry
	pids    ProducerIDGenerator
	run     *runner
	state   *TransactionStateManager
	markers *TransactionMarkerChannelManager
	active  atomic.Bool
	started atomic.Bool
}

func (c *Config) defaults() {
	if c.NumPartitions <= 0 {
		c.NumPartitions = 50
	}
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = 15 * time.Minute
	}
	if c.TransactionalIDExpiration <= 0 {
		c.TransactionalIDExpiration = 7 * 24 * time.Hour
	}
	if c.AbortTimedOutInterval <= 0 {
		c.AbortTimedOutInterval = 10 * time.Second
	}
	if c.RemoveExpiredInterval <= 0 {
		c.RemoveExpiredInterval = time.Hour
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.LoadBufferSize <= 0 {
		c.LoadBufferSize = 5 << 20
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
}

// New returns a coordinator owning no partition; Start runs its background work.
func New(cfg Config, log Log, pids ProducerIDGenerator, markers MarkerSender) *TransactionCoordinator {
	cfg.defaults()
	logger := cfg.Logger.WithField("broker", cfg.BrokerID)
	run := newRunner()
	state := newTransactionStateManager(cfg, log, run, logger)
	return &TransactionCoordinator{cfg: cfg, logger: logger.WithField("component", "transaction.coordinator"), pids: pids, run: run,
		state: state, markers: newTransactionMarkerChannelManager(cfg, markers, state, run, logger)}
}

// Start starts the marker send loop and the two sweeps (timed-out transactions every
// transaction.abort.timed.out.transaction.cleanup.interval.ms, expired transactional ids every
// transaction.remove.expired.transaction.cleanup.interval.ms).
func (c *TransactionCoordinator) Start() {
	if c.started.Swap(true) {
		return
	}
	c.run.goLoop(c.markers.loop)
	c.run.goLoop(func(ctx context.Context) {
		abort := time.NewTicker(c.cfg.AbortTimedOutInterval)
		expire := time.NewTicker(c.cfg.RemoveExpiredInterval)
		defer abort.Stop()
		defer expire.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-abort.C:
				c.abortTimedOutTransactions()
			case <-expire.C:
				c.state.removeExpiredTransactionalIds(ctx)
			}
		}
	})
	c.active.Store(true)
	c.logger.Info("transaction coordinator started")
}

// Shutdown stops every goroutine the coordinator started and waits for them; requests in
// flight end with NOT_COORDINATOR.
func (c *TransactionCoordinator) Shutdown() {
	c.active.Store(false)
	c.state.shuttingDown.Store(true)
	c.run.close()
	c.state.shutdown()
	c.markers.shutdown()
	c.logger.Info("transaction coordinator shut down")
}

// PartitionFor returns the __transaction_state partition of transactionalID.
func (c *TransactionCoordinator) PartitionFor(transactionalID string) int32 {
	return c.state.partitionFor(transactionalID)
}

// OnElection is TransactionCoordinator.onElection: this broker leads partition at
// coordinatorEpoch (its leader epoch). The partition loads in the background; then
// transactions found in PrepareCommit/PrepareAbort get their markers sent again.
func (c *TransactionCoordinator) OnElection(partition int32, coordinatorEpoch int32) {
	// The broker may repeat a LeaderAndIsr for an epoch it already applied; reloading would
	// throw away transitions in flight, so a repeat is ignored.
	if epoch, _ := c.state.ownsPartition(partition); epoch == coordinatorEpoch {
		return
	}
	c.logger.WithFields(logrus.Fields{"partition": partition, "coordinator_epoch": coordinatorEpoch}).Info("elected as the transaction coordinator for partition")
	// Start from a clean slate: whatever an earlier unload left behind goes.
	c.markers.removeMarkersForTxnTopicPartition(partition)
	c.state.loadTransactionsForTxnTopicPartition(partition, coordinatorEpoch, c.markers.addTxnMarkersToSend)
}

// OnResignation is TransactionCoordinator.onResignation; coordinatorEpoch is nil when the
// broker resigns on StopReplica without an epoch.
func (c *TransactionCoordinator) OnResignation(partition int32, coordinatorEpoch *int32) {
	f := logrus.Fields{"partition": partition}
	if coordinatorEpoch != nil {
		f["coordinator_epoch"] = *coordinatorEpoch
	}
	c.logger.WithFields(f).Info("resigned as the transaction coordinator for partition")
	c.state.removeTransactionsForTxnTopicPartition(partition, coordinatorEpoch)
	c.markers.removeMarkersForTxnTopicPartition(partition)
}

func (c *TransactionCoordinator) nowMs() int64 { return c.cfg.Clock().UnixMilli() }

// illegal logs a broken invariant (Kafka throws IllegalStateException; the request gets
// UNKNOWN_SERVER_ERROR).
func (c *TransactionCoordinator) illegal(transactionalID string, err error) *kerr.Error {
	c.logger.WithError(err).WithField("transactional_id", transactionalID).Error("illegal transaction state")
	return kerr.UnknownServerError
}

// HandleInitProducerID is handleInitProducerId for a transactional id (the glue handles the
// idempotent case without one). expectedPID/expectedEpoch are KIP-360's producerId and
// producerEpoch of the request; -1/-1 means none.
func (c *TransactionCoordinator) HandleInitProducerID(ctx context.Context, transactionalID string, txnTimeoutMs int32, expectedPID int64, expectedEpoch int16) (producerID int64, epoch int16, errCode int16) {
	fail := func(e *kerr.Error) (int64, int16, int16) { return noProducerID, noProducerEpoch, e.Code }
	if transactionalID == "" {
		return fail(kerr.InvalidRequest)
	}
	if !c.state.validateTransactionTimeoutMs(txnTimeoutMs) {
		return fail(kerr.InvalidTransactionTimeout)
	}
	type pidAndEpoch struct {
		pid   int64
		epoch int16
	}
	var expected *pidAndEpoch
	if expectedPID != noProducerID || expectedEpoch != noProducerEpoch {
		expected = &pidAndEpoch{expectedPID, expectedEpoch}
	}

	cur, e := c.state.getTransactionState(transactionalID)
	if e != nil {
		return fail(e)
	}
	if len(transactionalID) > maxKeyStringLen {
		// TransactionLogKey's int16 length cannot carry it: Kafka's serializer throws when
		// the transition is appended (the client sees UNKNOWN_SERVER_ERROR). Refused here,
		// before the id enters the cache with a pending transition.
		return fail(kerr.UnknownServerError)
	}
	if cur == nil {
		pid, err := c.pids.GenerateProducerID()
		if err != nil {
			return fail(kafkaError(err))
		}
		created := newTransactionMetadata(transactionalID, pid, noProducerID, noProducerEpoch, noProducerEpoch, txnTimeoutMs, Empty, -1, c.nowMs())
		if cur, e = c.state.putTransactionStateIfNotExists(created); e != nil {
			return fail(e)
		}
	}
	coordinatorEpoch, txn := cur.coordinatorEpoch, cur.txn

	// prepareInitProducerIdTransit. A new producer id is generated without holding the
	// metadata lock (it may go to ZooKeeper); the decision is then re-made under the lock.
	newPID := noProducerID
	var transit TxnTransitMetadata
	for {
		needPID := false
		var result *kerr.Error
		txn.mu.Lock()
		isValidProducerID := func(exp *pidAndEpoch) bool {
			// Accept: a just-created id (recovering from UNKNOWN_PRODUCER_ID); the current
			// producer id; or the previous one with an exhausted epoch (a retry of a rotation
			// whose answer was lost).
			return txn.producerEpoch == noProducerEpoch || exp.pid == txn.producerID ||
				(exp.pid == txn.lastProducerID && isEpochExhausted(exp.epoch))
		}
		switch {
		case txn.hasPendingState:
			result = kerr.ConcurrentTransactions
		case expected != nil && !isValidProducerID(expected):
			result = kerr.ProducerFenced
		default:
			switch txn.state {
			case PrepareAbort, PrepareCommit:
				result = kerr.ConcurrentTransactions
			case CompleteAbort, CompleteCommit, Empty:
				if isEpochExhausted(txn.producerEpoch) && (expected == nil || expected.epoch == txn.producerEpoch) {
					if newPID == noProducerID {
						needPID = true
						break
					}
					t, err := txn.prepareProducerIdRotation(newPID, txnTimeoutMs, c.nowMs(), expected != nil)
					if err != nil {
						result = c.illegal(transactionalID, err)
					}
					transit = t
				} else {
					var exp *int16
					if expected != nil {
						exp = &expected.epoch
					}
					t, fenced, err := txn.prepareIncrementProducerEpoch(txnTimeoutMs, exp, c.nowMs())
					switch {
					case err != nil:
						result = c.illegal(transactionalID, err)
					case fenced:
						c.logger.WithFields(logrus.Fields{"transactional_id": transactionalID, "expected_epoch": *exp,
							"producer_epoch": txn.producerEpoch, "last_producer_epoch": txn.lastProducerEpoch}).
							Info("expected producer epoch matches neither the current nor the previous epoch")
						result = kerr.ProducerFenced
					}
					transit = t
				}
			case Ongoing:
				// Fence: bump the epoch, abort the ongoing transaction, and answer
				// CONCURRENT_TRANSACTIONS so the client retries (bumping once more, or getting a
				// new producer id if the fence exhausted the epochs).
				t, err := txn.prepareFenceProducerEpoch()
				if err != nil {
					result = c.illegal(transactionalID, err)
				}
				transit = t
			default: // Dead, PrepareEpochFence: never a current state
				result = c.illegal(transactionalID, errors.New("found transactional id in state "+txn.state.String()))
			}
		}
		txn.mu.Unlock()
		if result != nil {
			return fail(result)
		}
		if !needPID {
			break
		}
		pid, err := c.pids.GenerateProducerID()
		if err != nil {
			return fail(kafkaError(err))
		}
		newPID = pid
	}

	if transit.TxnState == PrepareEpochFence {
		e := c.endTransaction(transactionalID, transit.ProducerID, transit.ProducerEpoch, false, false)
		if e != nil {
			return fail(e)
		}
		return fail(kerr.ConcurrentTransactions)
	}
	if e := c.state.appendTransactionToLog(transactionalID, coordinatorEpoch, transit, nil); e != nil {
		c.logger.WithFields(logrus.Fields{"transactional_id": transactionalID, "error": e.Message}).Info("returning error to InitProducerId")
		return fail(e)
	}
	c.logger.WithFields(logrus.Fields{"transactional_id": transactionalID, "producer_id": transit.ProducerID,
		"producer_epoch": transit.ProducerEpoch, "partition": c.PartitionFor(transactionalID)}).Info("initialized transactional id")
	return transit.ProducerID, transit.ProducerEpoch, 0
}

func toPartitions(partitions map[string][]int32) []TopicPartition {
	var tps []TopicPartition
	seen := map[TopicPartition]bool{}
	for topic, ps := range partitions {
		for _, p := range ps {
			tp := TopicPartition{topic, p}
			if !seen[tp] {
				seen[tp] = true
				tps = append(tps, tp)
			}
		}
	}
	sortPartitions(tps)
	return tps
}

// HandleAddPartitions is handleAddPartitionsToTransaction: one error for all partitions.
func (c *TransactionCoordinator) HandleAddPartitions(ctx context.Context, transactionalID string, pid int64, epoch int16, partitions map[string][]int32) (errCode int16) {
	if transactionalID == "" {
		return kerr.InvalidRequest.Code
	}
	tps := toPartitions(partitions)
	cur, e := c.state.getTransactionState(transactionalID)
	if e != nil {
		return e.Code
	}
	if cur == nil {
		return kerr.InvalidProducerIDMapping.Code
	}
	txn := cur.txn
	txn.mu.Lock()
	var transit TxnTransitMetadata
	switch {
	case txn.producerID != pid:
		e = kerr.InvalidProducerIDMapping
	case txn.producerEpoch != epoch:
		e = kerr.ProducerFenced
	case txn.hasPendingState, txn.state == PrepareCommit, txn.state == PrepareAbort:
		e = kerr.ConcurrentTransactions
	case txn.state == Ongoing && txn.containsAll(tps):
		// Already part of the transaction: answer at once.
		txn.mu.Unlock()
		return 0
	default:
		var err error
		if transit, err = txn.prepareAddPartitions(tps, c.nowMs()); err != nil {
			e = c.illegal(transactionalID, err)
		}
	}
	txn.mu.Unlock()
	if e != nil {
		c.logger.WithFields(logrus.Fields{"transactional_id": transactionalID, "error": e.Message}).Debug("returning error to AddPartitionsToTxn")
		return e.Code
	}
	return code(c.state.appendTransactionToLog(transactionalID, cur.coordinatorEpoch, transit, nil))
}

func (m *TransactionMetadata) containsAll(tps []TopicPartition) bool {
	for _, tp := range tps {
		if _, ok := m.topicPartitions[tp]; !ok {
			return false
		}
	}
	return true
}

// HandleVerifyPartitions is handleVerifyPartitionsInTransaction (AddPartitionsToTxn v4 with
// VerifyOnly, sent by partition leaders): per partition, NONE when it is in the ongoing
// transaction, INVALID_TXN_STATE when not; one error for all when the producer does not match.
func (c *TransactionCoordinator) HandleVerifyPartitions(ctx context.Context, transactionalID string, pid int64, epoch int16, partitions map[string][]int32) map[string]map[int32]int16 {
	tps := toPartitions(partitions)
	out := make(map[string]map[int32]int16, len(partitions))
	set := func(tp TopicPartition, e *kerr.Error) {
		if out[tp.Topic] == nil {
			out[tp.Topic] = map[int32]int16{}
		}
		out[tp.Topic][tp.Partition] = code(e)
	}
	all := func(e *kerr.Error) map[string]map[int32]int16 {
		for _, tp := range tps {
			set(tp, e)
		}
		return out
	}
	if transactionalID == "" {
		return all(kerr.InvalidRequest)
	}
	cur, e := c.state.getTransactionState(transactionalID)
	if e != nil {
		return all(e)
	}
	if cur == nil {
		return all(kerr.InvalidProducerIDMapping)
	}
	txn := cur.txn
	txn.mu.Lock()
	defer txn.mu.Unlock()
	// The pending state is not checked: the append on the partition does the final check.
	switch {
	case txn.producerID != pid:
		return all(kerr.InvalidProducerIDMapping)
	case txn.producerEpoch != epoch:
		return all(kerr.ProducerFenced)
	case txn.state == PrepareCommit || txn.state == PrepareAbort:
		return all(kerr.ConcurrentTransactions)
	}
	for _, tp := range tps {
		if _, ok := txn.topicPartitions[tp]; ok {
			set(tp, nil)
		} else {
			set(tp, kerr.InvalidTxnState)
		}
	}
	return out
}

// HandleEndTxn is handleEndTransaction: the answer comes once PrepareCommit/PrepareAbort is
// durable; markers and the Complete* record follow in the background. The glue maps
// PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for request versions before it existed.
func (c *TransactionCoordinator) HandleEndTxn(ctx context.Context, transactionalID string, pid int64, epoch int16, commit bool) (errCode int16) {
	return code(c.endTransaction(transactionalID, pid, epoch, commit, true))
}

func resultName(commit bool) string {
	if commit {
		return "COMMIT"
	}
	return "ABORT"
}

// endTransaction is TransactionCoordinator.endTransaction. isFromClient=false is the
// coordinator's own abort (fencing in InitProducerId, timeouts), whose epoch may be one
// ahead of the cached one.
func (c *TransactionCoordinator) endTransaction(transactionalID string, pid int64, epoch int16, commit bool, isFromClient bool) *kerr.Error {
	if transactionalID == "" {
		return kerr.InvalidRequest
	}
	log := c.logger.WithFields(logrus.Fields{"transactional_id": transactionalID, "result": resultName(commit)})
	cur, e := c.state.getTransactionState(transactionalID)
	if e != nil {
		return e
	}
	if cur == nil {
		return kerr.InvalidProducerIDMapping
	}
	coordinatorEpoch, txn := cur.coordinatorEpoch, cur.txn
	invalidState := func() *kerr.Error {
		log.WithField("state", txn.state.String()).Debug("transaction state does not allow this end transaction result")
		return kerr.InvalidTxnState
	}
	isEpochFence := false
	var transit TxnTransitMetadata
	txn.mu.Lock()
	switch {
	case txn.producerID != pid:
		e = kerr.InvalidProducerIDMapping
	// Client requests must match the epoch exactly; the coordinator's own may be ahead.
	case (isFromClient && epoch != txn.producerEpoch) || epoch < txn.producerEpoch:
		e = kerr.ProducerFenced
	case txn.hasPendingState && (txn.pendingState != PrepareEpochFence || isFromClient):
		// A client's EndTxn racing a fence in progress waits like any other concurrent call
		// (Kafka lets it through and fails the transition with an IllegalStateException).
		e = kerr.ConcurrentTransactions
	default:
		switch txn.state {
		case Ongoing:
			next := PrepareAbort
			if commit {
				next = PrepareCommit
			}
			if next == PrepareAbort && txn.pendingIs(PrepareEpochFence) {
				// Make way for PrepareAbort and carry the bumped epoch into the record.
				isEpochFence = true
				txn.clearPending()
				txn.producerEpoch = epoch
				txn.lastProducerEpoch = noProducerEpoch
			}
			t, err := txn.prepareAbortOrCommit(next, c.nowMs())
			if err != nil {
				e = c.illegal(transactionalID, err)
			}
			transit = t
		case CompleteCommit:
			if commit {
				txn.mu.Unlock()
				return nil // a retry of a commit that completed
			}
			e = invalidState()
		case CompleteAbort:
			if !commit {
				txn.mu.Unlock()
				return nil
			}
			e = invalidState()
		case PrepareCommit:
			if commit {
				e = kerr.ConcurrentTransactions
			} else {
				e = invalidState()
			}
		case PrepareAbort:
			if !commit {
				e = kerr.ConcurrentTransactions
			} else {
				e = invalidState()
			}
		case Empty:
			e = invalidState()
		default:
			e = c.illegal(transactionalID, errors.New("found transactional id in state "+txn.state.String()))
		}
	}
	txn.mu.Unlock()
	if e != nil {
		log.WithField("error", e.Message).Debug("not appending the end of transaction")
		return e
	}

	if e := c.state.appendTransactionToLog(transactionalID, coordinatorEpoch, transit, nil); e != nil {
		log.WithFields(logrus.Fields{"error": e.Message, "coordinator_epoch": coordinatorEpoch}).
			Info("appending the end of transaction failed; not sending markers")
		if isEpochFence {
			if cur, ke := c.state.getTransactionState(transactionalID); ke == nil && cur != nil && cur.coordinatorEpoch == coordinatorEpoch {
				cur.txn.mu.Lock()
				cur.txn.hasFailedEpochFence = true
				cur.txn.mu.Unlock()
				log.WithField("producer_epoch", transit.ProducerEpoch).Warn("failed to write an epoch fence; the epoch was bumped but not returned to the client")
			}
		}
		return e
	}

	// The Prepare* record is durable: prepare the completion and start the markers.
	cur, e = c.state.getTransactionState(transactionalID)
	switch {
	case e != nil:
		return e
	case cur == nil:
		return c.illegal(transactionalID, errors.New("the coordinator owns the transaction partition but has no metadata for the id"))
	case cur.coordinatorEpoch != coordinatorEpoch:
		log.WithField("cached_coordinator_epoch", cur.coordinatorEpoch).Debug("coordinator epoch changed after the end of transaction was appended")
		return kerr.NotCoordinator
	}
	txn = cur.txn
	var complete TxnTransitMetadata
	txn.mu.Lock()
	switch {
	case txn.producerID != pid:
		e = kerr.InvalidProducerIDMapping
	case txn.producerEpoch != epoch:
		e = kerr.ProducerFenced
	case txn.hasPendingState:
		e = kerr.ConcurrentTransactions
	default:
		switch txn.state {
		case Empty, Ongoing, CompleteCommit, CompleteAbort:
			e = invalidState()
		case PrepareCommit, PrepareAbort:
			if (txn.state == PrepareCommit) != commit {
				e = invalidState()
				break
			}
			t, err := txn.prepareComplete(c.nowMs())
			if err != nil {
				e = c.illegal(transactionalID, err)
			}
			complete = t
		default:
			e = c.illegal(transactionalID, errors.New("found transactional id in state "+txn.state.String()))
		}
	}
	txn.mu.Unlock()
	if e != nil {
		log.WithField("error", e.Message).Info("not sending transaction markers after the end of transaction was appended")
		return e
	}
	c.markers.addTxnMarkersToSend(coordinatorEpoch, commit, txn, complete)
	return nil
}

// abortTimedOutTransactions aborts (with an epoch bump that fences the producer) every
// Ongoing transaction past its timeout. Each abort runs in its own goroutine so a slow
// append does not hold the others up.
func (c *TransactionCoordinator) abortTimedOutTransactions() {
	for _, t := range c.state.timedOutTransactions() {
		t := t
		cur, e := c.state.getTransactionState(t.transactionalID)
		if e != nil || cur == nil {
			if e == nil {
				c.logger.WithField("transactional_id", t.transactionalID).Error("could not find transaction metadata when trying to time out the transaction")
			}
			continue
		}
		txn := cur.txn
		txn.mu.Lock()
		var transit TxnTransitMetadata
		ok := false
		switch {
		case txn.producerID != t.producerID:
			c.logger.WithFields(logrus.Fields{"transactional_id": t.transactionalID, "expected_producer_id": t.producerID,
				"producer_id": txn.producerID}).Error("found incorrect producer id when expiring a transaction")
		case txn.hasPendingState:
			// A transition is under way; the next sweep sees its outcome.
		default:
			var err error
			if transit, err = txn.prepareFenceProducerEpoch(); err != nil {
				c.illegal(t.transactionalID, err)
			} else {
				ok = true
			}
		}
		txn.mu.Unlock()
		if !ok {
			continue
		}
		c.run.goTask(func(context.Context) {
			log := c.logger.WithFields(logrus.Fields{"transactional_id": t.transactionalID, "producer_id": t.producerID, "producer_epoch": t.producerEpoch})
			switch e := c.endTransaction(t.transactionalID, transit.ProducerID, transit.ProducerEpoch, false, false); e {
			case nil:
				log.Info("completed rollback of ongoing transaction due to timeout")
			case kerr.InvalidProducerIDMapping, kerr.ProducerFenced, kerr.ConcurrentTransactions:
				log.WithField("error", e.Message).Debug("rollback of timed out transaction cancelled")
			default:
				log.WithField("error", e.Message).Warn("rollback of timed out transaction failed")
			}
		})
	}
}

// DescribeTransactions is handleDescribeTransactions for each id.
func (c *TransactionCoordinator) DescribeTransactions(ids []string) []TransactionDescription {
	out := make([]TransactionDescription, 0, len(ids))
	for _, id := range ids {
		// On error the other fields keep the schema's defaults (zero), as Kafka answers.
		d := TransactionDescription{TransactionalID: id}
		switch {
		case !c.active.Load():
			d.ErrCode = kerr.CoordinatorNotAvailable.Code
		case id == "":
			d.ErrCode = kerr.InvalidRequest.Code
		default:
			cur, e := c.state.getTransactionState(id)
			switch {
			case e != nil:
				d.ErrCode = e.Code
			case cur == nil:
				d.ErrCode = kerr.TransactionalIDNotFound.Code
			default:
				txn := cur.txn
				txn.mu.Lock()
				if txn.state == Dead {
					d.ErrCode = kerr.TransactionalIDNotFound.Code // being expired
				} else {
					d.State = txn.state.String()
					d.ProducerID, d.ProducerEpoch = txn.producerID, txn.producerEpoch
					d.TimeoutMs, d.StartTimestamp = txn.txnTimeoutMs, txn.txnStartTimestamp
					d.Partitions = map[string][]int32{}
					for _, tp := range txn.partitionsLocked() {
						d.Partitions[tp.Topic] = append(d.Partitions[tp.Topic], tp.Partition)
					}
				}
				txn.mu.Unlock()
			}
		}
		out = append(out, d)
	}
	return out
}

// ListTransactions is handleListTransactions: the ids cached here, filtered by state names
// and producer ids (empty filters match all); unknown state names are reported back.
func (c *TransactionCoordinator) ListTransactions(stateFilters []string, pidFilters []int64) ([]TransactionListing, int16, []string) {
	if !c.active.Load() {
		return nil, kerr.CoordinatorNotAvailable.Code, nil
	}
	if c.state.isLoading() {
		return nil, kerr.CoordinatorLoadInProgress.Code, nil
	}
	states := map[TransactionState]bool{}
	var unknown []string
	for _, name := range stateFilters {
		if s, ok := StateFromName(name); ok {
			states[s] = true
		} else {
			unknown = append(unknown, name)
		}
	}
	pids := map[int64]bool{}
	for _, p := range pidFilters {
		pids[p] = true
	}
	var out []TransactionListing
	for _, txn := range c.state.allMetadata() {
		txn.mu.Lock()
		include := txn.state != Dead && // being expired
			(len(pids) == 0 || pids[txn.producerID]) &&
			(len(stateFilters) == 0 || states[txn.state])
		if include {
			out = append(out, TransactionListing{TransactionalID: txn.transactionalID, ProducerID: txn.producerID, State: txn.state.String()})
		}
		txn.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TransactionalID < out[j].TransactionalID })
	return out, 0, unknown
}
