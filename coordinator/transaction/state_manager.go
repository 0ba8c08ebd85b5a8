package transaction

// state_manager.go mirrors TransactionStateManager.scala (Kafka 3.7): the cache of
// transactional ids per __transaction_state partition this broker leads, loading a partition
// on election and unloading it on resignation, appending transitions with acks=-1, and the
// two sweeps (timed-out transactions, expired transactional ids).

import (
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-kafka/samsa/coordinator"
)

// maxTombstoneBatchBytes caps one batch of expiry tombstones (Kafka uses the partition's
// max.message.bytes, 1 MiB by default; the coordinator does not see the log config).
const maxTombstoneBatchBytes = 1000000

// partitionAndEpoch is TransactionPartitionAndLeaderEpoch.
type partitionAndEpoch struct {
	partition int32
	epoch     int32
}

// txnMetadataCacheEntry is TxnMetadataCacheEntry: the ids of one partition, loaded at one
// coordinator epoch. Its map is guarded by the manager's mu.
type txnMetadataCacheEntry struct {
	coordinatorEpoch int32
	metadata         map[string]*TransactionMetadata
}

// coordinatorEpochAndTxnMetadata is CoordinatorEpochAndTxnMetadata.
type coordinatorEpochAndTxnMetadata struct {
	coordinatorEpoch int32
	txn              *TransactionMetadata
}

// TransactionStateManager is Kafka's TransactionStateManager. It is safe for concurrent use.
// Lock order: mu (Kafka's stateLock) before any TransactionMetadata.mu; mu is never taken
// while a metadata lock is held, and neither is held across a log append.
type TransactionStateManager struct {
	cfg    Config
	log    Log
	logger *logrus.Entry
	run    *runner

	shuttingDown atomic.Bool

	mu      sync.RWMutex
	loading map[partitionAndEpoch]bool
	cache   map[int32]*txnMetadataCacheEntry
}

func newTransactionStateManager(cfg Config, log Log, run *runner, logger *logrus.Entry) *TransactionStateManager {
	return &TransactionStateManager{cfg: cfg, log: log, run: run, logger: logger.WithField("component", "transaction.state.manager"),
		loading: map[partitionAndEpoch]bool{}, cache: map[int32]*txnMetadataCacheEntry{}}
}

func (s *TransactionStateManager) now() time.Time { return s.cfg.Clock() }

func (s *TransactionStateManager) nowMs() int64 { return s.cfg.Clock().UnixMilli() }

// partitionFor is Utils.abs(transactionalId.hashCode) % transaction.state.log.num.partitions.
func (s *TransactionStateManager) partitionFor(transactionalID string) int32 {
	return coordinator.PartitionFor(transactionalID, s.cfg.NumPartitions)
}

// validateTransactionTimeoutMs: 0 < timeout <= transaction.max.timeout.ms.
func (s *TransactionStateManager) validateTransactionTimeoutMs(ms int32) bool {
	return ms > 0 && int64(ms) <= s.cfg.MaxTimeout.Milliseconds()
}

// getTransactionState is getAndMaybeAddTransactionState without creation: nil metadata when
// the id is unknown; COORDINATOR_LOAD_IN_PROGRESS while its partition loads; NOT_COORDINATOR
// when this broker does not own the partition.
func (s *TransactionStateManager) getTransactionState(transactionalID string) (*coordinatorEpochAndTxnMetadata, *kerr.Error) {
	return s.getAndMaybeAddTransactionState(transactionalID, nil)
}

// putTransactionStateIfNotExists adds created unless the id is already cached, and returns
// whichever is cached.
func (s *TransactionStateManager) putTransactionStateIfNotExists(created *TransactionMetadata) (*coordinatorEpochAndTxnMetadata, *kerr.Error) {
	return s.getAndMaybeAddTransactionState(created.transactionalID, created)
}

func (s *TransactionStateManager) getAndMaybeAddTransactionState(transactionalID string, created *TransactionMetadata) (*coordinatorEpochAndTxnMetadata, *kerr.Error) {
	p := s.partitionFor(transactionalID)
	lock := s.mu.RLocker()
	if created != nil {
		lock = &s.mu // the map is written
	}
	lock.Lock()
	defer lock.Unlock()
	for pe := range s.loading {
		if pe.partition == p {
			return nil, kerr.CoordinatorLoadInProgress
		}
	}
	entry, ok := s.cache[p]
	if !ok {
		return nil, kerr.NotCoordinator
	}
	m := entry.metadata[transactionalID]
	if m == nil && created != nil {
		entry.metadata[transactionalID] = created
		m = created
	}
	if m == nil {
		return nil, nil
	}
	return &coordinatorEpochAndTxnMetadata{coordinatorEpoch: entry.coordinatorEpoch, txn: m}, nil
}

