package broker

// sim.go is the broker side of the deterministic simulation (integration/sim): one broker's
// ReplicaManager, partitions, replica fetchers and log store, run without any of their
// goroutines so that a single-goroutine scheduler can drive them step by step on a
// simulated clock. Every step calls the production code the goroutines call:
//
//   - LeaderAndIsr, UpdateMetadata, StopReplica: ReplicaManager.BecomeLeaderOrFollower,
//     MaybeUpdateMetadataCache, StopReplicas (after the broker-epoch fence the API handlers
//     apply).
//   - Produce: Partition.appendRecordsToLeaderOpts (leadership and min.insync.replicas
//     checks, leader append, HW move) and DelayedProduce's completion check
//     (Partition.checkEnoughReplicasReachOffset).
//   - A follower fetch at the leader: ReplicaManager.FetchMessages (readFromLocalLog: the
//     KIP-595 diverging-epoch check, updateFollowerFetchState, ISR expansion, HW move),
//     answered at once (the simulation stands in for replica.fetch.wait.max.ms); an
//     OffsetsForLeaderEpoch: ReplicaManager.LastOffsetForLeaderEpoch.
//   - The follower's side: the replica fetcher's own request building (fetch session
//     included) and per-partition response processing (fetcher.go, fetcher_partition.go):
//     append as follower, truncation by leader epoch, HW and log start offset updates,
//     backoffs on the simulated clock.
//   - ISR shrink (Partition.maybeShrinkISR, Kafka's isr-expiration task) and AlterPartition
//     proposals out and their answers in (Partition.handleAlterPartitionResult).
//   - Open is a broker start: logstore.OpenManager recovers the log dir (clean-shutdown
//     marker, recovery from the recovery point, HW checkpoint, leader-epoch cache); the
//     partitions come back with the controller's LeaderAndIsr, as on a real broker.
//
// Messages between brokers are plain kmsg values the simulation routes (and may delay,
// drop or reorder). Nothing here is used by a production broker; the seams it needs in
// production code are ReplicaFetcherManager.simRequest (nil in production), the clock every
// component already takes (ReplicaManagerConfig.Now, ManagerConfig.Clock), and two
// Manager methods that run its periodic work on demand (logstore/sim.go). The one goroutine
// left, a segment roll's background flush, is waited for at the end of every step.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/recordbatch"
	"github.com/samsa-kafka/samsa/logstore"
)

// SimBrokerConfig configures one simulated broker incarnation.
type SimBrokerConfig struct {
	BrokerID int32
	// Dir is the broker's one log dir (log.dirs). Reopening the same Dir after Abandon or
	// Close is a broker restart.
	Dir string
	// FS is the log store's file system, normally a *logstore.CrashFS over Dir (nil: OSFS).
	// After Abandon, the FS must close every file the abandoned incarnation opened
	// (CrashFS.Crash does) before Dir can be opened again: the log dir lock is held by an
	// open file.
	FS logstore.FS
	// Now is the simulated clock; the replica manager, partitions, fetchers and log store all
	// read time from it. Required.
	Now func() time.Time
	// BrokerEpoch returns this incarnation's broker epoch (the czxid of its /brokers/ids/N
	// registration in the ZooKeeper model); sent in fetches and AlterPartition and checked
	// against the controller's requests. Nil means -1.
	BrokerEpoch func() int64
	// Props are broker properties with Kafka's names (min.insync.replicas,
	// replica.lag.time.max.ms, replica.fetch.backoff.ms, log.segment.bytes,
	// log.flush.interval.messages, ...). broker.id, log.dirs and zookeeper.connect are set
	// from the fields above.
	Props map[string]string
	// ListOffsets answers the one request a follower's fetcher makes synchronously: the
	// leader's log end or start offset when its fetch offset is out of range
	// (AbstractFetcherThread.fetchOffsetAndTruncate). The simulation routes it to the
	// leader's SimBroker.Handle, or returns an error when the link is down. Nil: always an
	// error (the partition backs off and retries).
	ListOffsets func(leader int32, req *kmsg.ListOffsetsRequest) (*kmsg.ListOffsetsResponse, error)
	// Log receives the broker's logs (nil: discarded).
	Log *logrus.Entry
}

