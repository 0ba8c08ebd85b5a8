package broker

// replica_manager.go mirrors kafka.server.ReplicaManager: the partitions this broker hosts,
// leader/follower transitions from LeaderAndIsr, StopReplica, the controller-epoch fence for
// the controller's requests. The produce/fetch data path over the local logs (appendRecords,
// readFromLocalLog) is in replica_manager_data.go; waiting (acks=-1, fetch min.bytes) in
// purgatory.go.
//
// Replication: followers fetch through the ReplicaFetcherManager (fetcher.go); leaders
// shrink the ISR on a ticker (replica.lag.time.max.ms/2) and expand it on follower fetches,
// proposing each change to the controller with AlterPartition (alter_partition.go).

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/kclient"
	"github.com/samsa-kafka/samsa/logstore"
)

// LogManager is the part of logstore.Manager the ReplicaManager uses; *logstore.Manager
// implements it (tests may use a smaller one over logstore.OpenLog).
type LogManager interface {
	GetOrCreateLog(tp logstore.TopicPartition, topicID [16]byte, cfg logstore.LogConfig) (*logstore.Log, error)
	GetLog(tp logstore.TopicPartition) (*logstore.Log, bool)
	DeleteLog(tp logstore.TopicPartition) error
	InitializingLog(tp logstore.TopicPartition) *logstore.LogInit
	FinishedInitializingLog(li *logstore.LogInit) (reload bool)
	LogDirOffline(tp logstore.TopicPartition) bool
}

var _ LogManager = (*logstore.Manager)(nil)

// ReplicaManagerConfig holds a ReplicaManager's dependencies.
type ReplicaManagerConfig struct {
	BrokerID int32
	Config   *config.Config // nil in some tests: Kafka defaults apply
	Logs     LogManager
	Metadata *MetadataCache
	// TopicConfig returns a topic's overrides (/config/topics/<topic>) when a log is created,
	// as Kafka's LogManager reads them from ZooKeeper. Nil means no overrides.
	TopicConfig func(topic string) (map[string]string, error)
	Log         *logrus.Entry
	Now         func() time.Time
	// BrokerEpoch is this broker's registration czxid, sent in follower fetches (v15+) and
	// AlterPartition. Nil means -1.
	BrokerEpoch func() int64
	// Dialer connects to other brokers' inter-broker listener (TLS/SASL as configured); nil
	// dials plain TCP. The fetchers, AlterPartition, txn verification and the APIs' inter-broker
	// senders all use it.
	Dialer *kclient.Dialer
	// DynamicConfig, when set, gets the replication quotas registered for live changes of
	// the per-broker throttle rates (replication_quota.go).
	DynamicConfig *DynamicBrokerConfig
}

// ReplicaManager is safe for concurrent use. stateMu (Kafka's replicaStateChangeLock)
// serializes the controller's requests; mu guards the partition map only.
type ReplicaManager struct {
	cfg      ReplicaManagerConfig
	log      *logrus.Entry
	stateLog *logrus.Entry // component=state.change, like Kafka's state-change log

	stateMu         sync.Mutex
	controllerEpoch int32 // guarded by stateMu; 0 = none seen (KafkaController.InitialControllerEpoch)

	mu         sync.RWMutex
	partitions map[logstore.TopicPartition]*Partition

	leadershipHook atomic.Pointer[func(leaders, followers []logstore.TopicPartition)]

	fetchers  *ReplicaFetcherManager
	verifier  txnVerifier // AddPartitionsToTxnManager
	partHooks *partitionHooks
	alter     *alterPartitionManager
	bgCancel  context.CancelFunc
	bgWG      sync.WaitGroup

	// replicationQuotas are the leader and follower replication throttles.
	replicationQuotas *ReplicationQuotas
	// alterLogDirs moves replicas between this broker's log dirs (replica_alter_log_dirs.go).
	alterLogDirs *alterLogDirsManager
	// replicationBytesIn is ReplicationBytesInPerSec (metrics_api.go); nil with metrics off.
	replicationBytesIn interface{ Add(float64) }
}

