package broker

// group_glue.go connects the group coordinator (coordinator/group) to this broker, as
// KafkaServer does with GroupCoordinator: it implements group.Log over the ReplicaManager's
// __consumer_offsets partitions (appends as leader with acks=-1, reads up to the log end),
// builds the coordinator from the broker's config, and creates __consumer_offsets on first
// use (KafkaApis.getOrCreateInternalTopic).
//
// The coordinator is created on the first group request or LeaderAndIsr for an offsets
// partition (a per-APIs registry); it owns no long-lived goroutine (its timers run on one
// runtime timer), and Broker.Shutdown calls APIs.ShutdownGroupCoordinator. LeaderAndIsr and
// StopReplica (04, 05) load and unload offsets partitions at once; a one-second sweep in the
// coordinator is only a safety net.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-kafka/samsa/coordinator/group"
	"github.com/samsa-kafka/samsa/logstore"
)

// GroupMetadataTopicName is Topic.GROUP_METADATA_TOPIC_NAME.
const GroupMetadataTopicName = "__consumer_offsets"

// groupCoordinator returns this broker's coordinator, creating and starting it once.
func (a *APIs) groupCoordinator() *group.Coordinator {
	a.services.mu.Lock()
	defer a.services.mu.Unlock()
	if a.services.groups == nil {
		a.services.groups = group.New(a.groupConfig(), newOffsetsLog(a))
		a.services.groups.Start()
	}
	return a.services.groups
}

// ShutdownGroupCoordinator stops the coordinator if one was started (KafkaServer.shutdown:
// groupCoordinator.shutdown after the socket servers).
func (a *APIs) ShutdownGroupCoordinator() {
	a.services.mu.Lock()
	c := a.services.groups
	a.services.groups = nil
	a.services.mu.Unlock()
	if c != nil {
		c.Shutdown()
	}
}

// OnOffsetsLeadershipChange is the GroupCoordinator part of KafkaApis.handleLeaderAndIsr's
// onLeadershipChange and of StopReplica: load a partition this broker now leads, unload one
// it does not. Safe to call for any topic.
func (a *APIs) OnOffsetsLeadershipChange(tp logstore.TopicPartition, isLeader bool, leaderEpoch int32) {
	if tp.Topic != GroupMetadataTopicName {
		return
	}
	c := a.groupCoordinator()
	if isLeader {
		c.OnElection(tp.Partition, leaderEpoch)
	} else {
		c.OnResignation(tp.Partition)
	}
}

func (a *APIs) groupConfig() group.Config {
	var props map[string]string
	cfg := group.Config{BrokerID: a.BrokerID, NumPartitions: 50, Logger: a.Log}
	if a.Config != nil {
		props = a.Config.Props
		if a.Config.OffsetsTopicNumPartitions > 0 {
			cfg.NumPartitions = a.Config.OffsetsTopicNumPartitions
		}
	}
	ms := func(key string, def int64) time.Duration {
		return time.Duration(propInt(props, key, def)) * time.Millisecond
	}
	cfg.MinSessionTimeout = ms("group.min.session.timeout.ms", 6000)
	cfg.MaxSessionTimeout = ms("group.max.session.timeout.ms", 1800000)
	cfg.InitialRebalanceDelay = ms("group.initial.rebalance.delay.ms", 3000)
	if a.Config != nil && a.Config.GroupInitialRebalanceDelay > 0 {
		cfg.InitialRebalanceDelay = a.Config.GroupInitialRebalanceDelay
	}
	if cfg.InitialRebalanceDelay == 0 {
		cfg.InitialRebalanceDelay = -1 // explicit 0: no delay
	}
	cfg.MaxSize = int(propInt(props, "group.max.size", 2147483647))
	cfg.OffsetMetadataMaxBytes = int(propInt(props, "offset.metadata.max.bytes", 4096))
	cfg.OffsetsRetention = time.Duration(propInt(props, "offsets.retention.minutes", 10080)) * time.Minute
	cfg.OffsetsRetentionCheckInterval = ms("offsets.retention.check.interval.ms", 600000)
	cfg.OffsetCommitTimeout = ms("offsets.commit.timeout.ms", 5000)
	cfg.LoadBufferSize = int32(propInt(props, "offsets.load.buffer.size", 5242880))
	return cfg
}

// offsetsLog implements group.Log over the ReplicaManager.
type offsetsLog struct{ internalTopicLog }

func newOffsetsLog(a *APIs) *offsetsLog {
	return &offsetsLog{internalTopicLog{a: a, topic: GroupMetadataTopicName}}
}

func offsetsTP(p int32) logstore.TopicPartition {
	return logstore.TopicPartition{Topic: GroupMetadataTopicName, Partition: p}
}

// asKafka wraps err so that errors.As finds its Kafka error.
func asKafka(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", kerr.ErrorForCode(ErrorCode(err)), err)
}

