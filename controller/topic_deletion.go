package controller

// This file mirrors kafka.controller.TopicDeletionManager (Kafka 3.7), simplified: a topic
// marked under /admin/delete_topics gets UpdateMetadata with leader -2 (LeaderDuringDelete) on
// every broker, then StopReplica(delete=true) on every replica; when every replica has
// answered without error, /brokers/topics/<t>, /config/topics/<t> and the marker are deleted.
// Deletion pauses while a replica's broker is down and restarts when it returns.
// Deviation: Kafka first moves the replicas to OfflineReplica (StopReplica delete=false and an
// ISR shrink in ZooKeeper); samsa goes straight to StopReplica(delete=true), since the
// partition state znodes are deleted with the topic anyway.

import (
	"errors"
	"slices"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// readTopicDeletions re-reads /admin/delete_topics (re-arming the watch). Markers for
// unknown topics, or all markers when deletion is disabled, are removed.
func (l *eventLoop) readTopicDeletions() error {
	topics, ch, err := l.zk.ChildrenW(zkmeta.DeleteTopicsPath)
	if err != nil && !errors.Is(err, zkmeta.ErrNoNode) {
		return err
	}
	l.watch(ch, topicDeletionEvent{})
	for _, t := range topics {
		_, known := l.ctx.topics[t]
		if known && !l.cfg.DisableTopicDeletion {
			if !l.ctx.topicsToDelete[t] {
				l.log.WithField("topic", t).Info("topic queued for deletion")
			}
			l.ctx.topicsToDelete[t] = true
			continue
		}
		why := "unknown topic"
		if known {
			why = "delete.topic.enable=false"
		}
		l.log.WithFields(logrus.Fields{"topic": t, "reason": why}).Info("removing topic deletion marker")
		if err := l.zk.DeleteTopicDeletionMarker(t, l.ctx.epochZkVersion); err != nil {
			if isFatal(err) {
				return err
			}
			l.log.WithError(err).WithField("topic", t).Warn("cannot delete topic deletion marker")
		}
	}
	return nil
}

func (l *eventLoop) onTopicDeletion() error {
	if err := l.readTopicDeletions(); err != nil {
		return err
	}
	return l.resumeDeletions()
}

// resumeDeletions starts the deletion of every queued topic whose replicas are all on live
// brokers and completes those whose replicas are all deleted.
func (l *eventLoop) resumeDeletions() error {
	for _, t := range sortedStrings(l.ctx.topicsToDelete) {
		if pending, started := l.ctx.deletion[t]; started {
			if len(pending) == 0 {
				if err := l.completeDeleteTopic(t); err != nil {
					return err
				}
			}
			continue
		}
		tps := l.topicPartitions(t)
		ineligible := false
		for _, tp := range tps {
			for _, r := range l.ctx.replicas(tp) {
				if !l.ctx.isReplicaOnlineOrShuttingDown(r, tp) {
					ineligible = true
				}
			}
		}
		if ineligible {
			l.log.WithField("topic", t).Info("topic deletion paused: a replica is on a broker that is down or on an offline log dir")
			continue
		}
		// isTopicIneligibleForDeletion: a reassignment of the topic in flight holds it back;
		// its completion resumes the deletion.
		if slices.ContainsFunc(tps, func(tp TopicPartition) bool { return l.ctx.partitionsReassigning[tp] }) {
			l.log.WithField("topic", t).Info("topic deletion paused: a partition is being reassigned")
			continue
		}
		l.startDeletion(t, tps)
		if len(tps) == 0 {
			if err := l.completeDeleteTopic(t); err != nil {
				return err
			}
		}
	}
	return nil
}

func (l *eventLoop) topicPartitions(t string) []TopicPartition {
	var out []TopicPartition
	for _, tp := range l.ctx.allPartitions() {
		if tp.Topic == t {
			out = append(out, tp)
		}
	}
	return out
}

// startDeletion is onPartitionDeletion: UpdateMetadata (leader -2) to every live broker,
// then StopReplica(delete=true) to every replica.
func (l *eventLoop) startDeletion(t string, tps []TopicPartition) {
	l.log.WithField("topic", t).Info("deleting topic")
	pending := map[TopicPartition]map[int32]bool{}
	b := newRequestBatch()
	b.addUpdateMetadata(l.ctx.liveOrShuttingDownBrokerIDs(), tps)
	for _, tp := range tps {
		pending[tp] = map[int32]bool{}
		for _, r := range l.ctx.replicas(tp) {
			pending[tp][r] = true
			b.addStopReplica(l.ctx, []int32{r}, tp, true)
		}
	}
	l.ctx.deletion[t] = pending
	l.sendBatch(b)
}

// pauseDeletionsOn forgets started deletions that wait on a dead broker; they restart once
// every replica is live again (Kafka: ReplicaDeletionIneligible, retried on broker startup).
func (l *eventLoop) pauseDeletionsOn(dead []int32) {
	for t, pending := range l.ctx.deletion {
		for _, replicas := range pending {
			for r := range replicas {
				if slices.Contains(dead, r) {
					delete(l.ctx.deletion, t)
				}
			}
		}
	}
}

func stopReplicaDeletes(req *kmsg.StopReplicaRequest) bool {
	for _, t := range req.Topics {
		for _, p := range t.PartitionStates {
			if p.Delete {
				return true
			}
		}
	}
	return false
}

// onStopReplicaResponse records the replicas a broker deleted. An error makes the topic's
// deletion restart later (on the next broker change or deletion event).
func (l *eventLoop) onStopReplicaResponse(broker int32, req *kmsg.StopReplicaRequest, resp kmsg.Response) error {
	r, ok := resp.(*kmsg.StopReplicaResponse)
	if !ok {
		return nil
	}
	failed := map[string]bool{}
	if r.ErrorCode != 0 {
		for _, t := range req.Topics {
			failed[t.Topic] = true
		}
	}
	for _, p := range r.Partitions {
		tp := TopicPartition{p.Topic, p.Partition}
		pending := l.ctx.deletion[tp.Topic]
		if pending == nil || r.ErrorCode != 0 {
			continue
		}
		if p.ErrorCode != 0 {
			l.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "target_broker": broker,
				"error": kerr.ErrorForCode(p.ErrorCode)}).Warn("replica deletion failed")
			failed[tp.Topic] = true
			continue
		}
		delete(pending[tp], broker)
		if len(pending[tp]) == 0 {
			delete(pending, tp)
		}
	}
	for t := range failed {
		delete(l.ctx.deletion, t) // restart later
	}
	for _, t := range sortedStrings(l.ctx.topicsToDelete) {
		if pending, started := l.ctx.deletion[t]; started && len(pending) == 0 {
			if err := l.completeDeleteTopic(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// completeDeleteTopic removes the topic's znodes and forgets it.
func (l *eventLoop) completeDeleteTopic(t string) error {
	if err := l.zk.DeleteTopicZNodes(t, l.ctx.epochZkVersion); err != nil {
		if isFatal(err) {
			return err
		}
		l.log.WithError(err).WithField("topic", t).Error("cannot delete topic znodes")
		return nil
	}
	delete(l.ctx.deletion, t)
	l.forgetTopic(t)
	l.log.WithField("topic", t).Info("deletion of topic completed")
	return nil
}

func sortedStrings(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
