package broker

// 21_delete_records.go — DeleteRecords (key 21) v0-2 (KafkaApis.handleDeleteRecordsRequest,
// ReplicaManager.deleteRecords, Partition.deleteRecordsOnLeader, DelayedDeleteRecords):
//   - Only the leader moves the log start offset; offset -1 means the high watermark; an
//     offset above the HW or below 0 is OFFSET_OUT_OF_RANGE; a topic without
//     cleanup.policy=delete is POLICY_VIOLATION.
//   - Followers follow the leader's log start offset through their fetches; the request
//     waits (up to timeout_ms, else REQUEST_TIMED_OUT) until the low watermark — the
//     smallest log start offset over the leader and its live followers — reaches the
//     requested offset, and answers it.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

func init() { registerAPI(0, 2, (*APIs).handleDeleteRecords) }

func (a *APIs) handleDeleteRecords(ctx context.Context, rc *RequestContext, req *kmsg.DeleteRecordsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	type slot struct{ ti, pi int }
	var (
		tps     []logstore.TopicPartition
		offsets []int64
		slots   []slot
	)
	// KafkaApis: DELETE on each topic, else TOPIC_AUTHORIZATION_FAILED for its partitions.
	deletable := a.filterAuthorized(rc, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeTopic, func(add func(string)) {
		for _, rt := range req.Topics {
			add(rt.Topic)
		}
	})
	for _, rt := range req.Topics {
		ot := kmsg.NewDeleteRecordsResponseTopic()
		ot.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			op := kmsg.NewDeleteRecordsResponseTopicPartition()
			op.Partition, op.LowWatermark = rp.Partition, -1
			if !deletable.has(rt.Topic) {
				op.ErrorCode = kerr.TopicAuthorizationFailed.Code
				ot.Partitions = append(ot.Partitions, op)
				continue
			}
			slots = append(slots, slot{len(resp.Topics), len(ot.Partitions)})
			tps = append(tps, logstore.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
			offsets = append(offsets, rp.Offset)
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	res := a.Replicas.DeleteRecords(ctx, time.Duration(max(req.TimeoutMillis, 0))*time.Millisecond, tps, offsets)
	for i, r := range res {
		op := &resp.Topics[slots[i].ti].Partitions[slots[i].pi]
		op.ErrorCode = ErrorCode(r.err)
		if r.err == nil {
			op.LowWatermark = r.lowWatermark
		}
	}
	return resp, nil
}

type deleteRecordsResult struct {
	lowWatermark int64
	err          error
}

// DeleteRecords moves each leader partition's log start offset and waits until the low
// watermark reached it (DelayedDeleteRecords).
func (rm *ReplicaManager) DeleteRecords(ctx context.Context, timeout time.Duration, tps []logstore.TopicPartition, offsets []int64) []deleteRecordsResult {
	res := make([]deleteRecordsResult, len(tps))
	parts := make([]*Partition, len(tps))
	required := make([]int64, len(tps))
	for i, tp := range tps {
		p, err := rm.LeaderPartition(tp)
		if err == nil {
			required[i], err = p.deleteRecordsOnLeader(offsets[i])
		}
		if err != nil {
			res[i].err = err
			continue
		}
		parts[i] = p
	}
	w := newWaiter()
	w.op = delayedDeleteRecords // DelayedOperationPurgatory DeleteRecords (metrics_replica.go)
	for _, p := range parts {
		if p != nil {
			p.watch(w)
			defer p.unwatch(w)
		}
	}
	check := func() bool {
		pending := false
		for i, p := range parts {
			if p == nil {
				continue
			}
			lw, err := p.lowWatermarkIfLeader()
			switch {
			case err != nil:
				res[i].err = err
			case lw >= required[i]:
				res[i].lowWatermark = lw
			default:
				pending = true
				continue
			}
			parts[i] = nil
		}
		return pending
	}
	if !check() {
		return res
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case <-w.ch:
			if !check() {
				return res
			}
		case <-timer.C:
			if check() {
				for i, p := range parts {
					if p != nil {
						res[i].err = fmt.Errorf("%s: low watermark did not reach %d within %v: %w", p.tp, required[i], timeout, ErrRequestTimedOut)
					}
				}
			}
			return res
		case <-ctx.Done():
			for i, p := range parts {
				if p != nil {
					res[i].err = fmt.Errorf("%s: %w", p.tp, ErrRequestTimedOut)
				}
			}
			return res
		}
	}
}

// deleteRecordsOnLeader (Partition.deleteRecordsOnLeader) returns the offset the log now
// starts at (at least).
func (p *Partition) deleteRecordsOnLeader(offset int64) (int64, error) {
	p.mu.RLock()
	l, err := p.leaderLogLocked(-1, true)
	p.mu.RUnlock()
	if err != nil {
		return -1, err
	}
	if !l.Config().Delete() {
		return -1, fmt.Errorf("%s: records cannot be deleted without cleanup.policy=delete: %w", p.tp, ErrPolicyViolation)
	}
	if offset == -1 { // DeleteRecordsRequest.HIGH_WATERMARK
		offset = l.HighWatermark()
	}
	if offset < 0 {
		return -1, fmt.Errorf("%s: delete records offset %d: %w", p.tp, offset, logstore.ErrOffsetOutOfRange)
	}
	if err := l.MaybeIncrementLogStartOffset(offset); err != nil {
		return -1, err
	}
	p.notify()
	return offset, nil
}

// lowWatermarkIfLeader (Partition.lowWatermarkIfLeader): the smallest log start offset over
// the leader and its followers on live brokers whose log start offset is known.
func (p *Partition) lowWatermarkIfLeader() (int64, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	l, err := p.leaderLogLocked(-1, true)
	if err != nil {
		return -1, err
	}
	lw := l.LogStartOffset()
	p.hwMu.Lock()
	defer p.hwMu.Unlock()
	for id, rs := range p.mu.remotes {
		if rs.logStartOffset >= 0 && p.isReplicaISREligibleLocked(id) {
			lw = min(lw, rs.logStartOffset)
		}
	}
	return lw, nil
}
