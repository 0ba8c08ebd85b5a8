package controller

// broker_changes.go — the controller's handling of broker membership: the live-broker set
// from /brokers/ids (onBrokerChange, onBrokerModification), onBrokerStartup and
// onBrokerFailure, and taking a dead replica out of the ISRs (KafkaController's
// processBrokerChange and friends).

import (
	"errors"
	"slices"
	"strconv"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// refreshLiveBrokers re-reads /brokers/ids (re-arming the watch) and returns the brokers
// that are new, bounced (same id, new czxid) and dead relative to the context, with the
// current registrations. It updates the channels as Kafka does; the caller updates the
// context's live brokers step by step.
func (l *eventLoop) refreshLiveBrokers() (changes brokerChanges, err error) {
	children, ch, err := l.zk.ChildrenW(zkmeta.BrokerIDsPath)
	if err != nil {
		return changes, err
	}
	l.watch(ch, brokerChangeEvent{})
	current := map[int32]zkmeta.BrokerInfo{}
	for _, c := range children {
		id, perr := strconv.ParseInt(c, 10, 32)
		if perr != nil {
			continue
		}
		info, err := l.zk.GetBroker(int32(id))
		if errors.Is(err, zkmeta.ErrNoNode) {
			continue // gone between the list and the read
		}
		if err != nil {
			if isFatal(err) {
				return changes, err
			}
			l.log.WithError(err).WithField("zk_path", zkmeta.BrokerIDPath(int32(id))).Error("cannot read broker registration")
			continue
		}
		current[int32(id)] = info
	}
	for id, info := range current {
		old, ok := l.ctx.liveBrokers[id]
		switch {
		case !ok:
			changes.newBrokers = append(changes.newBrokers, id)
		case old.Epoch != info.Epoch:
			changes.bounced = append(changes.bounced, id)
		}
	}
	for id := range l.ctx.liveBrokers {
		if _, ok := current[id]; !ok {
			changes.dead = append(changes.dead, id)
		}
	}
	slices.Sort(changes.newBrokers)
	slices.Sort(changes.bounced)
	slices.Sort(changes.dead)
	for _, id := range append(slices.Clone(changes.dead), changes.bounced...) {
		l.channels.removeBroker(id)
	}
	changes.current = current
	for _, id := range append(slices.Clone(changes.newBrokers), changes.bounced...) {
		l.channels.addBroker(current[id])
		if err := l.watchBroker(id); err != nil && isFatal(err) {
			return changes, err
		}
	}
	return changes, nil
}

// watchBroker arms a data watch on /brokers/ids/<id> (endpoint or feature changes).
func (l *eventLoop) watchBroker(id int32) error {
	path := zkmeta.BrokerIDPath(id)
	if l.dataWatches[path] {
		return nil
	}
	_, _, ch, err := l.zk.GetW(path)
	if err != nil {
		return err
	}
	l.dataWatches[path] = true
	l.watch(ch, brokerModificationEvent{id: id})
	return nil
}

// onBrokerModification is processBrokerModification: a live broker rewrote its registration
// (same czxid); new endpoints reach every broker through UpdateMetadata.
func (l *eventLoop) onBrokerModification(id int32) error {
	old, live := l.ctx.liveBrokers[id]
	if !live {
		return nil
	}
	data, _, ch, err := l.zk.GetW(zkmeta.BrokerIDPath(id))
	if errors.Is(err, zkmeta.ErrNoNode) {
		return nil // gone: BrokerChange handles it
	}
	if err != nil {
		return err
	}
	l.dataWatches[zkmeta.BrokerIDPath(id)] = true
	l.watch(ch, brokerModificationEvent{id: id})
	info, err := zkmeta.DecodeBrokerInfo(id, data)
	if err != nil {
		l.log.WithError(err).WithField("zk_path", zkmeta.BrokerIDPath(id)).Error("cannot decode broker registration")
		return nil
	}
	info.Epoch = old.Epoch
	if slices.Equal(info.Endpoints, old.Endpoints) && info.Rack == old.Rack {
		return nil
	}
	l.log.WithFields(logrus.Fields{"target_broker": id, "endpoints": info.Endpoints}).Info("broker registration changed")
	l.ctx.liveBrokers[id] = info
	l.channels.removeBroker(id)
	l.channels.addBroker(info)
	b := newRequestBatch()
	b.addUpdateMetadata(l.ctx.liveOrShuttingDownBrokerIDs(), nil)
	l.sendBatch(b)
	return nil
}

type brokerChanges struct {
	newBrokers, bounced, dead []int32
	current                   map[int32]zkmeta.BrokerInfo
}

// onBrokerChange is KafkaController.processBrokerChange, in Kafka's order: new brokers start
// up, bounced brokers fail and start up again, dead brokers fail.
func (l *eventLoop) onBrokerChange() error {
	changes, err := l.refreshLiveBrokers()
	if err != nil {
		return err
	}
	if len(changes.newBrokers)+len(changes.bounced)+len(changes.dead) == 0 {
		return nil
	}
	l.log.WithFields(logrus.Fields{"new": changes.newBrokers, "bounced": changes.bounced, "dead": changes.dead}).Info("broker change")
	if len(changes.newBrokers) > 0 {
		for _, id := range changes.newBrokers {
			l.ctx.liveBrokers[id] = changes.current[id]
		}
		if err := l.onBrokerStartup(changes.newBrokers); err != nil {
			return err
		}
	}
	if len(changes.bounced) > 0 {
		for _, id := range changes.bounced {
			delete(l.ctx.liveBrokers, id)
			delete(l.ctx.shuttingDown, id)
		}
		if err := l.onBrokerFailure(changes.bounced); err != nil {
			return err
		}
		for _, id := range changes.bounced {
			l.ctx.liveBrokers[id] = changes.current[id]
		}
		if err := l.onBrokerStartup(changes.bounced); err != nil {
			return err
		}
	}
	if len(changes.dead) > 0 {
		for _, id := range changes.dead {
			delete(l.ctx.liveBrokers, id)
			delete(l.ctx.shuttingDown, id)
		}
		if err := l.onBrokerFailure(changes.dead); err != nil {
			return err
		}
	}
	return nil
}

// onBrokerStartup: UpdateMetadata (brokers only) to the others and with every partition to
// the new ones; LeaderAndIsr for the new brokers' replicas; then New/Offline partitions online.
func (l *eventLoop) onBrokerStartup(started []int32) error {
	var existing []int32
	for _, id := range l.ctx.liveOrShuttingDownBrokerIDs() {
		if !slices.Contains(started, id) {
			existing = append(existing, id)
		}
	}
	for _, id := range started {
		delete(l.ctx.replicasOnOfflineDirs, id) // a new incarnation reports its dirs afresh
	}
	b := newRequestBatch()
	b.addUpdateMetadata(existing, nil)
	l.sendBatch(b)
	b = newRequestBatch()
	b.addUpdateMetadata(started, l.partitionsWithLeadership())
	l.sendBatch(b)

	b = newRequestBatch()
	for _, id := range started {
		for _, tp := range l.ctx.partitionsOnBroker(id) {
			if _, ok := l.ctx.partitionLeadership[tp]; ok && !l.ctx.topicsToDelete[tp.Topic] {
				b.addLeaderAndIsr(l.ctx, []int32{id}, tp, false)
			}
		}
	}
	l.sendBatch(b)
	if err := l.triggerOnlinePartitionStateChange(); err != nil {
		return err
	}
	if err := l.resumeReassignmentsOn(started); err != nil {
		return err
	}
	return l.resumeDeletions()
}

func (l *eventLoop) partitionsWithLeadership() []TopicPartition {
	var out []TopicPartition
	for _, tp := range l.ctx.allPartitions() {
		if _, ok := l.ctx.partitionLeadership[tp]; ok {
			out = append(out, tp)
		}
	}
	return out
}

// onBrokerFailure (onReplicasBecomeOffline): partitions led by a dead broker go Offline and
// are re-elected; the dead brokers' replicas leave the ISR.
func (l *eventLoop) onBrokerFailure(dead []int32) error {
	for _, id := range dead {
		delete(l.ctx.replicasOnOfflineDirs, id)
	}
	l.pauseDeletionsOn(dead)
	offlineLed := l.markPartitionsWithOfflineLeader()
	if err := l.triggerOnlinePartitionStateChange(); err != nil {
		return err
	}
	if err := l.offlineReplicas(dead); err != nil {
		return err
	}
	if len(offlineLed) == 0 {
		b := newRequestBatch()
		b.addUpdateMetadata(l.ctx.liveOrShuttingDownBrokerIDs(), nil)
		l.sendBatch(b)
	}
	return nil
}

// markPartitionsWithOfflineLeader moves the partitions (not being deleted) whose leader is
// not online to OfflinePartition (partitionsWithOfflineLeader) and returns them.
func (l *eventLoop) markPartitionsWithOfflineLeader() []TopicPartition {
	var offlineLed []TopicPartition
	for _, tp := range l.ctx.allPartitions() {
		st, ok := l.ctx.partitionLeadership[tp]
		if ok && !l.ctx.isReplicaOnline(st.Leader, tp) && !l.ctx.topicsToDelete[tp.Topic] {
			if l.ctx.partitionStates[tp] != OfflinePartition {
				l.stateChange(tp, l.ctx.partitionStates[tp], OfflinePartition, "leader offline")
				l.ctx.partitionStates[tp] = OfflinePartition
			}
			offlineLed = append(offlineLed, tp)
		}
	}
	return offlineLed
}

// offlineReplicas moves the replicas on the given brokers to OfflineReplica: each leaves the
// ISR of its partitions (re-read from ZooKeeper first), and the other replicas get LeaderAndIsr.
func (l *eventLoop) offlineReplicas(brokers []int32) error {
	for _, replica := range brokers {
		var tps []TopicPartition
		for _, tp := range l.ctx.partitionsOnBroker(replica) {
			if !l.ctx.topicsToDelete[tp.Topic] {
				tps = append(tps, tp)
			}
		}
		if err := l.removeReplicaFromISRs(replica, tps); err != nil {
			return err
		}
	}
	return nil
}

// removeReplicaFromISRs is the OfflineReplica transition of one replica for tps.
func (l *eventLoop) removeReplicaFromISRs(replica int32, tps []TopicPartition) error {
	return l.removeReplicaFromISRsBatch(replica, tps, newRequestBatch())
}

// removeReplicaFromISRsBatch is removeReplicaFromISRs adding its requests to b, then sending b.
func (l *eventLoop) removeReplicaFromISRsBatch(replica int32, tps []TopicPartition, b *requestBatch) error {
	for attempt := 0; len(tps) > 0 && attempt < maxElectionAttempts; attempt++ {
		if err := l.refreshPartitionStates(tps); err != nil {
			return err
		}
		retry, err := l.applyUpdates(l.ctx.decideRemoveReplicaFromISR(replica, tps), b)
		if err != nil {
			return err
		}
		tps = retry
	}
	l.sendBatch(b)
	return nil
}

// ---- topics ----