// SimBroker is one simulated broker incarnation. It is not safe for concurrent use: the
// simulation calls it from one goroutine.
type SimBroker struct {
	cfg     SimBrokerConfig
	logs    *logstore.Manager
	rm      *ReplicaManager
	dead    bool
	alters  []*SimAlterPartition // proposals submitted and not yet answered or superseded
	pending map[simFetchKey]bool // replica requests in flight, per fetcher and kind
}

// simFetchKey is one kind of request of one fetcher: a fetcher (Kafka's fetcher thread)
// has at most one of each in flight. A fetcher removed and made again is a new one.
type simFetchKey struct {
	fetcher  *replicaFetcher
	truncate bool // OffsetsForLeaderEpoch (true) or Fetch
}

// OpenSimBroker starts a broker incarnation: it opens (and recovers) the log dir as a
// broker start does and hosts no partition until LeaderAndIsr.
func OpenSimBroker(cfg SimBrokerConfig) (*SimBroker, error) {
	if cfg.Now == nil {
		return nil, errors.New("sim broker: Now is required")
	}
	if cfg.Log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		l.SetLevel(logrus.ErrorLevel) // nothing is written: spare the formatting
		cfg.Log = logrus.NewEntry(l)
	}
	cfg.Log = cfg.Log.WithField("broker", cfg.BrokerID)
	raw := map[string]string{}
	for k, v := range cfg.Props {
		raw[k] = v
	}
	raw["broker.id"] = strconv.Itoa(int(cfg.BrokerID))
	raw["log.dirs"] = cfg.Dir
	if raw["zookeeper.connect"] == "" {
		raw["zookeeper.connect"] = "sim:2181"
	}
	conf, _, err := config.FromMap(raw)
	if err != nil {
		return nil, fmt.Errorf("sim broker %d config: %w", cfg.BrokerID, err)
	}
	logs, err := logstore.OpenManager(logstore.ManagerConfig{
		Dirs: []string{cfg.Dir}, BrokerID: cfg.BrokerID, BrokerProps: conf.Props, FS: cfg.FS, Clock: cfg.Now,
		Log: cfg.Log, RecoveryThreadsPerDir: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("sim broker %d: open log dir: %w", cfg.BrokerID, err)
	}
	b := &SimBroker{cfg: cfg, logs: logs, pending: map[simFetchKey]bool{}}
	b.rm = NewReplicaManager(ReplicaManagerConfig{
		BrokerID: cfg.BrokerID, Config: conf, Logs: logs, Metadata: NewMetadataCache(cfg.BrokerID),
		Log: cfg.Log, Now: cfg.Now, BrokerEpoch: b.brokerEpoch,
	})
	b.rm.fetchers.simRequest = b.fetcherRequest
	b.rm.fetchers.start(context.Background())
	b.rm.partHooks.alterPartition = b.submitAlter // the AlterPartitionManager's place
	return b, nil
}

// ID is the broker id.
func (b *SimBroker) ID() int32 { return b.cfg.BrokerID }

func (b *SimBroker) brokerEpoch() int64 {
	if b.cfg.BrokerEpoch == nil {
		return -1
	}
	return b.cfg.BrokerEpoch()
}

// Close is a clean shutdown (ReplicaManager.shutdown, then LogManager.shutdown: final
// checkpoints, flush, the clean-shutdown marker).
func (b *SimBroker) Close() error {
	if b.dead {
		return nil
	}
	b.dead = true
	b.rm.Shutdown()
	return b.logs.Shutdown()
}