// OnLeadershipChange registers fn to be called after every LeaderAndIsr with the partitions
// this broker just became leader and follower of (KafkaApis' onLeadershipChange callback:
// the group coordinator loads or unloads __consumer_offsets partitions). fn runs on the
// request's goroutine with no ReplicaManager lock held; it must not block for long.
func (rm *ReplicaManager) OnLeadershipChange(fn func(leaders, followers []logstore.TopicPartition)) {
	rm.leadershipHook.Store(&fn)
}

// NewReplicaManager returns a ReplicaManager hosting no partitions; LeaderAndIsr adds them.
func NewReplicaManager(cfg ReplicaManagerConfig) *ReplicaManager {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = logrus.NewEntry(logrus.StandardLogger())
	}
	if cfg.Metadata == nil {
		cfg.Metadata = NewMetadataCache(cfg.BrokerID)
	}
	rm := &ReplicaManager{
		cfg:        cfg,
		log:        cfg.Log.WithFields(logrus.Fields{"component": "replica.manager", "broker": cfg.BrokerID}),
		stateLog:   cfg.Log.WithFields(logrus.Fields{"component": "state.change", "broker": cfg.BrokerID}),
		partitions: map[logstore.TopicPartition]*Partition{},
	}
	rm.replicationQuotas = newReplicationQuotas(rm, cfg.Config, cfg.DynamicConfig)
	rm.fetchers = newReplicaFetcherManager(rm, rm.fetcherConfig(), rm.log)
	rm.alterLogDirs = newAlterLogDirsManager(rm)
	rm.alter = newAlterPartitionManager(rm)
	rm.verifier = rm.newTxnVerifier()
	rm.partHooks = &partitionHooks{
		alterPartition: rm.alter.submit,
		isBrokerAlive:  rm.cfg.Metadata.IsBrokerAlive,
	}
	return rm
}

// newTxnVerifier builds the AddPartitionsToTxnManager from the broker config: the
// inter-broker listener, transaction.state.log.num.partitions and request.timeout.ms.
func (rm *ReplicaManager) newTxnVerifier() txnVerifier {
	listener, timeout := "PLAINTEXT", 30*time.Second
	var props map[string]string
	if c := rm.cfg.Config; c != nil {
		props = c.Props
		if c.InterBrokerListenerName != "" {
			listener = c.InterBrokerListenerName
		}
		if c.RequestTimeout > 0 {
			timeout = c.RequestTimeout
		}
	}
	numPartitions := func() int32 {
		n := propInt(props, "transaction.state.log.num.partitions", 50)
		if n <= 0 || n > 1<<31-1 {
			return 50
		}
		return int32(n)
	}
	m := newAddPartitionsToTxnManager(rm.cfg.BrokerID, rm.cfg.Metadata, listener, numPartitions, timeout, rm.cfg.Log)
	m.dialer = rm.cfg.Dialer
	return m
}

func (rm *ReplicaManager) fetcherConfig() FetcherConfig {
	c := rm.cfg.Config
	if c == nil {
		return FetcherConfig{}
	}
	return FetcherConfig{
		NumFetchers:      c.NumReplicaFetchers,
		MaxBytes:         c.ReplicaFetchMaxBytes,
		ResponseMaxBytes: c.ReplicaFetchResponseMaxBytes,
		MaxWait:          c.ReplicaFetchWaitMax,
		MinBytes:         c.ReplicaFetchMinBytes,
		Backoff:          c.ReplicaFetchBackoff,
		SocketTimeout:    c.ReplicaSocketTimeout,
		ReceiveBuffer:    int(propInt(c.Props, "replica.socket.receive.buffer.bytes", 65536)),
		Listener:         c.InterBrokerListenerName,
	}
}

// Startup (ReplicaManager.startup) starts the replica fetchers' manager, the AlterPartition
// sender and the ISR expiration task (every replica.lag.time.max.ms/2). They run until
// Shutdown.
func (rm *ReplicaManager) Startup(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	rm.bgCancel = cancel
	rm.fetchers.start(ctx)
	rm.alter.start(ctx)
	rm.alterLogDirs.start(ctx, &rm.bgWG)
	rm.bgWG.Add(1)
	go func() {
		defer rm.bgWG.Done()
		t := time.NewTicker(max(rm.lagMax()/2, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				for _, p := range rm.Partitions() {
					p.maybeShrinkISR()
				}
			}
		}
	}()
}

func (rm *ReplicaManager) brokerEpoch() int64 {
	if rm.cfg.BrokerEpoch == nil {
		return -1
	}
	return rm.cfg.BrokerEpoch()
}