// Append appends as the group coordinator (ReplicaManager.appendForGroup: origin
// COORDINATOR, so no producer sequence checks).
func (l *offsetsLog) Append(ctx context.Context, p int32, batch []byte, acksAll bool, timeout time.Duration) (int64, error) {
	acks := int16(1)
	if acksAll {
		acks = -1
	}
	return l.appendAs(ctx, p, batch, acks, timeout, AppendParams{Origin: logstore.OriginCoordinator})
}

// VerifyTransaction is GroupCoordinator.handleTxnCommitOffsets' call of
// ReplicaManager.maybeStartTransactionVerificationForPartition on the group's offsets
// partition (no-op when transaction.partition.verification.enable is false), with
// NO_SEQUENCE as Kafka's: the coordinator's batches are not sequence-checked.
func (l *offsetsLog) VerifyTransaction(ctx context.Context, p int32, transactionalID string, producerID int64, producerEpoch int16) (group.VerificationGuard, error) {
	if l.a.Replicas == nil {
		return nil, asKafka(ErrNotLeaderOrFollower)
	}
	guard, err := l.a.Replicas.MaybeStartTransactionVerificationForPartition(ctx, offsetsTP(p), transactionalID, producerID, producerEpoch, -1)
	if err != nil {
		return nil, asKafka(err)
	}
	if guard == nil {
		return nil, nil // a nil *VerificationGuard must not become a non-nil interface
	}
	return guard, nil
}

// AppendTransactional appends a TxnOffsetCommit batch as the group coordinator with acks=-1,
// carrying the verification guard (ReplicaManager.appendForGroup with verificationGuards).
func (l *offsetsLog) AppendTransactional(ctx context.Context, p int32, batch []byte, guard group.VerificationGuard, timeout time.Duration) (int64, error) {
	params := AppendParams{Origin: logstore.OriginCoordinator}
	if g, ok := guard.(*logstore.VerificationGuard); ok {
		params.Guard = g
	}
	return l.appendAs(ctx, p, batch, -1, timeout, params)
}

// findGroupCoordinator is KafkaApis.getCoordinator for key type GROUP: the leader of the
// group's offsets partition on the request's listener; COORDINATOR_NOT_AVAILABLE while the
// topic is being created, has no leader, or too few brokers are alive to create it.
func (a *APIs) findGroupCoordinator(ctx context.Context, rc *RequestContext, key string) (node int32, host string, port int32, err *kerr.Error) {
	c := a.groupCoordinator()
	p := c.PartitionFor(key)
	if a.Metadata == nil {
		return -1, "", -1, kerr.CoordinatorNotAvailable
	}
	if !a.Metadata.Contains(GroupMetadataTopicName) {
		a.createOffsetsTopic(ctx)
		return -1, "", -1, kerr.CoordinatorNotAvailable
	}
	pm, ok := a.Metadata.Partition(offsetsTP(p))
	if !ok || pm.Leader == NoLeader {
		return -1, "", -1, kerr.CoordinatorNotAvailable
	}
	b, ok := a.Metadata.Broker(pm.Leader)
	if !ok {
		return -1, "", -1, kerr.CoordinatorNotAvailable
	}
	ep, ok := b.Endpoint(rc.ListenerName)
	if !ok {
		return -1, "", -1, kerr.CoordinatorNotAvailable
	}
	if pm.Leader == a.BrokerID {
		// Make loading start now rather than on the member's first request.
		if l := newOffsetsLog(a); l != nil {
			if epoch, leader := l.LeaderEpoch(p); leader {
				c.OnElection(p, epoch)
			}
		}
	}
	return pm.Leader, ep.Host, ep.Port, nil
}

// createOffsetsTopic is KafkaApis.createInternalTopic: Kafka refuses to create
// __consumer_offsets while fewer brokers are alive than offsets.topic.replication.factor.
func (a *APIs) createOffsetsTopic(ctx context.Context) {
	rf := int16(3)
	if a.Config != nil && a.Config.OffsetsTopicReplicationFactor > 0 {
		rf = a.Config.OffsetsTopicReplicationFactor
	}
	if alive := len(a.Metadata.AliveBrokers()); alive < int(rf) {
		a.Log.WithField("alive_brokers", alive).WithField("replication_factor", rf).
			Info("number of alive brokers does not meet the required replication factor for the offsets topic")
		return
	}
	if a.AutoCreateTopic == nil {
		return
	}
	err := a.AutoCreateTopic(ctx, GroupMetadataTopicName)
	var ke *kerr.Error
	if err != nil && !(errors.As(err, &ke) && ke == kerr.TopicAlreadyExists) {
		a.Log.WithError(err).Warn("could not create the offsets topic")
	}
}

// clientHost is Kafka's clientAddress.toString, e.g. "/127.0.0.1".
func clientHost(rc *RequestContext) string {
	if rc == nil || rc.RemoteAddr == nil {
		return ""
	}
	host := rc.RemoteAddr.String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return "/" + host
}

func errCode(e *kerr.Error) int16 {
	if e == nil {
		return 0
	}
	return e.Code
}
