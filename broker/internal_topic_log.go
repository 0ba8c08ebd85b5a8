package broker

// internal_topic_log.go is what the group and transaction coordinators share of their view
// of an internal topic (__consumer_offsets, __transaction_state) through the ReplicaManager:
// whether this broker leads a partition and at which epoch, the leader's offsets, reads up to
// the log end (coordinators load their state from their own log, committed or not, as
// Kafka's loaders read with FetchLogEnd), and appends as that partition's leader.

import (
	"context"
	"time"

	"github.com/samsa-kafka/samsa/logstore"
)

// internalTopicLog reads and appends one internal topic's partitions as their leader.
type internalTopicLog struct {
	a     *APIs
	topic string
}

func (l *internalTopicLog) tp(p int32) logstore.TopicPartition {
	return logstore.TopicPartition{Topic: l.topic, Partition: p}
}

// LeaderEpoch reports whether this broker leads partition p and with which leader epoch
// (the coordinator epoch of the partition's coordinator).
func (l *internalTopicLog) LeaderEpoch(p int32) (int32, bool) {
	if l.a.Replicas == nil {
		return 0, false
	}
	part, err := l.a.Replicas.Partition(l.tp(p))
	if err != nil || !part.IsLeader() || part.Log() == nil {
		return 0, false
	}
	return part.LeaderEpoch(), true
}

func (l *internalTopicLog) leaderLog(p int32) (*logstore.Log, error) {
	if l.a.Replicas == nil {
		return nil, asKafka(ErrNotLeaderOrFollower)
	}
	part, err := l.a.Replicas.LeaderPartition(l.tp(p))
	if err != nil {
		return nil, asKafka(err)
	}
	lg := part.Log()
	if lg == nil {
		return nil, asKafka(ErrNotLeaderOrFollower)
	}
	return lg, nil
}

// Offsets returns the leader's log start and log end offsets of partition p.
func (l *internalTopicLog) Offsets(p int32) (int64, int64, error) {
	lg, err := l.leaderLog(p)
	if err != nil {
		return 0, 0, err
	}
	return lg.LogStartOffset(), lg.LogEndOffset(), nil
}

// Read returns batches of partition p from offset up to the log end (at least one batch).
func (l *internalTopicLog) Read(p int32, offset int64, maxBytes int32) ([]byte, error) {
	lg, err := l.leaderLog(p)
	if err != nil {
		return nil, err
	}
	info, err := lg.Read(offset, maxBytes, lg.LogEndOffset(), true)
	if err != nil {
		return nil, asKafka(err)
	}
	return info.Bytes()
}

// appendAs appends one batch to partition p as its leader with acks and params, and returns
// the batch's base offset.
func (l *internalTopicLog) appendAs(ctx context.Context, p int32, batch []byte, acks int16, timeout time.Duration, params AppendParams) (int64, error) {
	if l.a.Replicas == nil {
		return -1, asKafka(ErrNotLeaderOrFollower)
	}
	res := l.a.Replicas.AppendRecordsWith(ctx, timeout, acks, []logstore.TopicPartition{l.tp(p)}, [][]byte{batch}, params)
	if res[0].Err != nil {
		return -1, asKafka(res[0].Err)
	}
	return res[0].Info.FirstOffset, nil
}
