package broker

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's AlterPartitionManager keeps the proposals not yet sent (unsentIsrUpdates) and,
// whenever no request is in flight, sends all of them in one AlterPartition request
// (maybePropagateIsrChanges). After a restart of a broker with thousands of followers, its
// leaders propose thousands of ISR expansions within a second: one request each, one at a
// time, took tens of seconds to put the ISRs back; batched they take a few requests.

// alterPartitionBatch is the manager's queue of proposals to send; guarded by its mu.
type alterPartitionBatch struct {
	unsent  []alterPartitionItem
	sending bool // a sender goroutine is running
}

type alterPartitionItem struct {
	p    *Partition
	prop *isrProposal
}

// submit queues prop for p; a sender sends it, with whatever else is queued, until it is
// answered or superseded.
func (a *alterPartitionManager) submit(p *Partition, prop *isrProposal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ctx := a.ctx
	if ctx == nil || ctx.Err() != nil {
		return // not started (unit tests) or shutting down: the proposal stays pending
	}
	a.batch.unsent = append(a.batch.unsent, alterPartitionItem{p, prop})
	if !a.batch.sending {
		a.batch.sending = true
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.sendBatches(ctx)
		}()
	}
}

// sendBatches sends the queued proposals, all in one request, until the queue is empty or
// ctx is done. A failed request puts its proposals back, after the retry backoff.
func (a *alterPartitionManager) sendBatches(ctx context.Context) {
	for attempt := 0; ; {
		a.mu.Lock()
		items := a.batch.unsent
		a.batch.unsent = nil
		if len(items) == 0 || ctx.Err() != nil {
			a.batch.sending = false // proposals left stay pending, as after a shutdown
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
		live := items[:0]
		for _, it := range items {
			if it.p.isPending(it.prop) { // superseded proposals are dropped
				live = append(live, it)
			}
		}
		if len(live) == 0 {
			continue
		}
		retry := a.sendBatch(ctx, live, attempt)
		if len(retry) == 0 {
			attempt = 0
			continue
		}
		attempt++
		a.mu.Lock()
		a.batch.unsent = append(retry, a.batch.unsent...)
		a.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(alterPartitionRetryBackoff):
		}
	}
}

// sendBatch sends one request for items and hands each partition its answer; it returns
// the items to send again.
func (a *alterPartitionManager) sendBatch(ctx context.Context, items []alterPartitionItem, attempt int) []alterPartitionItem {
	req := a.rm.alterPartitionBatchRequest(items)
	resp, err := a.send(ctx, req)
	if err != nil || resp.ErrorCode != 0 {
		if ctx.Err() == nil && attempt%20 == 0 {
			log := a.log.WithField("partitions", len(items))
			if err == nil {
				log = log.WithField("error", kerr.ErrorForCode(resp.ErrorCode))
			}
			log.WithError(err).Info("AlterPartition failed; retrying")
		}
		return items
	}
	var retry []alterPartitionItem
	for _, it := range items {
		if !handleAlterPartitionResponse(it.p, it.prop, resp) {
			a.log.WithFields(logrus.Fields{"topic": it.prop.tp.Topic, "partition": it.prop.tp.Partition}).
				Warn("AlterPartition response lacks the partition; retrying")
			retry = append(retry, it)
		}
	}
	return retry
}

// alterPartitionBatchRequest is one AlterPartition request for every item (each as
// alterPartitionRequest builds it), partitions grouped by topic.
func (rm *ReplicaManager) alterPartitionBatchRequest(items []alterPartitionItem) *kmsg.AlterPartitionRequest {
	var req *kmsg.AlterPartitionRequest
	topic := map[string]int{}
	for _, it := range items {
		one := rm.alterPartitionRequest(it.prop)
		if req == nil {
			req = one
			topic[it.prop.tp.Topic] = 0
			continue
		}
		t := one.Topics[0]
		if i, ok := topic[it.prop.tp.Topic]; ok {
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, t.Partitions...)
		} else {
			topic[it.prop.tp.Topic] = len(req.Topics)
			req.Topics = append(req.Topics, t)
		}
	}
	return req
}