// truncater is the part of logstore.Manager that truncates follower logs.
type truncater interface {
	TruncateTo(tp logstore.TopicPartition, offset int64) error
	TruncateFullyAndStartAt(tp logstore.TopicPartition, offset int64) error
}

// truncateTo goes through the LogManager when it can (LogManager.truncateTo keeps the
// cleaner checkpoint and recovery points right).
func (rm *ReplicaManager) truncateTo(tp logstore.TopicPartition, l *logstore.Log, offset int64) error {
	defer rm.alterLogDirs.markForTruncation(tp, offset, false) // a move's future log follows
	if t, ok := rm.cfg.Logs.(truncater); ok {
		return t.TruncateTo(tp, offset)
	}
	return l.TruncateTo(offset)
}

func (rm *ReplicaManager) truncateFullyAndStartAt(tp logstore.TopicPartition, l *logstore.Log, offset int64) error {
	defer rm.alterLogDirs.markForTruncation(tp, offset, true)
	if t, ok := rm.cfg.Logs.(truncater); ok {
		return t.TruncateFullyAndStartAt(tp, offset)
	}
	return l.TruncateFullyAndStartAt(offset)
}

// ControllerEpoch returns the latest controller epoch seen.
func (rm *ReplicaManager) ControllerEpoch() int32 {
	rm.stateMu.Lock()
	defer rm.stateMu.Unlock()
	return rm.controllerEpoch
}

func (rm *ReplicaManager) lagMax() time.Duration {
	if rm.cfg.Config != nil && rm.cfg.Config.ReplicaLagTimeMax > 0 {
		return rm.cfg.Config.ReplicaLagTimeMax
	}
	return 30 * time.Second
}

// Partition returns a hosted partition: UNKNOWN_TOPIC_OR_PARTITION if neither hosted nor
// known to the metadata cache, NOT_LEADER_OR_FOLLOWER if known but not hosted here
// (ReplicaManager.getPartitionOrError).
func (rm *ReplicaManager) Partition(tp logstore.TopicPartition) (*Partition, error) {
	rm.mu.RLock()
	p, ok := rm.partitions[tp]
	rm.mu.RUnlock()
	if ok {
		return p, nil
	}
	if _, known := rm.cfg.Metadata.Partition(tp); known {
		return nil, fmt.Errorf("%s: not hosted here: %w", tp, ErrNotLeaderOrFollower)
	}
	return nil, fmt.Errorf("%s: %w", tp, ErrUnknownTopicOrPartition)
}

// LeaderPartition returns the partition if this broker leads it.
func (rm *ReplicaManager) LeaderPartition(tp logstore.TopicPartition) (*Partition, error) {
	p, err := rm.Partition(tp)
	if err != nil {
		return nil, err
	}
	if !p.IsLeader() {
		return nil, fmt.Errorf("%s: %w", tp, ErrNotLeaderOrFollower)
	}
	return p, nil
}

// Partitions returns every hosted partition.
func (rm *ReplicaManager) Partitions() []*Partition {
	rm.mu.RLock()
	defer rm.mu.RUnlock()
	out := make([]*Partition, 0, len(rm.partitions))
	for _, p := range rm.partitions {
		out = append(out, p)
	}
	return out
}

func (rm *ReplicaManager) getOrCreatePartition(tp logstore.TopicPartition) *Partition {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	p, ok := rm.partitions[tp]
	if !ok {
		p = newPartition(tp, rm.cfg.BrokerID, rm.lagMax(), rm.cfg.Now, rm.cfg.Log)
		p.hooks = rm.partHooks
		rm.partitions[tp] = p
	}
	return p
}

// MaybeUpdateMetadataCache (ReplicaManager.maybeUpdateMetadataCache) fences a stale
// controller and applies UpdateMetadata to the cache. Partitions the cache dropped
// (deleted topics) are returned for the caller's cleanup.
func (rm *ReplicaManager) MaybeUpdateMetadataCache(req *kmsg.UpdateMetadataRequest) ([]logstore.TopicPartition, error) {
	rm.stateMu.Lock()
	defer rm.stateMu.Unlock()
	if req.ControllerEpoch < rm.controllerEpoch {
		rm.stateLog.WithFields(logrus.Fields{"controller_id": req.ControllerID, "controller_epoch": req.ControllerEpoch,
			"current_controller_epoch": rm.controllerEpoch}).Warn("ignoring UpdateMetadata from stale controller epoch")
		return nil, fmt.Errorf("UpdateMetadata epoch %d < %d: %w", req.ControllerEpoch, rm.controllerEpoch, ErrStaleControllerEpoch)
	}
	rm.controllerEpoch = req.ControllerEpoch
	return rm.cfg.Metadata.UpdateMetadata(req), nil
}

