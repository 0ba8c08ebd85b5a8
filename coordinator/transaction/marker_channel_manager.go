package transaction

// marker_channel_manager.go mirrors TransactionMarkerChannelManager.scala and
// TransactionMarkerRequestCompletionHandler.scala (Kafka 3.7): once a transaction's
// PrepareCommit/PrepareAbort is durable, its COMMIT/ABORT markers go to the leaders of its
// partitions as WriteTxnMarkers v1, batched per destination broker with one request in flight
// per broker; acknowledged partitions leave the transaction; retriable errors re-resolve the
// leader and resend; partitions that no longer exist are dropped; when no partition is left
// the CompleteCommit/CompleteAbort transition is written (retried while the coordinator is
// not available).

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// writeTxnMarkersVersion: Kafka sends v1 from IBP 2.8 on.
const writeTxnMarkersVersion = 1

// defaultRetryBackoff paces resends to a broker that failed or answered a retriable error,
// and retries of completion appends (Kafka's NetworkClient reconnect backoff is 50 ms and its
// send thread polls continuously).
const defaultRetryBackoff = 100 * time.Millisecond

// unknownBroker is the queue of markers whose partition has no reachable leader yet
// (Kafka's markersQueueForUnknownBroker).
const unknownBroker int32 = -1

// txnMarkerEntry is TxnMarkerEntry.
type txnMarkerEntry struct {
	producerID       int64
	producerEpoch    int16
	coordinatorEpoch int32
	commit           bool
	partitions       []TopicPartition
}

// txnIDAndMarkerEntry is TxnIdAndMarkerEntry plus the __transaction_state partition of the id
// (Kafka keys its per-broker queues by it to drop them on resignation).
type txnIDAndMarkerEntry struct {
	txnID        string
	txnPartition int32
	marker       txnMarkerEntry
}

// pendingCompleteTxn is PendingCompleteTxn.
type pendingCompleteTxn struct {
	transactionalID  string
	coordinatorEpoch int32
	txnMetadata      *TransactionMetadata
	newMetadata      TxnTransitMetadata
}

// TransactionMarkerChannelManager is Kafka's TransactionMarkerChannelManager. It is safe for
// concurrent use; its mu is a leaf lock except that it is never held while taking a
// TransactionMetadata lock or the state manager's lock.
type TransactionMarkerChannelManager struct {
	cfg          Config
	sender       MarkerSender
	state        *TransactionStateManager
	run          *runner
	logger       *logrus.Entry
	retryBackoff time.Duration
	wake         chan struct{}

	mu            sync.Mutex
	queues        map[int32][]txnIDAndMarkerEntry // destination broker (unknownBroker too) -> queued markers
	inFlight      map[int32]bool
	retryAt       map[int32]time.Time // no send to the broker before
	appendRetries []*pendingCompleteTxn
	appendRetryAt time.Time
	pending       map[string]*pendingCompleteTxn // transactionsWithPendingMarkers
}

func newTransactionMarkerChannelManager(cfg Config, sender MarkerSender, state *TransactionStateManager, run *runner, logger *logrus.Entry) *TransactionMarkerChannelManager {
	return &TransactionMarkerChannelManager{cfg: cfg, sender: sender, state: state, run: run, retryBackoff: defaultRetryBackoff,
		logger: logger.WithField("component", "transaction.marker.channel"), wake: make(chan struct{}, 1),
		queues: map[int32][]txnIDAndMarkerEntry{}, inFlight: map[int32]bool{}, retryAt: map[int32]time.Time{},
		pending: map[string]*pendingCompleteTxn{}}
}

func (m *TransactionMarkerChannelManager) wakeup() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// loop is the send thread: it builds requests when woken and retries on a timer while work
// waits for a backoff or an unknown leader.
func (m *TransactionMarkerChannelManager) loop(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-m.wake:
		case <-timer.C:
			armed = false
		}
		if m.generateRequests() && !armed {
			timer.Reset(m.retryBackoff)
			armed = true
		}
	}
}

