package broker

// replica_manager_data.go — the ReplicaManager's data path over the local logs:
// appendRecords (with KIP-890 produce verification) and readFromLocalLog, as
// kafka.server.ReplicaManager has them. Waiting (acks=-1, fetch min.bytes) is in
// purgatory.go; the partitions and their transitions are in replica_manager.go.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
	"github.com/samsa-kafka/samsa/logstore"
)

// ProduceResult is one partition's outcome of AppendRecords.
type ProduceResult struct {
	TP   logstore.TopicPartition
	Err  error
	Info logstore.AppendInfo
}

// AppendParams are ReplicaManager.appendRecords' settings beyond acks and timeout.
type AppendParams struct {
	// Origin is who appends: clients (the zero value), a coordinator writing its own topic
	// (no sequence checks), as Kafka's AppendOrigin.
	Origin logstore.AppendOrigin
	// TransactionalID is the Produce request's transactional id (nil: none). With
	// transaction.partition.verification.enable, a transactional batch of a producer without
	// an ongoing transaction on its partition is first verified with the transaction
	// coordinator (KIP-890 part 1).
	TransactionalID *string
	// Guard, for a coordinator's own transactional append (TxnOffsetCommit), is the
	// verification guard it obtained from MaybeStartTransactionVerificationForPartition.
	Guard *logstore.VerificationGuard
}

// AppendRecords (ReplicaManager.appendRecords) appends each entry to its leader partition
// as a client append without a transactional id. See AppendRecordsWith.
func (rm *ReplicaManager) AppendRecords(ctx context.Context, timeout time.Duration, acks int16, tps []logstore.TopicPartition, records [][]byte) []ProduceResult {
	return rm.AppendRecordsWith(ctx, timeout, acks, tps, records, AppendParams{})
}

// AppendRecordsWith (ReplicaManager.appendRecords) appends each entry to its leader
// partition. acks must be validated by the caller. Transactional batches are verified first
// when params ask for it (partitionEntriesForVerification + AddPartitionsToTxnManager);
// partitions that fail verification are not appended and get Kafka's translated error. With
// acks=-1 it then waits (DelayedProduce) until the HW passes every appended batch, the
// timeout (REQUEST_TIMED_OUT) or ctx ends.
func (rm *ReplicaManager) AppendRecordsWith(ctx context.Context, timeout time.Duration, acks int16, tps []logstore.TopicPartition, records [][]byte, params AppendParams) []ProduceResult {
	results := make([]ProduceResult, len(tps))
	parts := make([]*Partition, len(tps))
	var guards []*logstore.VerificationGuard // per entry, allocated for the first guard only
	verifying := params.TransactionalID != nil && params.Origin == logstore.OriginClient && rm.transactionVerificationEnabled()
	var (
		unverified    []int // indexes waiting for the coordinator
		pid           int64
		epoch         int16
		pids          = 0
		lastPIDSeen   = int64(-1)
		requireVerify = verifying || (params.Guard != nil && rm.transactionVerificationEnabled())
	)
	for i, tp := range tps {
		results[i].TP = tp
		p, err := rm.LeaderPartition(tp)
		if err != nil {
			results[i].Err = err
			continue
		}
		parts[i] = p
		if !verifying {
			continue
		}
		b := recordbatch.Batch(records[i])
		if len(b) < recordbatch.HeaderSize || !b.Transactional() || b.ProducerID() < 0 {
			continue // no transactional records: nothing to verify
		}
		if b.ProducerID() != lastPIDSeen {
			pids++
			lastPIDSeen = b.ProducerID()
		}
		guard, err := p.maybeStartTransactionVerification(b.ProducerID(), b.BaseSequence(), b.ProducerEpoch())
		if err != nil {
			results[i].Err, parts[i] = err, nil
			continue
		}
		if guard != nil {
			if guards == nil {
				guards = make([]*logstore.VerificationGuard, len(tps))
			}
			guards[i] = guard
			unverified = append(unverified, i)
			pid, epoch = b.ProducerID(), b.ProducerEpoch()
		}
	}
	if pids > 1 {
		// Kafka throws InvalidPidMappingException for the whole request.
		for i := range results {
			results[i].Err, parts[i] = fmt.Errorf("transactional records contained more than one producer id: %w", kerr.InvalidProducerIDMapping), nil
		}
		return results
	}
	if len(unverified) > 0 {
		vtps := make([]logstore.TopicPartition, len(unverified))
		for j, i := range unverified {
			vtps[j] = tps[i]
		}
		failed := rm.verifier.verify(ctx, *params.TransactionalID, pid, epoch, vtps)
		for _, i := range unverified {
			if code, ok := failed[tps[i]]; ok {
				results[i].Err, parts[i] = verificationError(code), nil
			}
		}
	}

	anyOK := false
	for i, tp := range tps {
		p := parts[i]
		if p == nil {
			continue
		}
		opts := logstore.AppendOptions{Origin: params.Origin, Guard: params.Guard, RequireVerification: requireVerify}
		if guards != nil && guards[i] != nil {
			opts.Guard = guards[i]
		}
		info, err := p.appendRecordsToLeaderOpts(records[i], acks, opts)
		if err != nil {
			results[i].Err, parts[i] = err, nil
			if !errors.Is(err, ErrNotLeaderOrFollower) && !errors.Is(err, ErrNotEnoughReplicas) {
				rm.log.WithError(err).WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).Debug("append failed")
			}
			continue
		}
		results[i].Info = info
		anyOK = true
	}
	if acks == -1 && anyOK {
		waitForProduce(ctx, rm.cfg.Now, timeout, results, parts)
	}
	return results
}

