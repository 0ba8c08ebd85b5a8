package broker

// 02_list_offsets.go — ListOffsets (key 2) v0-8, as KafkaApis.handleListOffsetRequestV1AndAbove
// and Partition.fetchOffsetForTimestamp:
//   - -1 latest: the HW (read_uncommitted), the LSO (read_committed), or the
//     LEO for followers (replica id >= 0) and the debug replica (-2), with the current
//     leader epoch.
//   - -2 earliest and -4 earliest-local (v8; no tiered storage, so the same): log start.
//   - -3 max timestamp (v7+): the first record with the largest timestamp and its batch's
//     leader epoch (KIP-734 with the fix of KAFKA-16310, logstore.MaxTimestampOffset).
//   - t >= 0: the first offset whose timestamp >= t, hidden if at or above the HW (the
//     LSO for read_committed).
//   - Consumers must ask the leader; the debug replica (-2) may ask any replica. v4+
//     current leader epoch fencing (FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH). While the
//     HW lags the current epoch's start offset after a leader change, latest and later
//     timestamps answer OFFSET_NOT_AVAILABLE (v5+; LEADER_NOT_AVAILABLE before).
//   - A partition listed twice answers INVALID_REQUEST (v1+).
//   - v0 returns up to MaxNumOffsets offsets from segment base offsets and modification
//     times (UnifiedLog.legacyFetchOffsetsBefore), capped at the HW for consumers.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

func init() { registerAPI(0, 8, (*APIs).handleListOffsets) }

// ListOffsets special timestamps (ListOffsetsRequest).
const (
	latestTimestamp        = -1
	earliestTimestamp      = -2
	maxTimestamp           = -3
	earliestLocalTimestamp = -4

	consumerReplicaID  = -1
	debuggingReplicaID = -2
)