// generateRequests is generateRequests of the send thread: retry due completion appends,
// re-resolve markers without a leader, and send one WriteTxnMarkers per broker that has
// markers queued, no request in flight and no backoff. It reports whether work is left that
// only time will unblock.
func (m *TransactionMarkerChannelManager) generateRequests() (waiting bool) {
	now := time.Now()
	m.mu.Lock()
	var retries []*pendingCompleteTxn
	if !now.Before(m.appendRetryAt) {
		retries, m.appendRetries = m.appendRetries, nil
	}
	unknown := m.queues[unknownBroker]
	delete(m.queues, unknownBroker)
	m.mu.Unlock()

	for _, p := range retries {
		m.logger.WithField("transactional_id", p.transactionalID).Debug("retrying the transaction completion append")
		m.tryAppendToLog(p)
	}
	for _, e := range unknown {
		m.addTxnMarkersToBrokerQueue(e.txnID, e.marker.producerID, e.marker.producerEpoch, e.marker.commit,
			e.marker.coordinatorEpoch, e.marker.partitions, false)
	}

	type send struct {
		broker  int32
		entries []txnIDAndMarkerEntry
	}
	var sends []send
	m.mu.Lock()
	for broker, q := range m.queues {
		if broker == unknownBroker || len(q) == 0 || m.inFlight[broker] {
			continue
		}
		if now.Before(m.retryAt[broker]) {
			waiting = true
			continue
		}
		m.inFlight[broker] = true
		delete(m.queues, broker)
		sends = append(sends, send{broker, q})
	}
	waiting = waiting || len(m.queues[unknownBroker]) > 0 || len(m.appendRetries) > 0
	m.mu.Unlock()
	sort.Slice(sends, func(i, j int) bool { return sends[i].broker < sends[j].broker })
	for _, s := range sends {
		s := s
		if !m.run.goTask(func(ctx context.Context) { m.send(ctx, s.broker, s.entries) }) {
			m.mu.Lock()
			delete(m.inFlight, s.broker)
			m.mu.Unlock()
		}
	}
	return waiting
}

// buildRequest turns queued entries into one WriteTxnMarkers request.
func buildRequest(entries []txnIDAndMarkerEntry) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = writeTxnMarkersVersion
	for _, e := range entries {
		mk := kmsg.NewWriteTxnMarkersRequestMarker()
		mk.ProducerID, mk.ProducerEpoch, mk.Committed, mk.CoordinatorEpoch = e.marker.producerID, e.marker.producerEpoch, e.marker.commit, e.marker.coordinatorEpoch
		for _, g := range groupByTopic(e.marker.partitions) {
			t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			t.Topic, t.Partitions = g.topic, g.partitions
			mk.Topics = append(mk.Topics, t)
		}
		req.Markers = append(req.Markers, mk)
	}
	return req
}

func (m *TransactionMarkerChannelManager) send(ctx context.Context, broker int32, entries []txnIDAndMarkerEntry) {
	sctx, cancel := context.WithTimeout(ctx, m.cfg.RequestTimeout)
	resp, err := m.sender.Send(sctx, broker, buildRequest(entries))
	cancel()
	m.mu.Lock()
	delete(m.inFlight, broker)
	if err != nil {
		m.retryAt[broker] = time.Now().Add(m.retryBackoff)
	}
	m.mu.Unlock()
	if ctx.Err() != nil {
		return // shutting down
	}
	if err != nil {
		m.logger.WithError(err).WithField("broker", broker).Debug("sending transaction markers failed; re-enqueuing them")
		m.onDisconnected(entries)
	} else {
		m.onResponse(broker, entries, resp)
	}
	m.wakeup()
}

// currentFor checks that the marker's transaction is still ours at the marker's coordinator
// epoch; otherwise its markers are cancelled and nil is returned.
func (m *TransactionMarkerChannelManager) currentFor(e txnIDAndMarkerEntry, log *logrus.Entry) *TransactionMetadata {
	cur, kerrCode := m.state.getTransactionState(e.txnID)
	switch {
	case kerrCode == kerr.NotCoordinator:
		log.Info("no longer the coordinator; cancel sending transaction markers")
	case kerrCode == kerr.CoordinatorLoadInProgress:
		log.Info("the transaction partition is loading, which obsoletes these markers; cancel sending them")
	case kerrCode != nil:
		log.WithField("error", kerrCode.Message).Error("unexpected error fetching the transaction state; cancel sending markers")
	case cur == nil:
		log.Error("the coordinator owns the transaction partition but has no metadata for the id; cancel sending markers")
	case cur.coordinatorEpoch != e.marker.coordinatorEpoch:
		log.WithField("cached_coordinator_epoch", cur.coordinatorEpoch).Info("coordinator epoch changed; cancel sending transaction markers")
	default:
		return cur.txn
	}
	m.removeMarkersForTxnID(e.txnID, e.marker.coordinatorEpoch)
	return nil
}