// verificationError is ReplicaManager.appendEntries' translation of a transaction
// verification failure into what producers understand: INVALID_TXN_STATE with Kafka's
// message, and the coordinator's retriable errors (and a failed round trip) as
// NOT_ENOUGH_REPLICAS, which older clients retry without a metadata refresh.
func verificationError(code int16) error {
	switch code {
	case kerr.InvalidTxnState.Code:
		return &codedError{code: kerr.InvalidTxnState, msg: "Partition was not added to the transaction"}
	case kerr.ConcurrentTransactions.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code,
		kerr.NotCoordinator.Code, kerr.NetworkException.Code:
		return &codedError{code: kerr.NotEnoughReplicas,
			msg: "Unable to verify the partition has been added to the transaction. Underlying error: " + kerr.ErrorForCode(code).(*kerr.Error).Message}
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e
	}
	return kerr.UnknownServerError
}

// codedError is a Kafka error code with Kafka's own message for it (ErrorMessage sends msg).
type codedError struct {
	code *kerr.Error
	msg  string
}

func (e *codedError) Error() string { return e.msg }
func (e *codedError) Unwrap() error { return e.code }

// transactionVerificationEnabled is transaction.partition.verification.enable (default true),
// read from the current configuration so a dynamic change applies at once.
func (rm *ReplicaManager) transactionVerificationEnabled() bool {
	cfg := rm.cfg.Config
	if rm.cfg.DynamicConfig != nil {
		cfg = rm.cfg.DynamicConfig.Current()
	}
	if cfg == nil {
		return true
	}
	return propBool(cfg.Props, "transaction.partition.verification.enable", true)
}

// MaybeStartTransactionVerificationForPartition (ReplicaManager's method of that name, used
// by the group coordinator's TxnOffsetCommit): verifies with the transaction coordinator that
// tp is part of the producer's transaction. baseSequence is the base sequence of the batch
// to append (the group coordinator passes -1, NO_SEQUENCE, as Kafka's). It returns the guard
// to append with (nil when the producer already has an ongoing transaction on tp or
// verification is disabled), or the translated error.
func (rm *ReplicaManager) MaybeStartTransactionVerificationForPartition(ctx context.Context, tp logstore.TopicPartition, transactionalID string, producerID int64, producerEpoch int16, baseSequence int32) (*logstore.VerificationGuard, error) {
	if !rm.transactionVerificationEnabled() {
		return nil, nil
	}
	p, err := rm.LeaderPartition(tp)
	if err != nil {
		return nil, err
	}
	guard, err := p.maybeStartTransactionVerification(producerID, baseSequence, producerEpoch)
	if err != nil || guard == nil {
		return nil, err
	}
	if code, ok := rm.verifier.verify(ctx, transactionalID, producerID, producerEpoch, []logstore.TopicPartition{tp})[tp]; ok {
		return nil, coordinatorVerificationError(code)
	}
	return guard, nil
}

// coordinatorVerificationError is maybeStartTransactionVerificationForPartitions'
// translation of the transaction coordinator's answer for a coordinator's own append
// (Kafka 3.7.1): its retriable coordinator errors become NOT_ENOUGH_REPLICAS, without the
// produce path's message, and a failed round trip stays NETWORK_EXCEPTION. The group
// coordinator then maps them for TxnOffsetCommit (NOT_ENOUGH_REPLICAS to
// COORDINATOR_NOT_AVAILABLE, NETWORK_EXCEPTION to COORDINATOR_LOAD_IN_PROGRESS, which
// clients retry without looking the coordinator up again). Unlike the produce path,
// INVALID_TXN_STATE carries Kafka's default message.
func coordinatorVerificationError(code int16) error {
	switch code {
	case kerr.ConcurrentTransactions.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code,
		kerr.NotCoordinator.Code:
		return kerr.NotEnoughReplicas
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e
	}
	return kerr.UnknownServerError
}

// readFromLocalLog (ReplicaManager.readFromLocalLog) reads each partition up to the HW
// (consumers), the LSO (read_committed, with the aborted transactions in the data) or the LEO
// (followers), honouring each partition's max bytes and the response max bytes, with the
// first non-empty partition allowed one batch beyond them (KIP-74). It returns the results,
// the bytes read, and whether any partition failed. first marks the request's first read,
// which records a follower's fetch offset.
func (rm *ReplicaManager) readFromLocalLog(params FetchParams, reqs []FetchPartitionRequest, first bool) ([]FetchPartitionResult, int64, bool) {
	results := make([]FetchPartitionResult, len(reqs))
	limit := int64(params.MaxBytes)
	minOneMessage := !params.HardMaxBytesLimit
	var total int64
	errored := false
	for i, r := range reqs {
		res, err := rm.readPartition(params, r, limit, minOneMessage, first)
		if err != nil {
			results[i] = FetchPartitionResult{Err: err, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}
			errored = true
			continue
		}
		results[i] = res
		if res.Records.Size > 0 {
			minOneMessage = false
		}
		total += res.Records.Size
		limit = max(0, limit-res.Records.Size)
	}
	return results, total, errored
}