func (a *APIs) handleListOffsets(ctx context.Context, rc *RequestContext, req *kmsg.ListOffsetsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	seen := map[logstore.TopicPartition]int{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			seen[logstore.TopicPartition{Topic: t.Topic, Partition: p.Partition}]++
		}
	}
	var isolation *int8
	if req.ReplicaID == consumerReplicaID {
		il := req.IsolationLevel // v1: 0 (read_uncommitted)
		isolation = &il
	}
	// KafkaApis: DESCRIBE on each topic, else TOPIC_AUTHORIZATION_FAILED for its partitions.
	describable := a.filterAuthorized(rc, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, func(add func(string)) {
		for _, t := range req.Topics {
			add(t.Topic)
		}
	})
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			tp := logstore.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			if !describable.has(t.Topic) {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				if req.Version == 0 {
					rp.OldStyleOffsets = []int64{}
				}
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if req.Version == 0 {
				offs, err := a.Replicas.LegacyFetchOffsetsBefore(tp, p.Timestamp, p.MaxNumOffsets,
					req.ReplicaID == consumerReplicaID, req.ReplicaID != debuggingReplicaID, a.now())
				rp.ErrorCode = ErrorCode(err)
				rp.OldStyleOffsets = offs
				if offs == nil {
					rp.OldStyleOffsets = []int64{}
				}
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if seen[tp] > 1 {
				rp.ErrorCode = kerr.InvalidRequest.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			currentEpoch := int32(-1)
			if req.Version >= 4 {
				currentEpoch = p.CurrentLeaderEpoch
			}
			off, ts, epoch, err := a.Replicas.FetchOffsetForTimestamp(tp, p.Timestamp, isolation, currentEpoch, req.ReplicaID != debuggingReplicaID)
			if err != nil {
				rp.ErrorCode = ErrorCode(err)
				if rp.ErrorCode == kerr.OffsetNotAvailable.Code && req.Version < 5 {
					rp.ErrorCode = kerr.LeaderNotAvailable.Code
				}
				rc.Log.WithError(err).WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).Debug("list offsets failed")
			} else {
				rp.Offset, rp.Timestamp, rp.LeaderEpoch = off, ts, epoch
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// FetchOffsetForTimestamp (Partition.fetchOffsetForTimestamp) answers one ListOffsets
// partition. isolation is nil for replicas (read to the LEO). It returns offset -1 and
// timestamp -1 when no record qualifies.
func (rm *ReplicaManager) FetchOffsetForTimestamp(tp logstore.TopicPartition, timestamp int64, isolation *int8, currentLeaderEpoch int32, fetchOnlyFromLeader bool) (offset, ts int64, leaderEpoch int32, err error) {
	p, err := rm.Partition(tp)
	if err != nil {
		return -1, -1, -1, err
	}
	p.mu.RLock()
	l, err := p.leaderLogLocked(currentLeaderEpoch, fetchOnlyFromLeader)
	curEpoch, epochStart := p.mu.leaderEpoch, p.mu.leaderEpochStartOffset
	p.mu.RUnlock()
	if err != nil {
		return -1, -1, -1, err
	}
	hw := l.HighWatermark()
	lastFetchable := l.LogEndOffset()
	if isolation != nil {
		lastFetchable = hw // read_uncommitted
		if *isolation == 1 {
			lastFetchable = l.LastStableOffset() // read_committed: nothing of an open transaction
		}
	}
	var offsetsErr error
	if isolation != nil && epochStart > hw {
		offsetsErr = fmt.Errorf("%s: high watermark %d is behind leader epoch %d start offset %d: %w", tp, hw, curEpoch, epochStart, ErrOffsetNotAvailable)
	}

	switch timestamp {
	case latestTimestamp:
		if offsetsErr != nil {
			return -1, -1, -1, offsetsErr
		}
		return lastFetchable, -1, curEpoch, nil
	case earliestTimestamp, earliestLocalTimestamp:
		start := l.LogStartOffset()
		return start, -1, earliestEpoch(l, start), nil
	}
	var found bool
	switch {
	case timestamp == maxTimestamp:
		ts, offset, leaderEpoch, found, err = l.MaxTimestampOffset()
		if err != nil {
			return -1, -1, -1, fmt.Errorf("%s: %w", tp, err)
		}
	default:
		offset, ts, leaderEpoch, found, err = l.OffsetForTimestamp(max(timestamp, 0))
		if err != nil {
			return -1, -1, -1, fmt.Errorf("%s: %w", tp, err)
		}
	}
	if found && offset < lastFetchable {
		return offset, ts, leaderEpoch, nil
	}
	if offsetsErr != nil {
		return -1, -1, -1, offsetsErr
	}
	return -1, -1, -1, nil
}

// earliestEpoch is the epoch of the log's first epoch entry if it starts at or before the
// log start offset (UnifiedLog.fetchOffsetByTimestamp for EARLIEST), else -1.
func earliestEpoch(l *logstore.Log, logStart int64) int32 {
	entries := l.EpochEntries()
	if len(entries) > 0 && entries[0].StartOffset <= logStart {
		return entries[0].Epoch
	}
	return -1
}

// LegacyFetchOffsetsBefore answers ListOffsets v0 (ReplicaManager.legacyFetchOffsetsForTimestamp
// and UnifiedLog.legacyFetchOffsetsBefore): the base offsets of segments last modified at or
// before timestamp (plus the LEO as "now" when the active segment has data), newest first,
// at most maxNumOffsets; consumers never see offsets above the HW.
func (rm *ReplicaManager) LegacyFetchOffsetsBefore(tp logstore.TopicPartition, timestamp int64, maxNumOffsets int32, fromConsumer, fetchOnlyFromLeader bool, now time.Time) ([]int64, error) {
	p, err := rm.Partition(tp)
	if err != nil {
		return nil, err
	}
	p.mu.RLock()
	l, err := p.leaderLogLocked(-1, fetchOnlyFromLeader)
	p.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	segs := l.Segments()
	start, leo := l.LogStartOffset(), l.LogEndOffset()
	type offTime struct{ off, ms int64 }
	var arr []offTime
	for _, s := range segs {
		arr = append(arr, offTime{max(s.BaseOffset, start), s.LastModified.UnixMilli()})
	}
	if len(segs) > 0 && segs[len(segs)-1].Size > 0 {
		arr = append(arr, offTime{leo, now.UnixMilli()})
	}
	idx := -1
	switch timestamp {
	case latestTimestamp:
		idx = len(arr) - 1
	case earliestTimestamp:
		idx = 0
	default:
		for idx = len(arr) - 1; idx >= 0 && arr[idx].ms > timestamp; idx-- {
		}
	}
	n := min(int(max(maxNumOffsets, 0)), idx+1)
	out := make([]int64, 0, n)
	for j := 0; j < n; j++ {
		out = append(out, arr[idx-j].off)
	}
	slices.SortFunc(out, func(a, b int64) int { return cmp.Compare(b, a) })
	if fromConsumer {
		hw := l.HighWatermark()
		if len(out) > 0 && out[0] > hw {
			i := 0
			for i < len(out) && out[i] > hw {
				i++
			}
			out = append([]int64{hw}, out[i:]...)
		}
	}
	return out, nil
}