// BecomeLeaderOrFollower (ReplicaManager.becomeLeaderOrFollower) applies a LeaderAndIsr
// request: fences a stale controller epoch, checks each partition's leader epoch (must be
// newer; equal or older gives STALE_CONTROLLER_EPOCH as in ZK mode), creates missing logs
// and makes this broker leader or follower. Broker-epoch fencing is the caller's.
func (rm *ReplicaManager) BecomeLeaderOrFollower(req *kmsg.LeaderAndISRRequest) *kmsg.LeaderAndISRResponse {
	resp := req.ResponseKind().(*kmsg.LeaderAndISRResponse)

	type topicStates struct {
		topic   string
		topicID [16]byte
		parts   []kmsg.LeaderAndISRRequestTopicPartition
	}
	var topics []topicStates
	if req.Version < 2 {
		idx := map[string]int{}
		for _, ps := range req.PartitionStates {
			i, ok := idx[ps.Topic]
			if !ok {
				i = len(topics)
				idx[ps.Topic] = i
				topics = append(topics, topicStates{topic: ps.Topic})
			}
			topics[i].parts = append(topics[i].parts, ps)
		}
	} else {
		for _, ts := range req.TopicStates {
			topics = append(topics, topicStates{topic: ts.Topic, topicID: ts.TopicID, parts: ts.PartitionStates})
		}
	}
	errs := make([][]int16, len(topics))
	respond := func() *kmsg.LeaderAndISRResponse {
		for i, t := range topics {
			var rt *kmsg.LeaderAndISRResponseTopic
			if req.Version >= 5 {
				resp.Topics = append(resp.Topics, kmsg.LeaderAndISRResponseTopic{TopicID: t.topicID})
				rt = &resp.Topics[len(resp.Topics)-1]
			}
			for j, ps := range t.parts {
				rp := kmsg.NewLeaderAndISRResponseTopicPartition()
				rp.Topic, rp.Partition, rp.ErrorCode = t.topic, ps.Partition, errs[i][j]
				if rt != nil {
					rt.Partitions = append(rt.Partitions, rp)
				} else {
					resp.Partitions = append(resp.Partitions, rp)
				}
			}
		}
		return resp
	}
	for i := range topics {
		errs[i] = make([]int16, len(topics[i].parts))
	}

	// Topic configs live in ZooKeeper: read them before taking stateMu, so a slow ZooKeeper
	// does not hold up the controller's other requests (Kafka reads them under the lock, in
	// getOrCreateLog). Only topics with a partition whose log is missing are read. Each
	// missing log is registered with the LogManager before the read: a topic config change
	// that lands before the log exists updates only the existing logs, and is caught and
	// re-read for the new one in finishInitializingLogs.
	configs := map[string]topicConfig{}
	inits := map[logstore.TopicPartition]*logstore.LogInit{}
	for _, t := range topics {
		missing := false
		for _, ps := range t.parts {
			tp := logstore.TopicPartition{Topic: t.topic, Partition: ps.Partition}
			if _, ok := rm.cfg.Logs.GetLog(tp); !ok && inits[tp] == nil {
				inits[tp] = rm.cfg.Logs.InitializingLog(tp)
				missing = true
			}
		}
		if _, ok := configs[t.topic]; !ok && missing {
			configs[t.topic] = rm.readTopicConfig(t.topic)
		}
	}

	var leaders, followers []logstore.TopicPartition
	defer func() { // after stateMu is released (deferred earlier = runs later)
		if fn := rm.leadershipHook.Load(); fn != nil && (len(leaders) > 0 || len(followers) > 0) {
			(*fn)(leaders, followers)
		}
	}()
	defer rm.finishInitializingLogs(inits) // after stateMu is released, before the hook
	rm.stateMu.Lock()
	defer rm.stateMu.Unlock()
	slog := rm.stateLog.WithFields(logrus.Fields{"controller_id": req.ControllerID, "controller_epoch": req.ControllerEpoch})
	if req.ControllerEpoch < rm.controllerEpoch {
		slog.WithField("current_controller_epoch", rm.controllerEpoch).Warn("ignoring LeaderAndIsr from stale controller epoch")
		resp.ErrorCode = kerr.StaleControllerEpoch.Code
		for i := range errs {
			for j := range errs[i] {
				errs[i][j] = kerr.StaleControllerEpoch.Code
			}
		}
		return respond()
	}
	rm.controllerEpoch = req.ControllerEpoch

	for i, t := range topics {
		for j, ps := range t.parts {
			tp := logstore.TopicPartition{Topic: t.topic, Partition: ps.Partition}
			plog := slog.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition, "leader": ps.Leader,
				"leader_epoch": ps.LeaderEpoch, "isr": ps.ISR, "replicas": ps.Replicas, "partition_epoch": ps.ZKVersion})
			if rm.cfg.Logs.LogDirOffline(tp) {
				plog.Warn("ignoring LeaderAndIsr: the replica is in an offline log dir")
				errs[i][j] = kerr.KafkaStorageError.Code
				continue
			}
			p := rm.getOrCreatePartition(tp)
			cur := p.LeaderEpoch()
			if ps.LeaderEpoch <= cur {
				plog.WithField("current_leader_epoch", cur).Info("ignoring LeaderAndIsr: leader epoch is not newer")
				errs[i][j] = kerr.StaleControllerEpoch.Code
				continue
			}
			if !slices.Contains(ps.Replicas, rm.cfg.BrokerID) {
				plog.Warn("ignoring LeaderAndIsr: this broker is not in the replica set")
				errs[i][j] = kerr.UnknownTopicOrPartition.Code
				continue
			}
			l, err := rm.createLogIfNotExists(tp, t.topicID, configs, inits)
			if err != nil {
				plog.WithError(err).Error("could not create the partition's log")
				errs[i][j] = ErrorCode(err)
				continue
			}
			s := partitionStateChange{controllerEpoch: ps.ControllerEpoch, leader: ps.Leader, leaderEpoch: ps.LeaderEpoch,
				partitionEpoch: ps.ZKVersion, isr: ps.ISR, replicas: ps.Replicas, adding: ps.AddingReplicas,
				removing: ps.RemovingReplicas, topicID: t.topicID}
			if ps.Leader == rm.cfg.BrokerID {
				leaders = append(leaders, tp)
				// makeLeaders: stop fetching before leading, so no follower append follows.
				rm.fetchers.removeFetchers([]logstore.TopicPartition{tp})
				p.makeLeader(s, l)
				plog.WithFields(logrus.Fields{"log_end_offset": l.LogEndOffset(), "high_watermark": l.HighWatermark()}).Info("became leader")
			} else {
				followers = append(followers, tp)
				p.makeFollower(s, l)
				// makeFollowers: restart fetching from the (new) leader at the new epoch;
				// truncation happens in the fetcher, by leader epochs (KIP-101/279/595).
				rm.fetchers.removeFetchers([]logstore.TopicPartition{tp})
				if ps.Leader >= 0 {
					rm.fetchers.addFetcher(p, ps.Leader, ps.LeaderEpoch)
				}
				plog.Info("became follower")
			}
		}
	}
	rm.maybeAddLogDirFetchers(append(slices.Clone(leaders), followers...))
	return respond()
}

