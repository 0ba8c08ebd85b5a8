package broker

// fetcher_partition.go is the per-partition half of the replica fetcher (fetcher.go):
// processing one partition's Fetch or OffsetsForLeaderEpoch answer — append as follower,
// truncation on a diverging epoch (KIP-101/279/595), out-of-range handling, HW and log start
// offset updates — and the fetch-state bookkeeping around it (AbstractFetcherThread's
// processFetchRequest / truncate / handleOutOfRangeError). The simulation seam (sim*.go)
// drives these same functions without the fetcher goroutine.

import (
	"errors"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/mutation"
)

// current reports whether st is still the partition's fetch state. Caller holds f.mu.
func (f *replicaFetcher) currentLocked(st *fetchState) bool { return f.partitions[st.p.tp] == st }

// replaceLocked installs and returns the partition's next fetch state. Caller holds f.mu.
func (f *replicaFetcher) replaceLocked(st *fetchState, fetchOffset int64, truncating bool) *fetchState {
	next := &fetchState{p: st.p, topicID: st.topicID, fetchOffset: fetchOffset, currentLeaderEpoch: st.currentLeaderEpoch,
		lastFetchedEpoch: -1, truncating: truncating, lastDivergence: st.lastDivergence}
	if l := st.p.Log(); l != nil {
		if e, ok := l.LatestEpoch(); ok {
			next.lastFetchedEpoch = e
		}
	}
	f.partitions[st.p.tp] = next
	return next
}

// replaceAfterTruncationLocked installs the state following a truncation from the log's
// new end. If the partition would then fetch exactly as before (same offset, same last
// fetched epoch, same phase) the truncation made no progress: the partition waits
// replica.fetch.backoff.ms instead of asking the leader again at once. Caller holds f.mu.
func (f *replicaFetcher) replaceAfterTruncationLocked(st *fetchState, complete bool) *fetchState {
	next := f.replaceLocked(st, st.p.Log().LogEndOffset(), !complete)
	if next.fetchOffset == st.fetchOffset && next.lastFetchedEpoch == st.lastFetchedEpoch && next.truncating == st.truncating {
		next.delayUntil = f.m.now().Add(f.m.cfg.Backoff)
	}
	return next
}

func (f *replicaFetcher) fields(st *fetchState) logrus.Fields {
	return logrus.Fields{"topic": st.p.tp.Topic, "partition": st.p.tp.Partition, "leader_epoch": st.currentLeaderEpoch}
}

// offsetTruncationState is AbstractFetcherThread.getOffsetTruncationState: where to
// truncate given the leader's (epoch, end offset) for our last epoch, and whether that
// completes truncation (false: we did not know the leader's epoch; truncate to the end of
// our largest smaller epoch and ask again).
func (f *replicaFetcher) offsetTruncationState(st *fetchState, leaderEpoch int32, leaderEndOffset int64) (int64, bool) {
	l := st.p.Log()
	leo := l.LogEndOffset()
	if leaderEndOffset < 0 {
		// The leader knows nothing of our epoch: truncate to the HW (the initial offset).
		return min(l.HighWatermark(), leo), true
	}
	if leaderEpoch < 0 {
		return min(leaderEndOffset, leo), true
	}
	followerEpoch, followerEnd := l.EndOffsetForEpoch(leaderEpoch)
	if followerEnd < 0 {
		return min(leaderEndOffset, leo), true
	}
	if followerEpoch != leaderEpoch {
		return min(followerEnd, leo), false
	}
	return min(followerEnd, leaderEndOffset, leo), true
}

// truncateByLeaderEpochLocked truncates st's log by the leader's OffsetsForLeaderEpoch
// answer for its last epoch (AbstractFetcherThread.truncateToEpochEndOffsets). Caller holds
// f.mu.
func (f *replicaFetcher) truncateByLeaderEpochLocked(st *fetchState, leaderEpoch int32, leaderEndOffset int64) {
	off, complete := f.offsetTruncationState(st, leaderEpoch, leaderEndOffset)
	if f.skipEpochTruncationLocked(st) {
		return
	}
	if err := f.truncate(st, off); err != nil {
		st.delayUntil = f.m.now().Add(f.m.cfg.Backoff)
		return
	}
	f.replaceAfterTruncationLocked(st, complete)
}