// isLoading reports whether any partition is loading (ListTransactions answers
// COORDINATOR_LOAD_IN_PROGRESS then).
func (s *TransactionStateManager) isLoading() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.loading) > 0
}

// ownsPartition reports the coordinator epoch partition p is loaded (loaded=true) or
// loading (false) at; -1 when it is neither.
func (s *TransactionStateManager) ownsPartition(p int32) (epoch int32, loaded bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for pe := range s.loading {
		if pe.partition == p {
			return pe.epoch, false
		}
	}
	e, ok := s.cache[p]
	if !ok {
		return -1, false
	}
	return e.coordinatorEpoch, true
}

// allMetadata snapshots the cached metadata (outside of any metadata lock).
func (s *TransactionStateManager) allMetadata() []*TransactionMetadata {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*TransactionMetadata
	for _, e := range s.cache {
		for _, m := range e.metadata {
			out = append(out, m)
		}
	}
	return out
}

// transactionalIDAndProducerIDEpoch is TransactionalIdAndProducerIdEpoch.
type transactionalIDAndProducerIDEpoch struct {
	transactionalID string
	producerID      int64
	producerEpoch   int16
}

// timedOutTransactions lists Ongoing transactions without a pending transition whose
// start timestamp plus timeout has passed.
func (s *TransactionStateManager) timedOutTransactions() []transactionalIDAndProducerIDEpoch {
	now := s.nowMs()
	var out []transactionalIDAndProducerIDEpoch
	for _, m := range s.allMetadata() {
		m.mu.Lock()
		if !m.hasPendingState && m.state == Ongoing && m.txnStartTimestamp+int64(m.txnTimeoutMs) < now {
			out = append(out, transactionalIDAndProducerIDEpoch{m.transactionalID, m.producerID, m.producerEpoch})
		}
		m.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].transactionalID < out[j].transactionalID })
	return out
}

// shouldExpire: Empty/Complete* ids untouched for transactional.id.expiration.ms.
func (s *TransactionStateManager) shouldExpire(m *TransactionMetadata, nowMs int64) bool {
	return m.state.isExpirationAllowed() && m.txnLastUpdateTimestamp <= nowMs-s.cfg.TransactionalIDExpiration.Milliseconds()
}

// expiredID is TransactionalIdCoordinatorEpochAndMetadata.
type expiredID struct {
	transactionalID  string
	coordinatorEpoch int32
	transit          TxnTransitMetadata
}

// removeExpiredTransactionalIds writes tombstones for expired ids, partition by partition,
// and removes them from the cache once the tombstones are durable.
func (s *TransactionStateManager) removeExpiredTransactionalIds(ctx context.Context) {
	s.mu.RLock()
	parts := make([]int32, 0, len(s.cache))
	for p := range s.cache {
		parts = append(parts, p)
	}
	s.mu.RUnlock()
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		s.removeExpiredInPartition(ctx, p)
	}
}

func (s *TransactionStateManager) removeExpiredInPartition(ctx context.Context, p int32) {
	s.mu.RLock()
	entry, ok := s.cache[p]
	var metas []*TransactionMetadata
	var epoch int32
	if ok {
		epoch = entry.coordinatorEpoch
		for _, m := range entry.metadata {
			metas = append(metas, m)
		}
	}
	s.mu.RUnlock()
	if !ok {
		return
	}
	sort.Slice(metas, func(i, j int) bool { return metas[i].transactionalID < metas[j].transactionalID })
	now := s.nowMs()
	var expired []expiredID
	var recs []kv
	size := 0
	flush := func() {
		if len(expired) > 0 {
			s.writeTombstonesForExpiredTransactionalIds(ctx, p, expired, recs)
		}
		expired, recs, size = nil, nil, 0
	}
	for _, m := range metas {
		m.mu.Lock()
		if !m.hasPendingState && s.shouldExpire(m, now) {
			key := keyToBytes(m.transactionalID)
			if size+len(key)+32 > maxTombstoneBatchBytes && len(recs) > 0 {
				m.mu.Unlock()
				flush()
				m.mu.Lock()
				if m.hasPendingState || !s.shouldExpire(m, now) {
					m.mu.Unlock()
					continue
				}
			}
			t, err := m.prepareDead()
			if err != nil {
				s.logger.WithError(err).WithField("transactional_id", m.transactionalID).Error("cannot expire transactional id")
			} else {
				expired = append(expired, expiredID{m.transactionalID, epoch, t})
				recs = append(recs, kv{key: key})
				size += len(key) + 32
			}
		}
		m.mu.Unlock()
	}
	flush()
}

