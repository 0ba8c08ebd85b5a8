package controller

// topic_changes.go — the controller's handling of topics and partitions appearing in
// ZooKeeper: /brokers/topics children (processTopicChange), a topic's assignment changing
// (processPartitionModifications) and new partitions coming online (onNewPartitionCreation).

import (
	"errors"
	"slices"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// onTopicChange is processTopicChange: new topics get their partitions created; topics gone
// from ZooKeeper are forgotten.
func (l *eventLoop) onTopicChange() error {
	topics, ch, err := l.zk.GetAllTopicsW()
	if err != nil {
		return err
	}
	l.watch(ch, topicChangeEvent{})
	current := map[string]bool{}
	var added []string
	for _, t := range topics {
		current[t] = true
		if _, ok := l.ctx.topics[t]; !ok {
			added = append(added, t)
		}
	}
	for t := range l.ctx.topics {
		if !current[t] {
			l.forgetTopic(t)
		}
	}
	var newPartitions, existing []TopicPartition
	for _, t := range added {
		fresh, known, err := l.loadUnknownTopic(t)
		if err != nil {
			return err
		}
		newPartitions = append(newPartitions, fresh...)
		existing = append(existing, known...)
	}
	if len(added) > 0 {
		l.log.WithField("topics", added).Info("new topics")
	}
	slices.SortFunc(newPartitions, compareTP)
	if err := l.onNewPartitionCreation(newPartitions); err != nil {
		return err
	}
	return l.onKnownPartitionsLoaded(existing)
}

// loadUnknownTopic loads a topic the context does not hold (new, or skipped earlier for a
// malformed znode): its assignment and the partition states it already has. It returns the
// partitions without a state znode (new) and those with one. A malformed znode skips the
// topic (logged with its path by loadTopic or refreshPartitionStates).
func (l *eventLoop) loadUnknownTopic(name string) (fresh, known []TopicPartition, err error) {
	if err := l.loadTopic(name); err != nil {
		if isFatal(err) {
			return nil, nil, err
		}
		return nil, nil, nil
	}
	if err := l.loadPartitionStates(name); err != nil {
		return nil, nil, err
	}
	t := l.ctx.topics[name]
	if t == nil {
		return nil, nil, nil
	}
	for p := range t.assignment {
		tp := TopicPartition{name, p}
		if _, ok := l.ctx.partitionLeadership[tp]; ok {
			known = append(known, tp)
		} else {
			fresh = append(fresh, tp)
		}
	}
	slices.SortFunc(fresh, compareTP)
	slices.SortFunc(known, compareTP)
	return fresh, known, nil
}

// onKnownPartitionsLoaded handles partitions of a newly loaded topic that already have a
// state znode (the topic was skipped before): as at failover, their live replicas get
// LeaderAndIsr and every broker UpdateMetadata; those without a live leader are elected and
// replicas on dead brokers leave the ISR.
func (l *eventLoop) onKnownPartitionsLoaded(tps []TopicPartition) error {
	if len(tps) == 0 {
		return nil
	}
	b := newRequestBatch()
	for _, tp := range tps {
		l.ctx.partitionStates[tp] = l.ctx.initialPartitionState(tp)
		if !l.ctx.topicsToDelete[tp.Topic] {
			b.addLeaderAndIsr(l.ctx, l.ctx.replicas(tp), tp, false)
		}
	}
	l.sendBatch(b)
	if err := l.triggerOnlinePartitionStateChange(); err != nil {
		return err
	}
	// Replicas on dead brokers leave the ISR (ReplicaStateMachine's OfflineReplica).
	dead := map[int32][]TopicPartition{}
	for _, tp := range tps {
		for _, r := range l.ctx.replicas(tp) {
			if !l.ctx.isRegistered(r) && !l.ctx.topicsToDelete[tp.Topic] {
				dead[r] = append(dead[r], tp)
			}
		}
	}
	for _, r := range sortedKeys(dead) {
		if err := l.removeReplicaFromISRs(r, dead[r]); err != nil {
			return err
		}
	}
	return nil
}

func (l *eventLoop) forgetTopic(t string) {
	for _, tp := range l.ctx.allPartitions() {
		if tp.Topic == t {
			delete(l.ctx.partitionLeadership, tp)
			delete(l.ctx.partitionStates, tp)
		}
	}
	for tp := range l.ctx.partitionsReassigning {
		if tp.Topic == t {
			delete(l.ctx.partitionsReassigning, tp)
			delete(l.ctx.zkReassigning, tp)
		}
	}
	delete(l.ctx.topics, t)
	delete(l.ctx.topicsToDelete, t)
	delete(l.ctx.deletion, t)
}

// onPartitionModifications: the topic znode changed; partitions not yet known are new
// (CreatePartitions). Reassignment is not handled yet (a later issue).
func (l *eventLoop) onPartitionModifications(topic string) error {
	var known, oldAdding, oldRemoving map[int32][]int32
	if old := l.ctx.topics[topic]; old != nil {
		known, oldAdding, oldRemoving = old.assignment, old.adding, old.removing
	} else {
		// A topic skipped earlier (malformed znode) that was fixed: load it as a whole.
		fresh, existing, err := l.loadUnknownTopic(topic)
		if err != nil {
			return err
		}
		if err := l.onNewPartitionCreation(fresh); err != nil {
			return err
		}
		return l.onKnownPartitionsLoaded(existing)
	}
	if err := l.loadTopic(topic); err != nil {
		if errors.Is(err, zkmeta.ErrNoNode) {
			return nil // deleted; TopicChange follows
		}
		if isFatal(err) {
			return err
		}
		return nil
	}
	// As processPartitionModifications: only added partitions are taken from the znode; the
	// controller's assignment of existing ones (with a reassignment's adding/removing replicas)
	// stays, so a tool rewriting the znode without them cannot lose a reassignment in flight.
	t := l.ctx.topics[topic]
	var added []TopicPartition
	for p := range t.assignment {
		if _, ok := known[p]; !ok {
			added = append(added, TopicPartition{topic, p})
		}
	}
	for p, replicas := range known {
		if _, ok := t.assignment[p]; !ok {
			continue // a partition cannot be removed; keep it as the znode says (ignored by Kafka too)
		}
		t.assignment[p] = replicas
		if old := oldAdding[p]; len(old) > 0 {
			if t.adding == nil {
				t.adding = map[int32][]int32{}
			}
			t.adding[p] = old
		} else if t.adding != nil {
			delete(t.adding, p)
		}
		if old := oldRemoving[p]; len(old) > 0 {
			if t.removing == nil {
				t.removing = map[int32][]int32{}
			}
			t.removing[p] = old
		} else if t.removing != nil {
			delete(t.removing, p)
		}
	}
	slices.SortFunc(added, compareTP)
	return l.onNewPartitionCreation(added)
}

// onNewPartitionCreation: NonExistent → NewPartition → OnlinePartition.
func (l *eventLoop) onNewPartitionCreation(tps []TopicPartition) error {
	if len(tps) == 0 {
		return nil
	}
	for _, tp := range tps {
		l.stateChange(tp, NonExistentPartition, NewPartition, "partition created")
		l.ctx.partitionStates[tp] = NewPartition
	}
	b := newRequestBatch()
	if err := l.initializeNewPartitions(tps, b); err != nil {
		return err
	}
	l.sendBatch(b)
	return nil
}

func (l *eventLoop) initializeNewPartitions(tps []TopicPartition, b *requestBatch) error {
	ups, failed := l.ctx.decideNewPartitions(tps)
	for _, f := range failed {
		l.stateLog.WithFields(logrus.Fields{"topic": f.tp.Topic, "partition": f.tp.Partition, "reason": f.why}).
			Error("failed to move partition from NewPartition to OnlinePartition")
	}
	_, err := l.applyUpdates(ups, b)
	return err
}