func (rm *ReplicaManager) readPartition(params FetchParams, r FetchPartitionRequest, limit int64, minOneMessage, first bool) (FetchPartitionResult, error) {
	p, err := rm.Partition(r.TP)
	if err != nil {
		return FetchPartitionResult{}, err
	}
	// KIP-392 (replica_selector.go): the leader may send a consumer to another replica.
	if res, handled, err := rm.readPreferred(p, params, r); handled {
		return res, err
	}
	p.mu.RLock()
	l, err := p.leaderLogLocked(r.CurrentLeaderEpoch, params.FetchOnlyLeader())
	_, isReplica := p.mu.remotes[params.ReplicaID]
	p.mu.RUnlock()
	if err != nil {
		return FetchPartitionResult{}, err
	}
	if params.ReplicaID >= 0 && !isReplica {
		// Partition.followerReplicaOrThrow
		return FetchPartitionResult{}, fmt.Errorf("%s: broker %d is not a follower of this partition: %w", r.TP, params.ReplicaID, ErrNotLeaderOrFollower)
	}
	hw, start, leo := l.HighWatermark(), l.LogStartOffset(), l.LogEndOffset()
	lso := l.LastStableOffset()
	res := FetchPartitionResult{HighWatermark: hw, LastStableOffset: lso, LogStartOffset: start}
	// KIP-595 truncate-on-fetch (Partition.readFromLocalLog): a fetcher whose last fetched
	// epoch ends earlier here than its fetch offset, or which this log does not know,
	// gets the diverging epoch and no records, and its fetch state is not recorded.
	if r.LastFetchedEpoch >= 0 {
		epoch, end := l.EndOffsetForEpoch(r.LastFetchedEpoch)
		if epoch < 0 || end < 0 {
			return FetchPartitionResult{}, fmt.Errorf("%s: cannot determine the end offset of last fetched epoch %d: %w", r.TP, r.LastFetchedEpoch, logstore.ErrOffsetOutOfRange)
		}
		if r.FetchOffset < start {
			return FetchPartitionResult{}, fmt.Errorf("%s: fetch offset %d < log start offset %d: %w", r.TP, r.FetchOffset, start, logstore.ErrOffsetOutOfRange)
		}
		if epoch < r.LastFetchedEpoch || end < r.FetchOffset {
			res.Diverging, res.DivergingEpoch, res.DivergingEndOffset = true, epoch, end
			return res, nil
		}
	}
	maxOffset := hw
	switch {
	case params.ReplicaID >= 0:
		maxOffset = leo
	case params.IsolationLevel == 1:
		maxOffset = lso // read_committed: nothing of an open transaction (FetchIsolation.TXN_COMMITTED)
	}
	if r.FetchOffset < start || r.FetchOffset > leo {
		return FetchPartitionResult{}, fmt.Errorf("%s: fetch offset %d outside [%d, %d]: %w", r.TP, r.FetchOffset, start, leo, logstore.ErrOffsetOutOfRange)
	}
	if first && params.ReplicaID >= 0 {
		p.updateFollowerFetchState(params.ReplicaID, r.FetchOffset, leo, params.ReplicaEpoch, r.LogStartOffset)
		res.HighWatermark = l.HighWatermark() // the fetch may just have moved it
		res.LastStableOffset = l.LastStableOffset()
	}
	maxBytes := min(int64(max(r.MaxBytes, 0)), limit)
	if r.FetchOffset >= maxOffset || (maxBytes == 0 && !minOneMessage) {
		return res, nil
	}
	if params.ReplicaID >= 0 && rm.shouldLeaderThrottle(p, params.ReplicaID) {
		return res, nil // readFromLog: a throttled partition over quota answers no records
	}
	info, err := l.Read(r.FetchOffset, int32(maxBytes), maxOffset, minOneMessage)
	if err != nil {
		return FetchPartitionResult{}, fmt.Errorf("read %s at %d: %w", r.TP, r.FetchOffset, err)
	}
	res.Records = info
	if params.IsolationLevel == 1 && params.ReplicaID < 0 && info.Size > 0 {
		// LocalLog.addAbortedTransactions: the aborted transactions the returned data may
		// hold, from the .txnindex files, up to the read's bound (the offset index entry
		// past the returned bytes, the next segment or the log end), as Kafka's: a lagging
		// consumer reading an old segment does not get every later aborted transaction.
		res.AbortedTransactions = l.CollectAbortedTransactions(r.FetchOffset, info.AbortedTxnUpperBound)
	}
	return res, nil
}