// writeTombstonesForExpiredTransactionalIds appends the tombstones (acks=-1,
// request.timeout.ms) and removes the ids whose expiry still stands.
func (s *TransactionStateManager) writeTombstonesForExpiredTransactionalIds(ctx context.Context, p int32, expired []expiredID, recs []kv) {
	var appendErr *kerr.Error
	batch, err := buildBatch(s.now(), recs)
	if err != nil {
		appendErr = kerr.UnknownServerError
	} else if _, err := s.log.Append(ctx, p, batch, s.cfg.RequestTimeout); err != nil {
		appendErr = kafkaError(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	entry := s.cache[p]
	removed := 0
	for _, e := range expired {
		var m *TransactionMetadata
		if entry != nil {
			m = entry.metadata[e.transactionalID]
		}
		if m == nil {
			continue
		}
		// Taking a metadata lock under the write lock is safe here: no path takes mu while
		// holding a metadata lock.
		m.mu.Lock()
		if entry.coordinatorEpoch == e.coordinatorEpoch && m.pendingIs(Dead) && m.producerEpoch == e.transit.ProducerEpoch && appendErr == nil {
			delete(entry.metadata, e.transactionalID)
			removed++
		} else {
			s.logger.WithFields(logrus.Fields{"transactional_id": e.transactionalID, "partition": p, "error": errName(appendErr),
				"coordinator_epoch": entry.coordinatorEpoch, "expected_coordinator_epoch": e.coordinatorEpoch}).
				Warn("failed to remove expired transactional id from the cache")
			if m.pendingIs(Dead) {
				m.clearPending()
			}
		}
		m.mu.Unlock()
	}
	if removed > 0 {
		s.logger.WithFields(logrus.Fields{"partition": p, "expired": removed}).Info("removed expired transactional ids")
	}
}

func errName(e *kerr.Error) string {
	if e == nil {
		return "NONE"
	}
	return e.Message
}

// appendTransactionToLog is TransactionStateManager.appendTransactionToLog: write the
// transition's record with acks=-1 and, once durable, complete it in the cache; on failure
// the pending state is reset unless retryOnError says the caller will retry. It blocks until
// the append is acknowledged or fails; nothing is locked meanwhile.
func (s *TransactionStateManager) appendTransactionToLog(transactionalID string, coordinatorEpoch int32, t TxnTransitMetadata,
	retryOnError func(*kerr.Error) bool) *kerr.Error {
	log := s.logger.WithFields(logrus.Fields{"transactional_id": transactionalID, "coordinator_epoch": coordinatorEpoch})
	value, err := valueToBytes(t)
	if err != nil {
		log.WithError(err).Error("cannot encode transaction metadata")
		s.resetPendingAfterFailure(transactionalID, coordinatorEpoch, kerr.UnknownServerError, retryOnError)
		return kerr.UnknownServerError
	}
	batch, err := buildBatch(s.now(), []kv{{keyToBytes(transactionalID), value}})
	if err != nil {
		s.resetPendingAfterFailure(transactionalID, coordinatorEpoch, kerr.UnknownServerError, retryOnError)
		return kerr.UnknownServerError
	}
	p := s.partitionFor(transactionalID)

	// Before appending: the id must still be cached at this coordinator epoch, and the log
	// must still be led at that epoch. Kafka holds its state lock across the (asynchronous)
	// local append for this; our append waits for the high watermark, so instead we check the
	// partition's leader epoch right before it, so a stale coordinator epoch cannot write into
	// a newer leader's log.
	cur, kerrCode := s.getTransactionState(transactionalID)
	switch {
	case kerrCode != nil:
		return kerrCode
	case cur == nil || cur.coordinatorEpoch != coordinatorEpoch:
		return kerr.NotCoordinator
	}
	if le, leader := s.log.LeaderEpoch(p); !leader || le != coordinatorEpoch {
		s.resetPendingAfterFailure(transactionalID, coordinatorEpoch, kerr.NotCoordinator, retryOnError)
		return kerr.NotCoordinator
	}

	timeout := time.Duration(t.TxnTimeoutMs) * time.Millisecond // as Kafka: the append waits up to the txn timeout
	_, aerr := s.log.Append(s.run.ctx, p, batch, timeout)
	if aerr != nil {
		code := kafkaError(aerr)
		log.WithError(aerr).WithField("transit", t.String()).Debug("appending transaction metadata failed")
		switch code {
		case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
			code = kerr.CoordinatorNotAvailable // the client retries
		case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
			code = kerr.NotCoordinator
		case kerr.MessageTooLarge, kerr.RecordListTooLarge:
			code = kerr.UnknownServerError
		}
		s.resetPendingAfterFailure(transactionalID, coordinatorEpoch, code, retryOnError)
		return code
	}

	cur, kerrCode = s.getTransactionState(transactionalID)
	switch {
	case kerrCode != nil:
		log.WithField("error", kerrCode.Message).Info("transaction metadata not accessible after its append; aborting the transition")
		return kerrCode
	case cur == nil:
		log.Info("transactional id no longer cached after its append; answering NOT_COORDINATOR")
		return kerr.NotCoordinator
	}
	m := cur.txn
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur.coordinatorEpoch != coordinatorEpoch {
		log.WithField("cached_coordinator_epoch", cur.coordinatorEpoch).Info("coordinator epoch changed during the append; answering NOT_COORDINATOR")
		return kerr.NotCoordinator
	}
	if err := m.completeTransitionTo(t); err != nil {
		log.WithError(err).Error("completing a durable transaction state transition failed")
		m.clearPending()
		return kerr.UnknownServerError
	}
	log.WithFields(logrus.Fields{"state": t.TxnState.String(), "producer_id": t.ProducerID, "producer_epoch": t.ProducerEpoch}).Debug("transaction state transition completed")
	return nil
}

// resetPendingAfterFailure resets the pending state after a failed append at the same
// coordinator epoch, unless the caller retries the same transition.
func (s *TransactionStateManager) resetPendingAfterFailure(transactionalID string, coordinatorEpoch int32, code *kerr.Error, retryOnError func(*kerr.Error) bool) {
	cur, kerrCode := s.getTransactionState(transactionalID)
	if kerrCode != nil || cur == nil {
		return
	}
	m := cur.txn
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur.coordinatorEpoch != coordinatorEpoch {
		return
	}
	if retryOnError != nil && retryOnError(code) {
		return
	}
	m.clearPending()
}

// loadTransactionsForTxnTopicPartition marks the partition loading (requests for its ids get
// COORDINATOR_LOAD_IN_PROGRESS) and loads it in the background; then Prepare* transactions
// are handed to sendTxnMarkers to be finished.
func (s *TransactionStateManager) loadTransactionsForTxnTopicPartition(p, coordinatorEpoch int32,
	sendTxnMarkers func(coordinatorEpoch int32, commit bool, m *TransactionMetadata, t TxnTransitMetadata)) {
	pe := partitionAndEpoch{p, coordinatorEpoch}
	s.mu.Lock()
	s.loading[pe] = true
	s.mu.Unlock()
	scheduled := s.now()
	if !s.run.goTask(func(context.Context) { s.loadTransactions(pe, scheduled, sendTxnMarkers) }) {
		s.mu.Lock()
		delete(s.loading, pe)
		s.mu.Unlock()
	}
}

func (s *TransactionStateManager) stillLoading(pe partitionAndEpoch) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.loading[pe]
}

func (s *TransactionStateManager) loadTransactions(pe partitionAndEpoch, scheduled time.Time,
	sendTxnMarkers func(int32, bool, *TransactionMetadata, TxnTransitMetadata)) {
	log := s.logger.WithFields(logrus.Fields{"partition": pe.partition, "coordinator_epoch": pe.epoch})
	start := s.now()
	log.Info("loading transaction metadata")
	loaded := s.loadTransactionMetadata(pe, log)

	type pendingCompletion struct {
		commit bool
		m      *TransactionMetadata
		t      TxnTransitMetadata
	}
	var toComplete []pendingCompletion
	s.mu.Lock()
	if !s.loading[pe] {
		s.mu.Unlock()
		log.Info("discarding loaded transaction metadata: leadership moved during the load")
		return
	}
	if prev, ok := s.cache[pe.partition]; ok {
		log.WithField("previous_coordinator_epoch", prev.coordinatorEpoch).Warn("unloaded previous transaction metadata as part of loading")
	}
	s.cache[pe.partition] = &txnMetadataCacheEntry{coordinatorEpoch: pe.epoch, metadata: loaded}
	ids := make([]string, 0, len(loaded))
	for id := range loaded {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	nowMs := s.nowMs()
	for _, id := range ids {
		m := loaded[id]
		m.mu.Lock() // not shared yet: nobody else can hold it
		if m.state == PrepareAbort || m.state == PrepareCommit {
			if t, err := m.prepareComplete(nowMs); err == nil {
				toComplete = append(toComplete, pendingCompletion{m.state == PrepareCommit, m, t})
			} else {
				log.WithError(err).WithField("transactional_id", id).Error("cannot resume transaction completion")
			}
		}
		m.mu.Unlock()
	}
	// Leave the loading set before sending markers so the completion appends are not
	// refused with COORDINATOR_LOAD_IN_PROGRESS.
	delete(s.loading, pe)
	s.mu.Unlock()
	for _, c := range toComplete {
		sendTxnMarkers(pe.epoch, c.commit, c.m, c.t)
	}
	// loaded is in the cache now, where requests add to it: count ids, taken under mu.
	log.WithFields(logrus.Fields{"transactional_ids": len(ids), "resumed": len(toComplete),
		"took": s.now().Sub(start).Round(time.Millisecond), "scheduler_delay": start.Sub(scheduled).Round(time.Millisecond)}).
		Info("finished loading transaction metadata")
}

// loadTransactionMetadata reads the partition from its log start to its log end; the last
// record of an id wins, a tombstone removes it; undecodable records are logged and skipped.
func (s *TransactionStateManager) loadTransactionMetadata(pe partitionAndEpoch, log *logrus.Entry) map[string]*TransactionMetadata {
	loaded := map[string]*TransactionMetadata{}
	start, end, err := s.log.Offsets(pe.partition)
	if err != nil {
		log.WithError(err).Warn("attempted to load transaction metadata but found no log")
		return loaded
	}
	for off := start; off < end && !s.shuttingDown.Load() && s.stillLoading(pe); {
		raw, err := s.log.Read(pe.partition, off, s.cfg.LoadBufferSize)
		if err != nil {
			log.WithError(err).WithField("offset", off).Error("error loading transactions from the transaction log")
			break
		}
		next, err := forEachRecord(raw, func(offset int64, key, value []byte) {
			id, err := readTxnRecordKey(key)
			var unknown errUnknownKeyVersion
			if errors.As(err, &unknown) {
				log.WithFields(logrus.Fields{"offset": offset, "key_version": unknown.version}).
					Warn("unknown message key version while loading transaction state; ignoring it (could be a left over from an aborted upgrade)")
				return
			}
			if err != nil {
				log.WithError(err).WithField("offset", offset).Warn("skipping a malformed record in the transaction log")
				return
			}
			m, err := readTxnRecordValue(id, value)
			if err != nil {
				log.WithError(err).WithFields(logrus.Fields{"offset": offset, "transactional_id": id}).Warn("skipping a malformed record in the transaction log")
				return
			}
			if m == nil {
				delete(loaded, id)
			} else {
				loaded[id] = m
			}
		})
		if err != nil {
			log.WithError(err).WithField("offset", off).Warn("skipping a malformed batch in the transaction log")
		}
		if next <= off {
			break // nothing more readable
		}
		off = next
		if _, e, err := s.log.Offsets(pe.partition); err == nil {
			end = e
		}
	}
	return loaded
}

// removeTransactionsForTxnTopicPartition unloads partition p: with an epoch (LeaderAndIsr
// become-follower) only that epoch's load is cancelled; without one (StopReplica) every load.
func (s *TransactionStateManager) removeTransactionsForTxnTopicPartition(p int32, coordinatorEpoch *int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for pe := range s.loading {
		if pe.partition == p && (coordinatorEpoch == nil || pe.epoch == *coordinatorEpoch) {
			delete(s.loading, pe)
		}
	}
	if e, ok := s.cache[p]; ok {
		delete(s.cache, p)
		s.logger.WithFields(logrus.Fields{"partition": p, "coordinator_epoch": e.coordinatorEpoch, "transactional_ids": len(e.metadata)}).
			Info("unloaded transaction metadata")
	}
}

// shutdown is TransactionStateManager.shutdown.
func (s *TransactionStateManager) shutdown() {
	s.shuttingDown.Store(true)
	s.mu.Lock()
	clear(s.loading)
	clear(s.cache)
	s.mu.Unlock()
}