// skipEpochTruncationLocked is the mutation.SkipEpochTruncation bug (off in production):
// the follower keeps its divergent log and fetches on from its end without a last fetched
// epoch, so the leader cannot detect the divergence again. Caller holds f.mu.
func (f *replicaFetcher) skipEpochTruncationLocked(st *fetchState) bool {
	if !mutation.SkipEpochTruncation.Load() {
		return false
	}
	next := f.replaceLocked(st, st.p.Log().LogEndOffset(), false)
	next.lastFetchedEpoch = -1
	return true
}

// truncate cuts the follower log at offset via the LogManager (cleaner checkpoint kept
// right) and re-clamps its HW. Caller holds f.mu.
func (f *replicaFetcher) truncate(st *fetchState, offset int64) error {
	l := st.p.Log()
	if l == nil {
		return errors.New("no log")
	}
	if offset >= l.LogEndOffset() {
		// No records to cut, but a trailing epoch entry at the log end must still go
		// (logstore's TruncateTo does that), or the leader keeps reporting divergence.
		return f.m.rm.truncateTo(st.p.tp, l, offset)
	}
	log := f.log.WithFields(f.fields(st)).WithFields(logrus.Fields{"log_end_offset": l.LogEndOffset(), "truncate_to": offset})
	if err := f.m.rm.truncateTo(st.p.tp, l, offset); err != nil {
		log.WithError(err).Error("truncation failed")
		return err
	}
	l.UpdateHighWatermark(min(l.HighWatermark(), offset))
	log.Info("truncated follower log")
	return nil
}

// handlePartitionErrorLocked: FENCED_LEADER_EPOCH removes the partition until the next
// LeaderAndIsr (onPartitionFenced); other errors delay it by the backoff.
func (f *replicaFetcher) handlePartitionErrorLocked(st *fetchState, code int16) {
	log := f.log.WithFields(f.fields(st)).WithField("error", kerr.ErrorForCode(code))
	if code == kerr.FencedLeaderEpoch.Code {
		log.Info("partition fenced by a newer leader epoch; waiting for LeaderAndIsr")
		delete(f.partitions, st.p.tp)
		return
	}
	log.Debug("fetch error; backing off")
	st.delayUntil = f.m.now().Add(f.m.cfg.Backoff)
}

func (f *replicaFetcher) processPartitionLocked(st *fetchState, rp *kmsg.FetchResponseTopicPartition) {
	l := st.p.Log()
	if l == nil {
		delete(f.partitions, st.p.tp)
		return
	}
	switch rp.ErrorCode {
	case 0:
	case kerr.OffsetOutOfRange.Code:
		f.handleOutOfRangeLocked(st)
		return
	default:
		f.handlePartitionErrorLocked(st, rp.ErrorCode)
		return
	}
	if rp.DivergingEpoch.EndOffset >= 0 {
		// truncateOnFetchResponse
		off, complete := f.offsetTruncationState(st, rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset)
		div := &divergence{epoch: rp.DivergingEpoch.Epoch, endOffset: rp.DivergingEpoch.EndOffset, truncateTo: off}
		log := f.log.WithFields(f.fields(st)).WithFields(logrus.Fields{"diverging_epoch": div.epoch,
			"diverging_end_offset": div.endOffset, "truncate_to": off, "log_end_offset": l.LogEndOffset()})
		if st.lastDivergence != nil && *st.lastDivergence == *div {
			log.Debug("leader reported a diverging epoch")
		} else {
			log.Info("leader reported a diverging epoch")
		}
		st.lastDivergence = div
		if f.skipEpochTruncationLocked(st) {
			return
		}
		if err := f.truncate(st, off); err != nil {
			st.delayUntil = f.m.now().Add(f.m.cfg.Backoff)
			return
		}
		f.replaceAfterTruncationLocked(st, complete)
		return
	}
	next := st.fetchOffset
	if len(rp.RecordBatches) > 0 {
		if leo := l.LogEndOffset(); leo != st.fetchOffset {
			f.log.WithFields(f.fields(st)).WithFields(logrus.Fields{"fetch_offset": st.fetchOffset, "log_end_offset": leo}).
				Warn("follower log end offset moved under the fetcher; re-truncating")
			f.replaceLocked(st, leo, true)
			return
		}
		info, err := st.p.appendRecordsToFollower(rp.RecordBatches)
		if err != nil {
			f.log.WithFields(f.fields(st)).WithError(err).Warn("follower append failed; backing off")
			st.delayUntil = f.m.now().Add(f.m.cfg.Backoff)
			return
		}
		if info.LastOffset >= 0 {
			next = info.LastOffset + 1
		}
		// ReplicaFetcherThread.processPartitionData: appended bytes of a throttled partition
		// count against the follower replication quota.
		if q := f.m.rm.replicationQuotas.Follower; q.IsThrottled(st.p.tp) {
			q.Record(int64(len(rp.RecordBatches)))
		}
		f.m.rm.markReplicationBytesIn(len(rp.RecordBatches)) // BrokerTopicMetrics (metrics_api.go)
	}
	// Follower HW = min(leader HW, own LEO); then the log start offset follows the
	// leader's (DeleteRecords, retention), as ReplicaFetcherThread.processPartitionData.
	if hw := min(rp.HighWatermark, l.LogEndOffset()); hw > l.HighWatermark() {
		l.UpdateHighWatermark(hw)
		st.p.notify() // consumers waiting on this follower (KIP-392) see the new HW
	}
	if rp.LogStartOffset > l.LogStartOffset() && rp.LogStartOffset <= l.HighWatermark() {
		if err := l.MaybeIncrementLogStartOffset(rp.LogStartOffset); err != nil {
			f.log.WithFields(f.fields(st)).WithError(err).Warn("cannot move the follower's log start offset")
		}
	}
	lag := max(0, rp.HighWatermark-next)
	if next != st.fetchOffset {
		ns := f.replaceLocked(st, next, false)
		ns.lastDivergence = nil // progress: a later divergence is news
		ns.lag, ns.lagKnown = lag, true
	} else if !st.lagKnown {
		st.lag, st.lagKnown = lag, true
	}
}