// onDisconnected: the request did not get an answer; markers still ours are re-enqueued with
// possibly new leaders.
func (m *TransactionMarkerChannelManager) onDisconnected(entries []txnIDAndMarkerEntry) {
	for _, e := range entries {
		log := m.logger.WithFields(logrus.Fields{"transactional_id": e.txnID, "coordinator_epoch": e.marker.coordinatorEpoch})
		if m.currentFor(e, log) == nil {
			continue
		}
		m.addTxnMarkersToBrokerQueue(e.txnID, e.marker.producerID, e.marker.producerEpoch, e.marker.commit,
			e.marker.coordinatorEpoch, e.marker.partitions, false)
	}
}

// onResponse is TransactionMarkerRequestCompletionHandler.onComplete for an answer.
func (m *TransactionMarkerChannelManager) onResponse(broker int32, entries []txnIDAndMarkerEntry, resp *kmsg.WriteTxnMarkersResponse) {
	errorsByPID := map[int64]map[TopicPartition]int16{}
	for _, mk := range resp.Markers {
		errs := errorsByPID[mk.ProducerID]
		if errs == nil {
			errs = map[TopicPartition]int16{}
			errorsByPID[mk.ProducerID] = errs
		}
		for _, t := range mk.Topics {
			for _, p := range t.Partitions {
				errs[TopicPartition{t.Topic, p.Partition}] = p.ErrorCode
			}
		}
	}
	backoff := false
	for _, e := range entries {
		log := m.logger.WithFields(logrus.Fields{"transactional_id": e.txnID, "coordinator_epoch": e.marker.coordinatorEpoch,
			"producer_id": e.marker.producerID, "broker": broker})
		errs, ok := errorsByPID[e.marker.producerID]
		if !ok {
			// Kafka throws here; resending is the safe reading of an incomplete answer.
			log.Error("WriteTxnMarkers response has no result for the producer id; resending its markers")
		}
		txn := m.currentFor(e, log)
		if txn == nil {
			continue
		}
		var retry []TopicPartition
		abortSending := false
		txn.mu.Lock()
		for _, tp := range e.marker.partitions {
			c, ok := errs[tp]
			if !ok {
				retry = append(retry, tp)
				continue
			}
			plog := log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition})
			switch kerr.TypedErrorForCode(c) {
			case nil:
				if err := txn.removePartition(tp); err != nil {
					plog.WithError(err).Error("acknowledged marker for a transaction not in Prepare*")
				}
			case kerr.UnknownTopicOrPartition, kerr.NotLeaderForPartition, kerr.NotEnoughReplicas,
				kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut, kerr.KafkaStorageError:
				plog.WithField("error", kerr.ErrorForCode(c)).Info("sending a transaction marker failed; retrying with the current coordinator epoch")
				retry = append(retry, tp)
			case kerr.InvalidProducerEpoch, kerr.TransactionCoordinatorFenced:
				plog.WithField("error", kerr.ErrorForCode(c)).Info("sending a transaction marker failed permanently; cancel sending the transaction's markers")
				abortSending = true
			case kerr.UnsupportedForMessageFormat, kerr.UnsupportedVersion:
				// The producer could not have written to this partition either.
				plog.WithField("error", kerr.ErrorForCode(c)).Info("partition cannot take transaction markers; removing it from the transaction")
				if err := txn.removePartition(tp); err != nil {
					plog.WithError(err).Error("removing a partition from a transaction not in Prepare*")
				}
			default:
				// CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, INVALID_REQUIRED_ACKS
				// and anything unexpected: Kafka throws (fatal). We stop sending this
				// transaction's markers; a coordinator failover resumes them.
				plog.WithField("error", kerr.ErrorForCode(c)).Error("fatal error sending a transaction marker; cancel sending the transaction's markers")
				abortSending = true
			}
			if abortSending {
				break
			}
		}
		txn.mu.Unlock()
		if abortSending {
			m.removeMarkersForTxnID(e.txnID, e.marker.coordinatorEpoch)
			continue
		}
		if len(retry) > 0 {
			backoff = true
			m.addTxnMarkersToBrokerQueue(e.txnID, e.marker.producerID, e.marker.producerEpoch, e.marker.commit,
				e.marker.coordinatorEpoch, retry, false)
		} else {
			m.maybeWriteTxnCompletion(e.txnID)
		}
	}
	if backoff {
		m.mu.Lock()
		m.retryAt[broker] = time.Now().Add(m.retryBackoff)
		m.mu.Unlock()
	}
}

