package broker

// purgatory.go holds Kafka's DelayedProduce and DelayedFetch without a purgatory thread:
// the handler's goroutine waits on a waiter channel that each involved Partition signals
// when its log end offset, high watermark or leadership moves (partition.go notify), on
// its timer, and on the connection's context. Each wake-up re-checks the completion
// condition (Kafka's tryComplete); there is no polling, and nothing runs after the
// response is sent.

import (
	"context"
	"fmt"
	"time"

	"github.com/samsa-kafka/samsa/logstore"
)

// checkEnoughReplicasReachOffset (Partition.checkEnoughReplicasReachOffset): done when the
// HW reached requiredOffset (NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below the
// effective min ISR meanwhile) or when this broker is no longer the leader.
func (p *Partition) checkEnoughReplicasReachOffset(requiredOffset int64) (bool, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.mu.log == nil || p.mu.leaderID != p.localBrokerID {
		return true, fmt.Errorf("%s: leadership moved while waiting for acks: %w", p.tp, ErrNotLeaderOrFollower)
	}
	if p.mu.log.HighWatermark() < requiredOffset {
		return false, nil
	}
	// Kafka compares the maximal ISR (committed ∪ pending additions) here.
	if len(p.mu.maximalISR) < p.effectiveMinISRLocked() {
		return true, fmt.Errorf("%s: ISR size %d below min.insync.replicas: %w", p.tp, len(p.mu.maximalISR), ErrNotEnoughReplicasAfter)
	}
	return true, nil
}

// waitForProduce is DelayedProduce: it completes each successfully appended partition when
// its HW passes the batch, fails the rest with REQUEST_TIMED_OUT after timeout. parts[i] is
// nil for entries that already failed.
func waitForProduce(ctx context.Context, now func() time.Time, timeout time.Duration, results []ProduceResult, parts []*Partition) {
	defer quotaWaitStarted(ctx)() // waiting is not request time (quotas.go)
	pending := 0
	w := newWaiter()
	w.op = delayedProduce
	// check() clears parts as they complete: keep the watched ones for the unwatch. One
	// defer, not one per partition (a defer in a loop is a heap allocation each).
	var buf [8]*Partition
	watched := append(buf[:0], parts...)
	defer func() {
		for _, p := range watched {
			if p != nil {
				p.unwatch(w)
			}
		}
	}()
	for _, p := range parts {
		if p != nil {
			p.watch(w)
			pending++
		}
	}
	check := func() {
		for i, p := range parts {
			if p == nil {
				continue
			}
			done, err := p.checkEnoughReplicasReachOffset(results[i].Info.LastOffset + 1)
			if done {
				results[i].Err = err
				parts[i] = nil
				pending--
			}
		}
	}
	check()
	if pending == 0 {
		return
	}
	timer := time.NewTimer(max(timeout, 0))
	defer timer.Stop()
	for pending > 0 {
		select {
		case <-w.ch:
			check()
		case <-timer.C:
			check() // a last look, as Kafka's forceComplete does
			for i, p := range parts {
				if p != nil {
					results[i].Err = fmt.Errorf("%s: acks=all not reached within %v: %w", p.tp, timeout, ErrRequestTimedOut)
				}
			}
			return
		case <-ctx.Done():
			for i, p := range parts {
				if p != nil {
					results[i].Err = fmt.Errorf("%s: %w", p.tp, ErrRequestTimedOut)
				}
			}
			return
		}
	}
}

// FetchParams are the request-wide fetch settings (Kafka's FetchParams).
type FetchParams struct {
	ReplicaID      int32 // -1 consumer, >= 0 follower broker
	ReplicaEpoch   int64 // the follower's broker epoch (Fetch v15+ ReplicaState), -1 if not sent
	MaxWait        time.Duration
	MinBytes       int32
	MaxBytes       int32 // response limit (v3+); the first batch is returned even if larger (KIP-74)
	IsolationLevel int8  // 0 read_uncommitted, 1 read_committed
	// HardMaxBytesLimit (Fetch v0-v2, before KIP-74): no partition is exempt from the byte
	// limits, so a batch larger than them comes back cut (FetchParams.hardMaxBytesLimit).
	HardMaxBytesLimit bool
	// Client is set for Fetch v11+ (KIP-392): a consumer with it may be served by a
	// follower, or pointed to a preferred read replica (replica_selector.go).
	Client *ClientMetadata
}

// FetchPartitionRequest is one partition of a fetch.
type FetchPartitionRequest struct {
	TP                 logstore.TopicPartition
	FetchOffset        int64
	LogStartOffset     int64 // the follower's, -1 for consumers
	MaxBytes           int32
	CurrentLeaderEpoch int32 // -1: not sent
	LastFetchedEpoch   int32 // v12+, -1: not sent
}

// FetchPartitionResult is one partition's data and offsets.
type FetchPartitionResult struct {
	Err              error
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	Records          logstore.ReadInfo // file regions; Bytes() copies them
	// AbortedTransactions (read_committed only) are the aborted transactions that may
	// overlap Records.
	AbortedTransactions []logstore.AbortedTxn
	// Diverging (v12+, KIP-595): the fetcher's last fetched epoch diverges from this log at
	// (DivergingEpoch, DivergingEndOffset); the result then has no records.
	Diverging          bool
	DivergingEpoch     int32
	DivergingEndOffset int64
	// HasPreferred (v11+, KIP-392): the leader's replica selector sends the consumer to
	// PreferredReadReplica; the result then has no records.
	HasPreferred         bool
	PreferredReadReplica int32
}

// FetchMessages (ReplicaManager.fetchMessages) reads every partition and, unless it can
// answer at once (maxWait <= 0, enough bytes, or an error), waits as DelayedFetch until
// minBytes are available, a partition errors (e.g. leadership moved), maxWait passes or ctx
// ends, then reads again.
func (rm *ReplicaManager) FetchMessages(ctx context.Context, params FetchParams, reqs []FetchPartitionRequest) []FetchPartitionResult {
	results, total, errored := rm.readFromLocalLog(params, reqs, true)
	for _, r := range results {
		if r.Diverging || r.HasPreferred {
			errored = true // no DelayedFetch when an epoch diverges or another replica is preferred
		}
	}
	if params.MaxWait <= 0 || len(reqs) == 0 || total >= int64(params.MinBytes) || errored {
		return results
	}
	w := newWaiter()
	w.op = delayedFetch
	for _, r := range reqs {
		if p, err := rm.Partition(r.TP); err == nil {
			p.watch(w)
			defer p.unwatch(w)
		}
	}
	// Something may have moved between the first read and watch: look once more.
	results, total, errored = rm.readFromLocalLog(params, reqs, false)
	if total >= int64(params.MinBytes) || errored {
		return results
	}
	defer quotaWaitStarted(ctx)() // waiting is not request time (quotas.go)
	timer := time.NewTimer(params.MaxWait)
	defer timer.Stop()
	for {
		select {
		case <-w.ch:
			results, total, errored = rm.readFromLocalLog(params, reqs, false)
			if total >= int64(params.MinBytes) || errored {
				return results
			}
		case <-timer.C:
			results, _, _ = rm.readFromLocalLog(params, reqs, false)
			return results
		case <-ctx.Done():
			return results
		}
	}
}