// shouldFollowerThrottle is ReplicaFetcherThread.shouldFollowerThrottle: a partition that
// is not caught up, throttled on this broker, sits out while the follower quota is
// exceeded. Caller holds f.mu.
func (f *replicaFetcher) shouldFollowerThrottle(st *fetchState) bool {
	q := f.m.rm.replicationQuotas.Follower
	return !st.inSync() && q.IsThrottled(st.p.tp) && q.IsQuotaExceeded()
}

// handleOutOfRangeLocked is AbstractFetcherThread.fetchOffsetAndTruncate: if the leader's
// LEO is below ours truncate to it; else start at max(leader log start, our LEO),
// truncating fully if the leader's log starts past our end.
func (f *replicaFetcher) handleOutOfRangeLocked(st *fetchState) {
	l := st.p.Log()
	leaderEnd, err := f.listOffset(st, -1)
	if err != nil {
		f.log.WithFields(f.fields(st)).WithError(err).Info("cannot get the leader's log end offset; backing off")
		st.delayUntil = f.m.now().Add(f.m.cfg.Backoff)
		return
	}
	leo := l.LogEndOffset()
	if leaderEnd < leo {
		if err := f.truncate(st, leaderEnd); err != nil {
			st.delayUntil = f.m.now().Add(f.m.cfg.Backoff)
			return
		}
		f.replaceLocked(st, l.LogEndOffset(), false)
		return
	}
	leaderStart, err := f.listOffset(st, -2)
	if err != nil {
		f.log.WithFields(f.fields(st)).WithError(err).Info("cannot get the leader's log start offset; backing off")
		st.delayUntil = f.m.now().Add(f.m.cfg.Backoff)
		return
	}
	if leaderStart > leo {
		log := f.log.WithFields(f.fields(st)).WithFields(logrus.Fields{"log_end_offset": leo, "leader_log_start_offset": leaderStart})
		if err := f.m.rm.truncateFullyAndStartAt(st.p.tp, l, leaderStart); err != nil {
			log.WithError(err).Error("full truncation failed")
			st.delayUntil = f.m.now().Add(f.m.cfg.Backoff)
			return
		}
		log.Info("truncated follower log fully to start at the leader's log start offset")
	}
	f.replaceLocked(st, max(leaderStart, l.LogEndOffset()), false)
}

// listOffset asks the leader (as a replica) for its latest (-1) or earliest (-2) offset.
func (f *replicaFetcher) listOffset(st *fetchState, ts int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = f.m.rm.cfg.BrokerID
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = st.p.tp.Topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition, p.CurrentLeaderEpoch, p.Timestamp = st.p.tp.Partition, st.currentLeaderEpoch, ts
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	r, err := f.request(req, 0)
	if err != nil {
		return -1, err
	}
	resp := r.(*kmsg.ListOffsetsResponse)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.Partition != st.p.tp.Partition {
				continue
			}
			if rp.ErrorCode != 0 {
				return -1, kerr.ErrorForCode(rp.ErrorCode)
			}
			return rp.Offset, nil
		}
	}
	return -1, errors.New("partition missing from ListOffsets response")
}