// Abandon is a crash (kill -9 or power cut): the incarnation stops at once, with no more
// disk I/O, and every later call on it does nothing. What the disk keeps is the FS's
// business (CrashFS.Crash).
func (b *SimBroker) Abandon() { b.dead = true }

// settle ends a step: a segment roll during it flushes the rolled segments on a goroutine
// of the log's (Kafka's scheduled "flush-log"); wait for it, so that the step's effect on
// the disk is the same in every replay.
func (b *SimBroker) settle() { b.logs.WaitRollFlushes() }

// Dead reports whether Close or Abandon was called.
func (b *SimBroker) Dead() bool { return b.dead }

// Handle answers a request from another broker or the controller: LeaderAndIsr,
// UpdateMetadata, StopReplica (from the controller), Fetch, OffsetForLeaderEpoch and
// ListOffsets (from followers). Other requests get an error.
func (b *SimBroker) Handle(req kmsg.Request) (kmsg.Response, error) {
	if b.dead {
		return nil, errors.New("sim broker is down")
	}
	defer b.settle()
	switch r := req.(type) {
	case *kmsg.LeaderAndISRRequest:
		return b.LeaderAndIsr(r), nil
	case *kmsg.UpdateMetadataRequest:
		return b.UpdateMetadata(r), nil
	case *kmsg.StopReplicaRequest:
		return b.StopReplica(r), nil
	case *kmsg.FetchRequest:
		return b.handleFetch(r), nil
	case *kmsg.OffsetForLeaderEpochRequest:
		return b.handleOffsetForLeaderEpoch(r), nil
	case *kmsg.ListOffsetsRequest:
		return b.handleListOffsets(r), nil
	}
	return nil, fmt.Errorf("sim broker: unsupported request %T", req)
}

// isBrokerEpochStale is the API handlers' fence (isBrokerEpochStale): -1 is "not sent".
func (b *SimBroker) isBrokerEpochStale(epoch int64) bool {
	return epoch != -1 && epoch < b.brokerEpoch()
}

// LeaderAndIsr is KafkaApis.handleLeaderAndIsrRequest for the replica manager's part.
func (b *SimBroker) LeaderAndIsr(req *kmsg.LeaderAndISRRequest) *kmsg.LeaderAndISRResponse {
	if b.isBrokerEpochStale(req.BrokerEpoch) {
		return leaderAndIsrErrorResponse(req, kerr.StaleBrokerEpoch)
	}
	defer b.settle()
	return b.rm.BecomeLeaderOrFollower(req)
}

// UpdateMetadata is KafkaApis.handleUpdateMetadataRequest: it fills the metadata cache
// (live brokers, for ISR eligibility; topic ids, for fetches by id).
func (b *SimBroker) UpdateMetadata(req *kmsg.UpdateMetadataRequest) *kmsg.UpdateMetadataResponse {
	resp := req.ResponseKind().(*kmsg.UpdateMetadataResponse)
	if b.isBrokerEpochStale(req.BrokerEpoch) {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}
	if _, err := b.rm.MaybeUpdateMetadataCache(req); err != nil {
		resp.ErrorCode = ErrorCode(err)
	}
	return resp
}

// StopReplica is KafkaApis.handleStopReplicaRequest for the replica manager's part.
func (b *SimBroker) StopReplica(req *kmsg.StopReplicaRequest) *kmsg.StopReplicaResponse {
	if b.isBrokerEpochStale(req.BrokerEpoch) {
		resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}
	defer b.settle()
	return b.rm.StopReplicas(req)
}

// SimProduce is one produce accepted by a leader: its offsets, and DelayedProduce's
// completion check for acks=all.
type SimProduce struct {
	TP logstore.TopicPartition
	// FirstOffset and LastOffset are the offsets the leader gave the batch.
	FirstOffset, LastOffset int64
	// LeaderEpoch is the leader epoch the batch was appended in.
	LeaderEpoch int32
	p           *Partition
	b           *SimBroker
}