// topicConfig is one topic's overrides as read from ZooKeeper, or the read's error.
type topicConfig struct {
	overrides map[string]string
	err       error
}

func (rm *ReplicaManager) readTopicConfig(topic string) topicConfig {
	if rm.cfg.TopicConfig == nil {
		return topicConfig{}
	}
	o, err := rm.cfg.TopicConfig(topic)
	if err != nil {
		return topicConfig{err: fmt.Errorf("read config of topic %s: %w", topic, err)}
	}
	return topicConfig{overrides: o}
}

// createLogIfNotExists gets or creates the local log with the topic's config (from configs,
// read before stateMu was taken); a topic id that differs from the one the log already has
// is INCONSISTENT_TOPIC_ID. inits holds the partitions registered before that read; one
// registered and read here is added to it.
func (rm *ReplicaManager) createLogIfNotExists(tp logstore.TopicPartition, topicID [16]byte, configs map[string]topicConfig, inits map[logstore.TopicPartition]*logstore.LogInit) (*logstore.Log, error) {
	if l, ok := rm.cfg.Logs.GetLog(tp); ok {
		if have := l.TopicID(); have != ([16]byte{}) && topicID != ([16]byte{}) && have != topicID {
			return nil, fmt.Errorf("%s: topic id %x differs from the log's %x: %w", tp, topicID, have, kerr.InconsistentTopicID)
		}
		return l, nil
	}
	tc := configs[tp.Topic]
	if inits[tp] == nil {
		// The log was there when the configs were read and has been deleted since (a
		// StopReplica ran in between): read now, under the lock, as before.
		inits[tp] = rm.cfg.Logs.InitializingLog(tp)
		tc = rm.readTopicConfig(tp.Topic)
	}
	lc, err := rm.logConfig(tp.Topic, tc)
	if err != nil {
		return nil, err
	}
	l, err := rm.cfg.Logs.GetOrCreateLog(tp, topicID, lc)
	if err != nil {
		return nil, fmt.Errorf("create log %s: %w", tp, err)
	}
	return l, nil
}

