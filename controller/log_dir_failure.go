package controller

// Log dir failures (KafkaController's LogDirEventNotification and LeaderAndIsrResponseReceived,
// Kafka 3.7, ZooKeeper mode). A broker whose log dir fails writes
// /log_dir_event_notification/log_dir_event_<seq>; the controller deletes the notifications
// and sends LeaderAndIsr for every replica on the brokers named (onBrokerLogDirFailure). The
// brokers answer KAFKA_STORAGE_ERROR for replicas on an offline dir; the controller records
// them (replicasOnOfflineDirs, cleared when the broker registers again) and takes them
// offline: partitions they led elect another leader and they leave the ISRs
// (onReplicasBecomeOffline).

import (
	"errors"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/zkmeta"
)

type (
	// logDirEventNotificationEvent: children of /log_dir_event_notification changed.
	logDirEventNotificationEvent struct{}
	// leaderAndIsrResponseEvent: a broker answered LeaderAndIsr without a top-level error.
	leaderAndIsrResponseEvent struct {
		broker int32
		resp   *kmsg.LeaderAndISRResponse
	}
)

func (logDirEventNotificationEvent) String() string { return "LogDirEventNotification" }
func (leaderAndIsrResponseEvent) String() string    { return "LeaderAndIsrResponseReceived" }