// Produce appends records (one v2 batch, as a producer sends it: SimRecords builds one;
// the leader writes offsets and epoch into it) to tp as the leader, with acks 0, 1 or -1:
// NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS (acks=-1 with the ISR below
// min.insync.replicas) and the log's errors come back as the error. With acks=-1 the
// produce is acknowledged only once SimProduce.Check says so.
func (b *SimBroker) Produce(tp logstore.TopicPartition, records []byte, acks int16) (*SimProduce, error) {
	if b.dead {
		return nil, errors.New("sim broker is down")
	}
	defer b.settle()
	p, err := b.rm.LeaderPartition(tp)
	if err != nil {
		return nil, err
	}
	epoch := p.LeaderEpoch()
	info, err := p.appendRecordsToLeaderOpts(records, acks, logstore.AppendOptions{})
	if err != nil {
		return nil, err
	}
	return &SimProduce{TP: tp, FirstOffset: info.FirstOffset, LastOffset: info.LastOffset, LeaderEpoch: epoch, p: p, b: b}, nil
}

// Check is DelayedProduce.tryComplete for an acks=-1 produce: done once the HW passed the
// batch (err nil: acknowledged), or with NOT_ENOUGH_REPLICAS_AFTER_APPEND or
// NOT_LEADER_OR_FOLLOWER. Not done: keep waiting (the simulation times it out as
// request.timeout.ms would, answering REQUEST_TIMED_OUT). On a dead broker it is done with
// an error: the producer never hears back.
func (sp *SimProduce) Check() (done bool, err error) {
	if sp.b.dead {
		return true, errors.New("sim broker is down")
	}
	return sp.p.checkEnoughReplicasReachOffset(sp.LastOffset + 1)
}

// SimRecords builds one uncompressed v2 record batch of values (no keys, no producer id), as
// a producer sends it; ts is the records' timestamp in Unix milliseconds.
func SimRecords(ts int64, values ...[]byte) []byte {
	recs := make([]recordbatch.Record, len(values))
	for i, v := range values {
		recs[i] = recordbatch.Record{OffsetDelta: int32(i), Value: v}
	}
	h := recordbatch.Header{PartitionLeaderEpoch: -1, LastOffsetDelta: int32(len(values) - 1), BaseTimestamp: ts, MaxTimestamp: ts,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	b, err := recordbatch.Build(h, recs, recordbatch.None)
	if err != nil {
		panic(err) // uncompressed: cannot fail
	}
	return b
}

// ShrinkISRs runs Kafka's isr-expiration task once (every replica.lag.time.max.ms/2 in a
// broker): each led partition proposes out the followers not caught up within
// replica.lag.time.max.ms of the simulated clock. Proposals come out of PollAlterPartitions.
func (b *SimBroker) ShrinkISRs() {
	if b.dead {
		return
	}
	for _, p := range b.sortedPartitions() {
		p.maybeShrinkISR()
	}
}

// CheckpointHighWatermarks runs the log manager's checkpoint tasks once (the HW every
// replica.high.watermark.checkpoint.interval.ms, recovery points and log start offsets):
// what a restart after a crash reads back.
func (b *SimBroker) CheckpointHighWatermarks() {
	if b.dead {
		return
	}
	b.logs.CheckpointNow()
}

// Flush fsyncs every log up to its end (as a segment roll or log.flush.* would).
func (b *SimBroker) Flush() error {
	if b.dead {
		return nil
	}
	for _, l := range b.logs.AllLogs() {
		if err := l.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func (b *SimBroker) sortedPartitions() []*Partition {
	ps := b.rm.Partitions()
	slices.SortFunc(ps, func(x, y *Partition) int { return compareTP(x.tp, y.tp) })
	return ps
}

func compareTP(x, y logstore.TopicPartition) int {
	return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
}