// addTxnMarkersToSend is called once a Prepare* transition is durable (EndTxn, or a load
// finding one): queue the markers of every partition of the transaction, and complete it
// right away if it has none.
func (m *TransactionMarkerChannelManager) addTxnMarkersToSend(coordinatorEpoch int32, commit bool, txn *TransactionMetadata, newMetadata TxnTransitMetadata) {
	txn.mu.Lock()
	id, pid, epoch, tps := txn.transactionalID, txn.producerID, txn.producerEpoch, txn.partitionsLocked()
	txn.mu.Unlock()
	m.mu.Lock()
	m.pending[id] = &pendingCompleteTxn{transactionalID: id, coordinatorEpoch: coordinatorEpoch, txnMetadata: txn, newMetadata: newMetadata}
	m.mu.Unlock()
	m.addTxnMarkersToBrokerQueue(id, pid, epoch, commit, coordinatorEpoch, tps, true)
	m.maybeWriteTxnCompletion(id)
}

// addTxnMarkersToBrokerQueue groups partitions by their leader: known leaders get their
// broker's queue, partitions with an unavailable leader the unknown queue, and partitions
// missing from the metadata (deleted) are dropped from the transaction.
func (m *TransactionMarkerChannelManager) addTxnMarkersToBrokerQueue(txnID string, pid int64, epoch int16, commit bool,
	coordinatorEpoch int32, tps []TopicPartition, wake bool) {
	txnPartition := m.state.partitionFor(txnID)
	byDest := map[int32][]TopicPartition{}
	var deleted []TopicPartition
	for _, tp := range tps {
		broker, ok := m.sender.Leader(tp.Topic, tp.Partition)
		switch {
		case !ok:
			deleted = append(deleted, tp)
		case broker < 0:
			byDest[unknownBroker] = append(byDest[unknownBroker], tp)
		default:
			byDest[broker] = append(byDest[broker], tp)
		}
	}
	m.mu.Lock()
	for dest, ps := range byDest {
		m.queues[dest] = append(m.queues[dest], txnIDAndMarkerEntry{txnID: txnID, txnPartition: txnPartition,
			marker: txnMarkerEntry{producerID: pid, producerEpoch: epoch, coordinatorEpoch: coordinatorEpoch, commit: commit, partitions: ps}})
	}
	m.mu.Unlock()
	if len(deleted) > 0 {
		m.dropDeletedPartitions(txnID, coordinatorEpoch, deleted)
	}
	if wake {
		m.wakeup()
	}
}

func (m *TransactionMarkerChannelManager) dropDeletedPartitions(txnID string, coordinatorEpoch int32, deleted []TopicPartition) {
	log := m.logger.WithFields(logrus.Fields{"transactional_id": txnID, "coordinator_epoch": coordinatorEpoch})
	cur, kerrCode := m.state.getTransactionState(txnID)
	switch {
	case kerrCode != nil:
		log.WithField("error", kerrCode.Message).Info("cannot fetch the transaction metadata; cancel sending markers")
		m.removeMarkersForTxnID(txnID, coordinatorEpoch)
		return
	case cur == nil:
		log.Error("the coordinator owns the transaction partition but has no metadata for the id; cancel sending markers")
		m.removeMarkersForTxnID(txnID, coordinatorEpoch)
		return
	case cur.coordinatorEpoch != coordinatorEpoch:
		log.WithField("cached_coordinator_epoch", cur.coordinatorEpoch).Info("coordinator epoch changed since preparing markers; cancel sending them")
		m.removeMarkersForTxnID(txnID, coordinatorEpoch)
		return
	}
	log.WithField("partitions", formatPartitions(deleted)).Info("no leader for partitions of a transaction: they are likely deleted, skipping their markers")
	cur.txn.mu.Lock()
	for _, tp := range deleted {
		if err := cur.txn.removePartition(tp); err != nil {
			log.WithError(err).Error("dropping a deleted partition from a transaction not in Prepare*")
		}
	}
	cur.txn.mu.Unlock()
	m.maybeWriteTxnCompletion(txnID)
}

// maybeWriteTxnCompletion writes Complete* once no partition awaits its marker.
func (m *TransactionMarkerChannelManager) maybeWriteTxnCompletion(txnID string) {
	m.mu.Lock()
	p := m.pending[txnID]
	m.mu.Unlock()
	if p == nil {
		return
	}
	p.txnMetadata.mu.Lock()
	done := len(p.txnMetadata.topicPartitions) == 0
	p.txnMetadata.mu.Unlock()
	if !done {
		return
	}
	m.mu.Lock()
	mine := m.pending[txnID] == p
	if mine {
		delete(m.pending, txnID)
	}
	m.mu.Unlock()
	if mine {
		m.writeTxnCompletion(p)
	}
}