// logConfig builds a topic's LogConfig from the broker's props and its overrides.
func (rm *ReplicaManager) logConfig(topic string, tc topicConfig) (logstore.LogConfig, error) {
	if tc.err != nil {
		return logstore.LogConfig{}, tc.err
	}
	var props map[string]string
	if rm.cfg.DynamicConfig != nil {
		props = rm.cfg.DynamicConfig.Current().Props // with the dynamic broker defaults in force
	} else if rm.cfg.Config != nil {
		props = rm.cfg.Config.Props
	}
	lc, err := logstore.NewLogConfig(props, tc.overrides)
	if err != nil {
		return logstore.LogConfig{}, fmt.Errorf("config of topic %s: %w", topic, err)
	}
	return lc, nil
}

// finishInitializingLogs ends a LeaderAndIsr's log creations, with no lock held
// (LogManager.finishedInitializingLog). A log whose topic config changed between the config
// read and its creation gets the config read again and applied; rounds repeat until a round
// sees no change, so one that lands during the re-read is not lost either. Every creation is
// checked before any read, so a change after a read marks it for the next round.
func (rm *ReplicaManager) finishInitializingLogs(registered map[logstore.TopicPartition]*logstore.LogInit) {
	inits := make([]*logstore.LogInit, 0, len(registered))
	for _, li := range registered {
		inits = append(inits, li)
	}
	for len(inits) > 0 {
		var stale []*logstore.LogInit
		for _, li := range inits {
			if rm.cfg.Logs.FinishedInitializingLog(li) {
				stale = append(stale, li)
			}
		}
		read := map[string]*logstore.LogConfig{} // one read per topic and round
		for _, li := range stale {
			tp := li.TopicPartition()
			l, ok := rm.cfg.Logs.GetLog(tp)
			if !ok {
				continue // not created (fenced, failed) or deleted since
			}
			lc, done := read[tp.Topic]
			if !done {
				c, err := rm.logConfig(tp.Topic, rm.readTopicConfig(tp.Topic))
				if err != nil {
					rm.log.WithError(err).WithField("topic", tp.Topic).Warn("could not re-read a topic config changed while its log was created; the log keeps the config it was created with")
				} else {
					lc = &c
				}
				read[tp.Topic] = lc
			}
			if lc != nil {
				l.SetConfig(*lc)
				rm.log.WithFields(logrus.Fields{"topic": tp.Topic, "partition": tp.Partition}).Info("applied topic config changed while the log was created")
			}
		}
		inits = stale
	}
}

