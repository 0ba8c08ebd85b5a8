package broker

// 34_alter_replica_log_dirs.go — AlterReplicaLogDirs (key 34) v0-2
// (KafkaApis.handleAlterReplicaLogDirsRequest, ReplicaManager.alterReplicaLogDirs): move
// replicas of this broker to other log dirs. ALTER on the cluster is required. For each
// partition: the dir must be one of log.dirs, absolute as configured (LOG_DIR_NOT_FOUND)
// and online (KAFKA_STORAGE_ERROR); a move in progress to another dir is stopped and its
// future log deleted; the dir is remembered so a log created later goes there, and a
// partition not hosted yet answers REPLICA_NOT_AVAILABLE (UNKNOWN_TOPIC_OR_PARTITION if the
// metadata does not know it either); otherwise a future log is created
// in the dir and the mover (replica_alter_log_dirs.go) starts copying.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/logstore"
)

func init() { registerAPI(0, 2, (*APIs).handleAlterReplicaLogDirs) }

func (a *APIs) handleAlterReplicaLogDirs(ctx context.Context, rc *RequestContext, req *kmsg.AlterReplicaLogDirsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	// AlterReplicaLogDirsRequest.partitionDirs: a partition named twice keeps the last dir.
	dirs := map[logstore.TopicPartition]string{}
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				dirs[logstore.TopicPartition{Topic: t.Topic, Partition: p}] = d.Dir
			}
		}
	}
	var codes map[logstore.TopicPartition]int16
	if a.authorizeCluster(rc, kmsg.ACLOperationAlter) {
		codes = a.Replicas.AlterReplicaLogDirs(dirs)
	} else {
		codes = make(map[logstore.TopicPartition]int16, len(dirs))
		for tp := range dirs {
			codes[tp] = kerr.ClusterAuthorizationFailed.Code
		}
	}
	tps := make([]logstore.TopicPartition, 0, len(codes))
	for tp := range codes {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		return tps[i].Topic < tps[j].Topic || tps[i].Topic == tps[j].Topic && tps[i].Partition < tps[j].Partition
	})
	for _, tp := range tps {
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewAlterReplicaLogDirsResponseTopic()
			t.Topic = tp.Topic
			resp.Topics = append(resp.Topics, t)
		}
		rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
		rp.Partition, rp.ErrorCode = tp.Partition, codes[tp]
		t := &resp.Topics[len(resp.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	return resp, nil
}

// AlterReplicaLogDirs is ReplicaManager.alterReplicaLogDirs: the error code of each
// partition's move to its dir.
func (rm *ReplicaManager) AlterReplicaLogDirs(dirs map[logstore.TopicPartition]string) map[logstore.TopicPartition]int16 {
	out := make(map[logstore.TopicPartition]int16, len(dirs))
	rm.stateMu.Lock()
	defer rm.stateMu.Unlock()
	for tp, dir := range dirs {
		err := rm.alterReplicaLogDir(tp, dir)
		code := alterReplicaLogDirCode(err)
		if err != nil {
			rm.log.WithError(err).WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "dir": dir}).
				Warn("unable to alter log dirs")
		}
		out[tp] = code
	}
	return out
}

// errReplicaNotAvailable is the partition not (yet) hosted here: Kafka answers
// REPLICA_NOT_AVAILABLE rather than NOT_LEADER_OR_FOLLOWER for this API.
var errReplicaNotAvailable = errors.New("replica not available")

func alterReplicaLogDirCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, kerr.InvalidTopicException):
		return kerr.InvalidTopicException.Code
	case errors.Is(err, logstore.ErrLogDirNotFound):
		return kerr.LogDirNotFound.Code
	case errors.Is(err, logstore.ErrKafkaStorage):
		return kerr.KafkaStorageError.Code
	case errors.Is(err, errReplicaNotAvailable):
		return kerr.ReplicaNotAvailable.Code
	}
	return ErrorCode(err)
}

func (rm *ReplicaManager) alterReplicaLogDir(tp logstore.TopicPartition, dir string) error {
	fl, ok := rm.cfg.Logs.(futureLogManager)
	if !ok {
		return fmt.Errorf("%s: log-dir moves are not supported by this log manager: %w", tp, logstore.ErrKafkaStorage)
	}
	if logstore.FutureDirNameTooLong(tp) { // KAFKA-4893
		return fmt.Errorf("the topic name is too long: %w", kerr.InvalidTopicException)
	}
	online, err := fl.IsLogDirOnline(dir)
	if err != nil {
		return err
	}
	if !online {
		return fmt.Errorf("log directory %s is offline: %w", dir, logstore.ErrKafkaStorage)
	}
	rm.mu.RLock()
	p, hosted := rm.partitions[tp]
	rm.mu.RUnlock()
	if hosted {
		if rm.cfg.Logs.LogDirOffline(tp) {
			return fmt.Errorf("partition %s is offline: %w", tp, logstore.ErrKafkaStorage)
		}
		// Partition.futureReplicaDirChanged: a move elsewhere stops and its copy goes.
		if fut, ok := fl.GetFutureLog(tp); ok && logParentDir(fut) != dir {
			rm.alterLogDirs.removePartitions(tp)
			if err := fl.DeleteFutureLog(tp); err != nil {
				return fmt.Errorf("stop moving %s to %s: %w", tp, logParentDir(fut), err)
			}
		}
	}
	fl.MaybeUpdatePreferredLogDir(tp, dir)
	if !hosted {
		// getPartitionOrException: a partition the metadata knows is not hosted here yet
		// (REPLICA_NOT_AVAILABLE, which the tool retries); an unknown one is
		// UNKNOWN_TOPIC_OR_PARTITION.
		if _, err := rm.Partition(tp); !errors.Is(err, ErrNotLeaderOrFollower) {
			return err
		}
		return fmt.Errorf("partition %s is not hosted on this broker: %w", tp, errReplicaNotAvailable)
	}
	created, err := rm.maybeCreateFutureReplica(p, fl, dir)
	if err != nil {
		return err
	}
	if created {
		rm.alterLogDirs.addPartition(p)
	}
	return nil
}

// maybeCreateFutureReplica is Partition.maybeCreateFutureReplica: a future log in dir
// unless the current log is there already. It reports whether the mover must have the
// partition: also when a move to dir is under way (as after a restart).
func (rm *ReplicaManager) maybeCreateFutureReplica(p *Partition, fl futureLogManager, dir string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.mu.log
	if cur == nil {
		return false, fmt.Errorf("log for partition %s is not available on broker %d: %w", p.tp, rm.cfg.BrokerID, errReplicaNotAvailable)
	}
	if logParentDir(cur) == dir {
		rm.log.WithFields(logrus.Fields{"topic": p.tp.Topic, "partition": p.tp.Partition, "dir": dir}).
			Info("current log directory is same as requested log dir; skipping future replica creation")
		return false, nil
	}
	if fut, ok := fl.GetFutureLog(p.tp); ok {
		if logParentDir(fut) != dir {
			return false, fmt.Errorf("the future log dir %s of %s is different from the requested log dir %s", logParentDir(fut), p.tp, dir)
		}
		return true, nil // adding it to the mover again is harmless (never under p.mu: a round takes it)
	}
	topicID := cur.TopicID()
	if topicID == ([16]byte{}) {
		topicID = p.mu.topicID
	}
	_, created, err := fl.CreateFutureLog(p.tp, topicID, cur.Config(), dir)
	if err != nil {
		return false, err
	}
	return created, nil
}

// logParentDir is the log dir holding l (UnifiedLog.parentDir).
func logParentDir(l *logstore.Log) string { return filepath.Dir(l.Dir()) }