func (m *TransactionMarkerChannelManager) writeTxnCompletion(p *pendingCompleteTxn) {
	log := m.logger.WithFields(logrus.Fields{"transactional_id": p.transactionalID, "coordinator_epoch": p.coordinatorEpoch})
	cur, kerrCode := m.state.getTransactionState(p.transactionalID)
	switch {
	case kerrCode == kerr.NotCoordinator:
		log.Info("no longer the coordinator; cancel appending the transaction completion")
	case kerrCode == kerr.CoordinatorLoadInProgress:
		log.Info("the transaction partition is loading; the load will complete the transaction")
	case kerrCode != nil:
		log.WithField("error", kerrCode.Message).Error("unexpected error fetching the transaction state")
	case cur == nil:
		log.Error("the coordinator owns the transaction partition but has no metadata for the id")
	case cur.coordinatorEpoch != p.coordinatorEpoch:
		log.WithField("cached_coordinator_epoch", cur.coordinatorEpoch).Info("metadata changed after the markers were sent; not completing")
	default:
		m.tryAppendToLog(p)
	}
}

// tryAppendToLog appends the Complete* transition in the background; while the coordinator
// is not available it is retried after a backoff.
func (m *TransactionMarkerChannelManager) tryAppendToLog(p *pendingCompleteTxn) {
	retriable := func(e *kerr.Error) bool { return e != kerr.NotCoordinator && e != kerr.CoordinatorLoadInProgress }
	m.run.goTask(func(context.Context) {
		log := m.logger.WithFields(logrus.Fields{"transactional_id": p.transactionalID, "coordinator_epoch": p.coordinatorEpoch})
		e := m.state.appendTransactionToLog(p.transactionalID, p.coordinatorEpoch, p.newMetadata, retriable)
		switch e {
		case nil:
			log.WithField("state", p.newMetadata.TxnState.String()).Debug("completed transaction")
			return
		case kerr.NotCoordinator:
			log.Info("no longer the coordinator while appending the transaction completion; skipping it")
			return
		case kerr.CoordinatorLoadInProgress:
			log.Info("the transaction partition is loading; the load will complete the transaction")
			return
		case kerr.CoordinatorNotAvailable:
			log.Info("transaction log not available for the transaction completion; retrying")
		default:
			// Kafka treats this as fatal; we keep the pending Complete* and retry.
			log.WithField("error", e.Message).Error("unexpected error appending the transaction completion; retrying")
		}
		m.mu.Lock()
		m.appendRetries = append(m.appendRetries, p)
		m.appendRetryAt = time.Now().Add(m.retryBackoff)
		m.mu.Unlock()
		m.wakeup()
	})
}

// removeMarkersForTxnTopicPartition drops the queued markers of a __transaction_state
// partition this broker stopped (or restarted) leading.
func (m *TransactionMarkerChannelManager) removeMarkersForTxnTopicPartition(txnPartition int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for broker, q := range m.queues {
		kept := q[:0]
		for _, e := range q {
			if e.txnPartition == txnPartition {
				delete(m.pending, e.txnID)
				continue
			}
			kept = append(kept, e)
		}
		if len(kept) == 0 {
			delete(m.queues, broker)
		} else {
			m.queues[broker] = kept
		}
	}
}

// removeMarkersForTxnID forgets the transaction's pending completion made at coordinatorEpoch;
// queued markers of it are still sent but their answers no longer complete anything. A
// pending completion of another coordinator epoch stays: when this broker is elected again
// for the partition (a leader epoch bump without a leader change), the load resumes the
// transaction at the new epoch while answers of the old epoch's markers still arrive, and
// those must not cancel the new completion (Kafka removes only the very PendingCompleteTxn
// it was given: transactionsWithPendingMarkers.remove(transactionalId, pendingCompleteTxn)).
func (m *TransactionMarkerChannelManager) removeMarkersForTxnID(txnID string, coordinatorEpoch int32) {
	m.mu.Lock()
	if p := m.pending[txnID]; p != nil && p.coordinatorEpoch == coordinatorEpoch {
		delete(m.pending, txnID)
	}
	m.mu.Unlock()
}

// numTxnsWithPendingMarkers is for tests and diagnostics.
func (m *TransactionMarkerChannelManager) numTxnsWithPendingMarkers() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pending)
}

func (m *TransactionMarkerChannelManager) shutdown() {
	m.mu.Lock()
	clear(m.queues)
	clear(m.pending)
	m.appendRetries = nil
	m.mu.Unlock()
}
