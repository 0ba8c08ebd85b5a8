package controller

// The legacy /admin/preferred_replica_election znode (PreferredReplicaElectionHandler,
// KafkaController.processReplicaLeaderElection with ZkTriggered): on its creation, and at
// failover, the controller runs a preferred election for the listed partitions that exist and
// are not being deleted, then deletes the znode. A malformed znode is logged and deleted.

import (
	"errors"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/zkmeta"
)

// zkPreferredReplicaElectionEvent: /admin/preferred_replica_election was created.
type zkPreferredReplicaElectionEvent struct{}

func (zkPreferredReplicaElectionEvent) String() string { return "ReplicaLeaderElection(ZkTriggered)" }

func (l *eventLoop) onZkPreferredReplicaElection() error {
	exists, ch, err := l.zk.ExistsW(zkmeta.PreferredReplicaElectionPath)
	if err != nil {
		return err
	}
	l.watch(ch, zkPreferredReplicaElectionEvent{})
	if !exists {
		return nil
	}
	entries, err := l.zk.GetPreferredReplicaElection()
	switch {
	case errors.Is(err, zkmeta.ErrNoNode):
		return nil
	case errors.Is(err, zkmeta.ErrBadJSON):
		l.log.WithError(err).WithField("zk_path", zkmeta.PreferredReplicaElectionPath).Error("malformed preferred replica election znode; deleting it")
		return l.zk.DeleteAsController(l.ctx.epochZkVersion, zkmeta.PreferredReplicaElectionPath)
	case err != nil:
		return err
	}
	var tps []TopicPartition
	seen := map[TopicPartition]bool{}
	for _, e := range entries {
		tp := TopicPartition{e.Topic, e.Partition}
		if seen[tp] {
			continue
		}
		seen[tp] = true
		switch {
		case len(l.ctx.replicas(tp)) == 0:
			l.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).Warn("skipping preferred replica election for a partition that does not exist")
		case l.ctx.topicsToDelete[tp.Topic]:
			l.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).Warn("skipping preferred replica election for a topic being deleted")
		default:
			tps = append(tps, tp)
		}
	}
	if len(tps) > 0 {
		l.log.WithField("partitions", len(tps)).Info("preferred replica election requested through zookeeper")
		if err := l.preferredReplicaElection(tps); err != nil {
			return err
		}
	}
	return l.zk.DeleteAsController(l.ctx.epochZkVersion, zkmeta.PreferredReplicaElectionPath)
}