// StopReplicas (ReplicaManager.stopReplicas) stops serving the listed partitions; with
// delete it removes them and their logs. A partition's leader epoch in the request (v3+)
// must be -2 (deletion), -1 (none) or newer than ours, else FENCED_LEADER_EPOCH.
func (rm *ReplicaManager) StopReplicas(req *kmsg.StopReplicaRequest) *kmsg.StopReplicaResponse {
	resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
	type stop struct {
		tp          logstore.TopicPartition
		leaderEpoch int32
		delete      bool
	}
	var stops []stop
	for _, t := range req.Topics {
		switch {
		case req.Version == 0:
			stops = append(stops, stop{logstore.TopicPartition{Topic: t.Topic, Partition: t.Partition}, -1, req.DeletePartitions})
		case req.Version <= 2:
			for _, p := range t.Partitions {
				stops = append(stops, stop{logstore.TopicPartition{Topic: t.Topic, Partition: p}, -1, req.DeletePartitions})
			}
		default:
			for _, ps := range t.PartitionStates {
				stops = append(stops, stop{logstore.TopicPartition{Topic: t.Topic, Partition: ps.Partition}, ps.LeaderEpoch, ps.Delete})
			}
		}
	}

	rm.stateMu.Lock()
	defer rm.stateMu.Unlock()
	slog := rm.stateLog.WithFields(logrus.Fields{"controller_id": req.ControllerID, "controller_epoch": req.ControllerEpoch})
	add := func(tp logstore.TopicPartition, code int16) {
		rp := kmsg.NewStopReplicaResponsePartition()
		rp.Topic, rp.Partition, rp.ErrorCode = tp.Topic, tp.Partition, code
		resp.Partitions = append(resp.Partitions, rp)
	}
	if req.ControllerEpoch < rm.controllerEpoch {
		slog.WithField("current_controller_epoch", rm.controllerEpoch).Warn("ignoring StopReplica from stale controller epoch")
		resp.ErrorCode = kerr.StaleControllerEpoch.Code
		return resp
	}
	rm.controllerEpoch = req.ControllerEpoch

	for _, s := range stops {
		plog := slog.WithFields(logrus.Fields{"topic": s.tp.Topic, "partition": s.tp.Partition, "delete": s.delete})
		if rm.cfg.Logs.LogDirOffline(s.tp) { // HostedPartition.Offline in Kafka
			plog.Warn("ignoring StopReplica: the replica is in an offline log dir")
			add(s.tp, kerr.KafkaStorageError.Code)
			continue
		}
		rm.mu.RLock()
		p, hosted := rm.partitions[s.tp]
		rm.mu.RUnlock()
		if hosted && s.leaderEpoch != -2 && s.leaderEpoch != -1 {
			if cur := p.LeaderEpoch(); s.leaderEpoch <= cur { // equal is fenced too, as in Kafka
				plog.WithFields(logrus.Fields{"leader_epoch": s.leaderEpoch, "current_leader_epoch": cur}).
					Info("ignoring StopReplica: leader epoch is not newer")
				add(s.tp, kerr.FencedLeaderEpoch.Code)
				continue
			}
		}
		rm.fetchers.removeFetchers([]logstore.TopicPartition{s.tp})
		rm.alterLogDirs.removePartitions(s.tp)
		if !s.delete {
			add(s.tp, 0)
			plog.Info("stopped replica")
			continue
		}
		if hosted {
			rm.mu.Lock()
			delete(rm.partitions, s.tp)
			rm.mu.Unlock()
			p.detach()
		}
		var code int16
		if _, ok := rm.cfg.Logs.GetLog(s.tp); ok {
			if err := rm.cfg.Logs.DeleteLog(s.tp); err != nil {
				plog.WithError(err).Error("could not delete the partition's log")
				code = kerr.KafkaStorageError.Code
			}
		}
		add(s.tp, code)
		plog.Info("stopped and deleted replica")
	}
	return resp
}

// Shutdown (ReplicaManager.shutdown) stops serving every partition: waiting produces and
// fetches wake and fail with NOT_LEADER_OR_FOLLOWER. Call it after the SocketServers are
// closed and before logstore.Manager.Shutdown; replica fetchers will stop here too.
func (rm *ReplicaManager) Shutdown() {
	rm.fetchers.shutdown()
	rm.verifier.shutdown()
	if rm.bgCancel != nil {
		rm.bgCancel()
	}
	rm.bgWG.Wait()
	rm.alter.wait()
	rm.mu.Lock()
	parts := rm.partitions
	rm.partitions = map[logstore.TopicPartition]*Partition{}
	rm.mu.Unlock()
	for _, p := range parts {
		p.detach()
	}
	rm.log.WithField("partitions", len(parts)).Info("replica manager shut down")
}