// readLogDirEventNotifications lists the log dir event notifications, re-arming the child
// watch. A missing parent znode (brokers create it at startup) leaves no watch.
func (l *eventLoop) readLogDirEventNotifications() ([]string, error) {
	children, ch, err := l.zk.ChildrenW(zkmeta.LogDirEventNotificationPath)
	if errors.Is(err, zkmeta.ErrNoNode) {
		l.log.WithField("zk_path", zkmeta.LogDirEventNotificationPath).Warn("log dir event notification path is missing; not watching it")
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	l.watch(ch, logDirEventNotificationEvent{})
	var out []string
	for _, c := range children {
		if strings.HasPrefix(c, zkmeta.LogDirEventPrefix) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out, nil
}

func logDirEventPaths(names []string) []string {
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = zkmeta.LogDirEventNotificationPath + "/" + n
	}
	return paths
}

// deleteLogDirEventNotifications is the failover's deleteLogDirEventNotifications: it arms
// the watch and deletes the notifications present without acting on them.
func (l *eventLoop) deleteLogDirEventNotifications() error {
	names, err := l.readLogDirEventNotifications()
	if err != nil || len(names) == 0 {
		return err
	}
	l.log.WithField("notifications", len(names)).Info("deleting log dir event notifications")
	return l.zk.DeleteAsController(l.ctx.epochZkVersion, logDirEventPaths(names)...)
}

// onLogDirEventNotification is processLogDirEventNotification: the brokers named by the
// notifications get LeaderAndIsr for all their replicas, then the notifications read are
// deleted (also when handling them failed, as Kafka's finally does).
func (l *eventLoop) onLogDirEventNotification() error {
	names, err := l.readLogDirEventNotifications()
	if err != nil || len(names) == 0 {
		return err
	}
	seen := map[int32]bool{}
	var brokers []int32
	var readErr error
	for _, name := range names {
		path := zkmeta.LogDirEventNotificationPath + "/" + name
		data, _, err := l.zk.Get(path)
		switch {
		case errors.Is(err, zkmeta.ErrNoNode):
			continue
		case err != nil:
			readErr = err
			continue
		}
		id, err := zkmeta.DecodeLogDirEvent(data)
		if err != nil {
			l.log.WithError(err).WithField("zk_path", path).Error("malformed log dir event notification; deleting it")
			continue
		}
		if !seen[id] {
			seen[id] = true
			brokers = append(brokers, id)
		}
	}
	if readErr == nil || !isFatal(readErr) {
		l.onBrokerLogDirFailure(brokers)
	}
	delErr := l.zk.DeleteAsController(l.ctx.epochZkVersion, logDirEventPaths(names)...)
	if readErr != nil {
		return readErr
	}
	return delErr
}

// onBrokerLogDirFailure asks the brokers about all their replicas with LeaderAndIsr (the
// OnlineReplica transition); replicas on a failed dir come back as KAFKA_STORAGE_ERROR.
func (l *eventLoop) onBrokerLogDirFailure(brokers []int32) {
	if len(brokers) == 0 {
		return
	}
	l.log.WithField("brokers", brokers).Info("handling log dir failure")
	b := newRequestBatch()
	for _, id := range brokers {
		for _, tp := range l.ctx.partitionsOnBroker(id) {
			if _, ok := l.ctx.partitionLeadership[tp]; ok && !l.ctx.topicsToDelete[tp.Topic] {
				b.addLeaderAndIsr(l.ctx, []int32{id}, tp, false) // dead brokers are skipped
			}
		}
	}
	l.sendBatch(b)
}

// onLeaderAndIsrResponse is processLeaderAndIsrResponseReceived: partitions answered with
// KAFKA_STORAGE_ERROR are on an offline dir of the broker, those answered without error are
// not; replicas newly found offline are taken offline.
func (l *eventLoop) onLeaderAndIsrResponse(broker int32, r *kmsg.LeaderAndISRResponse) error {
	// A response from a broker that has since gone is not acted on: its failure already took
	// its replicas offline, and a new incarnation starts with a clean set.
	if r.ErrorCode != 0 || !l.ctx.isRegistered(broker) {
		return nil
	}
	prev := l.ctx.replicasOnOfflineDirs[broker]
	if len(prev) == 0 && !hasStorageError(r) {
		return nil // the common case: nothing to record
	}
	var offline, online []TopicPartition
	add := func(tp TopicPartition, code int16) {
		switch code {
		case kerr.KafkaStorageError.Code:
			offline = append(offline, tp)
		case 0:
			online = append(online, tp)
		}
	}
	for _, p := range r.Partitions { // v0-4
		add(TopicPartition{p.Topic, p.Partition}, p.ErrorCode)
	}
	if len(r.Topics) > 0 { // v5+: by topic id
		names := make(map[[16]byte]string, len(l.ctx.topics))
		for name, t := range l.ctx.topics {
			names[t.id] = name
		}
		for _, t := range r.Topics {
			name, ok := names[t.TopicID]
			if !ok {
				continue // deleted since
			}
			for _, p := range t.Partitions {
				add(TopicPartition{name, p.Partition}, p.ErrorCode)
			}
		}
	}
	cur := make(map[TopicPartition]bool, len(prev)+len(offline))
	for tp := range prev {
		cur[tp] = true
	}
	for _, tp := range online {
		delete(cur, tp)
	}
	var newOffline []TopicPartition
	for _, tp := range offline {
		if !cur[tp] {
			newOffline = append(newOffline, tp)
		}
		cur[tp] = true
	}
	if len(cur) == 0 {
		delete(l.ctx.replicasOnOfflineDirs, broker)
	} else {
		l.ctx.replicasOnOfflineDirs[broker] = cur
	}
	if len(newOffline) == 0 {
		return nil
	}
	slices.SortFunc(newOffline, compareTP)
	newOffline = slices.CompactFunc(newOffline, func(a, b TopicPartition) bool { return a == b })
	l.stateLog.WithFields(logrus.Fields{"target_broker": broker, "partitions": newOffline}).Info("marking replicas on an offline log dir as offline")
	return l.onReplicasBecomeOffline(broker, newOffline)
}

// onReplicasBecomeOffline takes replicas of one broker offline: partitions they led go to
// OfflinePartition and are elected again, then each replica moves to OfflineReplica
// (StopReplica without delete, and removal from the ISR). Replicas of topics being deleted
// fail their deletion instead, which is retried later.
func (l *eventLoop) onReplicasBecomeOffline(broker int32, tps []TopicPartition) error {
	var keep []TopicPartition
	for _, tp := range tps {
		if l.ctx.topicsToDelete[tp.Topic] {
			if _, started := l.ctx.deletion[tp.Topic]; started {
				l.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "target_broker": broker}).
					Warn("replica deletion failed: replica is on an offline log dir")
				delete(l.ctx.deletion, tp.Topic) // restart later
			}
			continue
		}
		keep = append(keep, tp)
	}
	l.markPartitionsWithOfflineLeader()
	if err := l.triggerOnlinePartitionStateChange(); err != nil {
		return err
	}
	if len(keep) == 0 {
		b := newRequestBatch()
		b.addUpdateMetadata(l.ctx.liveOrShuttingDownBrokerIDs(), nil)
		l.sendBatch(b)
		return nil
	}
	b := newRequestBatch()
	for _, tp := range keep {
		b.addStopReplica(l.ctx, []int32{broker}, tp, false)
	}
	return l.removeReplicaFromISRsBatch(broker, keep, b)
}

func hasStorageError(r *kmsg.LeaderAndISRResponse) bool {
	for _, p := range r.Partitions {
		if p.ErrorCode == kerr.KafkaStorageError.Code {
			return true
		}
	}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == kerr.KafkaStorageError.Code {
				return true
			}
		}
	}
	return false
}
