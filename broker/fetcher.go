package broker

// fetcher.go mirrors kafka.server.ReplicaFetcherManager / ReplicaFetcherThread
// (AbstractFetcherThread): the follower side of replication.
//
// A follower partition is fetched by one fetcher per (source broker, fetcher id), fetcher
// id = abs(31*hash(topic)+partition) % num.replica.fetchers. Each fetcher owns one
// connection to its leader and loops: partitions in Truncating state ask the leader
// OffsetsForLeaderEpoch (or, with no epoch known, truncate to the HW); partitions in
// Fetching state are fetched together with replica_id set (ReplicaState at v15+),
// LastFetchedEpoch (KIP-595 truncate-on-fetch, Kafka 3.7's path), replica.fetch.max.bytes
// per partition, replica.fetch.response.max.bytes, replica.fetch.wait.max.ms and
// replica.fetch.min.bytes, in an incremental fetch session (KIP-227, fetch_session_handler.go)
// as RemoteLeaderEndPoint does. Records are appended with the leader's offsets
// (Log.AppendAsFollower); the follower's HW becomes min(leader HW, own LEO). A diverging
// epoch in the response truncates (Manager.TruncateTo) to the end of the last common epoch,
// never to the HW alone. Errors delay the partition by replica.fetch.backoff.ms; so does a
// truncation that leaves the partition's fetch position as it was, so that a leader that
// keeps reporting the same divergence is not asked again in a tight loop (that case logs
// at Info once, then at Debug). A partition not caught up that the follower replication
// throttle names sits out of the fetches while that quota is exceeded (replication_quota.go).
//
// The per-partition processing of answers is in fetcher_partition.go; the deterministic
// simulation drives the same request building and processing without the goroutines
// (sim.go, through ReplicaFetcherManager.simRequest).
//
// Concurrency: a fetcher's mu (Kafka's partitionMapLock) is held while it processes a
// response (truncation, append), so once RemoveFetcherForPartitions returns no fetcher
// touches those logs any more. Fetcher goroutines are owned by the manager, started with
// its context and waited for by Shutdown.

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/kclient"
	"github.com/samsa-kafka/samsa/logstore"
)

// FetcherConfig holds the replica.fetch.* settings.
type FetcherConfig struct {
	NumFetchers      int           // num.replica.fetchers (1)
	MaxBytes         int32         // replica.fetch.max.bytes (1 MiB), per partition
	ResponseMaxBytes int32         // replica.fetch.response.max.bytes (10 MiB)
	MaxWait          time.Duration // replica.fetch.wait.max.ms (500 ms)
	MinBytes         int32         // replica.fetch.min.bytes (1)
	Backoff          time.Duration // replica.fetch.backoff.ms (1 s)
	SocketTimeout    time.Duration // replica.socket.timeout.ms (30 s)
	ReceiveBuffer    int           // replica.socket.receive.buffer.bytes (64 KiB; ≤ 0: OS default)
	Listener         string        // inter.broker.listener.name
}

func (c *FetcherConfig) defaults() {
	if c.NumFetchers <= 0 {
		c.NumFetchers = 1
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = 1 << 20
	}
	if c.ResponseMaxBytes <= 0 {
		c.ResponseMaxBytes = 10 << 20
	}
	if c.MaxWait <= 0 {
		c.MaxWait = 500 * time.Millisecond
	}
	if c.MinBytes <= 0 {
		c.MinBytes = 1
	}
	if c.Backoff <= 0 {
		c.Backoff = time.Second
	}
	if c.SocketTimeout <= 0 {
		c.SocketTimeout = 30 * time.Second
	}
	if c.Listener == "" {
		c.Listener = "PLAINTEXT"
	}
}

// fetchState is PartitionFetchState. A new value replaces it on every change of leader or
// epoch, so a response to an older request is recognized and dropped.
type fetchState struct {
	p                  *Partition
	topicID            [16]byte
	fetchOffset        int64
	currentLeaderEpoch int32
	lastFetchedEpoch   int32 // -1: none
	truncating         bool
	delayUntil         time.Time
	lastDivergence     *divergence // the last diverging epoch logged, carried to the next state
	// lag is the leader's HW minus our fetch offset after the last response with data
	// (PartitionFetchState.lag); lagKnown is false until one came.
	lag      int64
	lagKnown bool
}

// inSync is PartitionFetchState.isReplicaInSync: caught up with the leader's HW.
func (st *fetchState) inSync() bool { return st.lagKnown && st.lag <= 0 }

// divergence is what a diverging-epoch response said and where it led.
type divergence struct {
	epoch      int32
	endOffset  int64
	truncateTo int64
}

type fetcherKey struct {
	source int32
	id     int
}

// ReplicaFetcherManager is safe for concurrent use.
type ReplicaFetcherManager struct {
	rm  *ReplicaManager
	cfg FetcherConfig
	log *logrus.Entry

	mu       sync.Mutex
	ctx      context.Context // nil until Start
	fetchers map[fetcherKey]*replicaFetcher
	wg       sync.WaitGroup

	nowFn func() time.Time // ReplicaManagerConfig.Now: backoffs and delays (nil: time.Now)
	// simRequest is set only by the simulation (sim.go): fetchers then run no goroutine and
	// connect nowhere; the simulation drives their rounds, and the few requests a fetcher
	// makes synchronously (ListOffsets when out of range) go through this function.
	simRequest func(source int32, req kmsg.Request) (kmsg.Response, error)
}

func newReplicaFetcherManager(rm *ReplicaManager, cfg FetcherConfig, log *logrus.Entry) *ReplicaFetcherManager {
	cfg.defaults()
	return &ReplicaFetcherManager{rm: rm, cfg: cfg, log: log.WithField("component", "replica.fetcher"),
		fetchers: map[fetcherKey]*replicaFetcher{}, nowFn: rm.cfg.Now}
}

func (m *ReplicaFetcherManager) now() time.Time {
	if m.nowFn == nil {
		return time.Now()
	}
	return m.nowFn()
}

// start lets the manager run fetchers until ctx ends.
func (m *ReplicaFetcherManager) start(ctx context.Context) {
	m.mu.Lock()
	m.ctx = ctx
	m.mu.Unlock()
}

// fetcherID is AbstractFetcherManager.getFetcherId.
func (m *ReplicaFetcherManager) fetcherID(tp logstore.TopicPartition) int {
	h := fnv.New32a()
	h.Write([]byte(tp.Topic))
	v := int64(31)*int64(h.Sum32()) + int64(tp.Partition)
	if v < 0 {
		v = -v
	}
	return int(v % int64(m.cfg.NumFetchers))
}

// addFetcher (addFetcherForPartitions) starts fetching p from leader at leaderEpoch, from
// the local LEO: Fetching with the log's latest epoch (truncate-on-fetch), or Truncating
// when the log knows no epoch.
func (m *ReplicaFetcherManager) addFetcher(p *Partition, leader, leaderEpoch int32) {
	l := p.Log()
	if l == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx == nil || m.ctx.Err() != nil {
		return
	}
	key := fetcherKey{leader, m.fetcherID(p.tp)}
	f, ok := m.fetchers[key]
	if !ok {
		f = newReplicaFetcher(m, key)
		m.fetchers[key] = f
		if m.simRequest != nil {
			close(f.done) // driven by the simulation, never run
		} else {
			m.wg.Add(1)
			go func() {
				defer m.wg.Done()
				f.run()
			}()
		}
	}
	st := &fetchState{p: p, topicID: p.topicIDSnapshot(), fetchOffset: l.LogEndOffset(), currentLeaderEpoch: leaderEpoch, lastFetchedEpoch: -1}
	if e, ok := l.LatestEpoch(); ok {
		st.lastFetchedEpoch = e
	} else {
		st.truncating = true
	}
	f.mu.Lock()
	f.partitions[p.tp] = st
	f.mu.Unlock()
	f.wakeUp()
	m.log.WithFields(logrus.Fields{"topic": p.tp.Topic, "partition": p.tp.Partition, "leader": leader, "leader_epoch": leaderEpoch,
		"fetch_offset": st.fetchOffset, "last_fetched_epoch": st.lastFetchedEpoch}).Info("added fetcher for partition")
}

// removeFetchers (removeFetcherForPartitions): after it returns no fetcher appends to or
// truncates these partitions. Idle fetchers are shut down (shutdownIdleFetcherThreads).
func (m *ReplicaFetcherManager) removeFetchers(tps []logstore.TopicPartition) {
	m.mu.Lock()
	var idle []*replicaFetcher
	for key, f := range m.fetchers {
		f.mu.Lock() // waits for a response being processed
		for _, tp := range tps {
			delete(f.partitions, tp)
		}
		empty := len(f.partitions) == 0
		f.mu.Unlock()
		if empty {
			delete(m.fetchers, key)
			idle = append(idle, f)
		}
	}
	m.mu.Unlock()
	for _, f := range idle {
		f.stop()
	}
}

// shutdown stops every fetcher and waits for them.
func (m *ReplicaFetcherManager) shutdown() {
	m.mu.Lock()
	fs := m.fetchers
	m.fetchers = map[fetcherKey]*replicaFetcher{}
	m.mu.Unlock()
	for _, f := range fs {
		f.stop()
	}
	m.wg.Wait()
}

// replicaFetcher is one ReplicaFetcherThread.
type replicaFetcher struct {
	m      *ReplicaFetcherManager
	key    fetcherKey
	log    *logrus.Entry
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}

	mu         sync.Mutex // partitionMapLock
	partitions map[logstore.TopicPartition]*fetchState

	requestRate ewmaRate // FetcherStats.requestRate, for MinFetchRate (metrics_replica.go); own lock

	// Only the fetcher goroutine uses these.
	conn    *kclient.Conn
	session *fetchSessionHandler
}

func newReplicaFetcher(m *ReplicaFetcherManager, key fetcherKey) *replicaFetcher {
	ctx, cancel := context.WithCancel(m.ctx)
	log := m.log.WithFields(logrus.Fields{"source_broker": key.source, "fetcher_id": key.id})
	return &replicaFetcher{m: m, key: key, ctx: ctx, cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1),
		partitions: map[logstore.TopicPartition]*fetchState{}, log: log, session: newFetchSessionHandler(key.source, log)}
}

func (f *replicaFetcher) wakeUp() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *replicaFetcher) stop() {
	f.cancel()
	<-f.done
}

func (f *replicaFetcher) run() {
	defer close(f.done)
	defer func() {
		if f.conn != nil {
			f.conn.Close()
		}
	}()
	f.log.Info("starting replica fetcher")
	for f.ctx.Err() == nil {
		wait := f.doWork()
		if wait <= 0 {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-f.ctx.Done():
		case <-f.wake:
		case <-t.C:
		}
		t.Stop()
	}
	f.log.Info("stopped replica fetcher")
}

// doWork is one round (AbstractFetcherThread.doWork: maybeTruncate, then maybeFetch). It
// returns how long to wait before the next round (0: go on at once).
func (f *replicaFetcher) doWork() time.Duration {
	truncating, fetching, nextDelay, throttled := f.ready(f.m.now())
	// A session still holding partitions that are no longer ready must forget them.
	sessionOpen := len(f.session.session) > 0
	if len(truncating) == 0 && len(fetching) == 0 && !sessionOpen {
		if throttled && (nextDelay < 0 || nextDelay > f.m.cfg.Backoff) {
			// AbstractFetcherThread.maybeFetch: nothing to fetch waits replica.fetch.backoff.ms.
			return f.m.cfg.Backoff
		}
		if nextDelay < 0 {
			return time.Hour // nothing to do until a partition is added (wake)
		}
		return nextDelay
	}
	if err := f.ensureConn(); err != nil {
		f.log.WithError(err).Info("cannot connect to the leader; backing off")
		f.delayAll(append(truncating, fetching...))
		return f.m.cfg.Backoff
	}
	if len(truncating) > 0 {
		f.maybeTruncate(truncating)
	}
	if len(fetching) > 0 || sessionOpen {
		f.fetch(fetching)
	}
	return 0
}

// ready splits the partitions not delayed at now into those to truncate and those to
// fetch. nextDelay is how long until the first delayed one is ready (-1: none is delayed);
// throttled says some sat out for the follower replication quota.
func (f *replicaFetcher) ready(now time.Time) (truncating, fetching []*fetchState, nextDelay time.Duration, throttled bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	nextDelay = -1
	for _, st := range f.partitions {
		if now.Before(st.delayUntil) {
			if d := st.delayUntil.Sub(now); nextDelay < 0 || d < nextDelay {
				nextDelay = d
			}
			continue
		}
		if st.truncating {
			truncating = append(truncating, st)
		} else if f.shouldFollowerThrottle(st) {
			throttled = true
		} else {
			fetching = append(fetching, st)
		}
	}
	return truncating, fetching, nextDelay, throttled
}

func (f *replicaFetcher) ensureConn() error {
	if f.conn != nil {
		return nil
	}
	b, ok := f.m.rm.cfg.Metadata.Broker(f.key.source)
	if !ok {
		return fmt.Errorf("broker %d is not in the metadata cache", f.key.source)
	}
	ep, ok := b.Endpoint(f.m.cfg.Listener)
	if !ok {
		return fmt.Errorf("broker %d has no %s endpoint", f.key.source, f.m.cfg.Listener)
	}
	ctx, cancel := context.WithTimeout(f.ctx, f.m.cfg.SocketTimeout)
	defer cancel()
	c, err := f.m.rm.cfg.Dialer.DialReceiveBuffer(ctx, net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))),
		fmt.Sprintf("broker-%d-fetcher-%d", f.m.rm.cfg.BrokerID, f.key.id), f.m.cfg.ReceiveBuffer)
	if err != nil {
		return err
	}
	f.conn = c
	return nil
}

func (f *replicaFetcher) request(req kmsg.Request, extra time.Duration) (kmsg.Response, error) {
	if f.m.simRequest != nil {
		return f.m.simRequest(f.key.source, req)
	}
	if err := f.ensureConn(); err != nil { // an earlier request of this round broke it
		return nil, err
	}
	ctx, cancel := context.WithTimeout(f.ctx, f.m.cfg.SocketTimeout+extra)
	defer cancel()
	resp, err := f.conn.Request(ctx, req)
	if err != nil {
		f.conn.Close()
		f.conn = nil
	}
	return resp, err
}

// delayAll delays the given states (still current) by replica.fetch.backoff.ms.
func (f *replicaFetcher) delayAll(sts []*fetchState) {
	until := f.m.now().Add(f.m.cfg.Backoff)
	f.mu.Lock()
	for _, st := range sts {
		if f.partitions[st.p.tp] == st {
			st.delayUntil = until
		}
	}
	f.mu.Unlock()
}

// maybeTruncate: partitions with an epoch ask the leader OffsetsForLeaderEpoch and truncate
// (KIP-101/279); those without truncate to their HW (truncateToHighWatermark).
func (f *replicaFetcher) maybeTruncate(sts []*fetchState) {
	req, asked := f.buildOffsetsForLeaderEpoch(sts)
	if req == nil {
		return
	}
	r, err := f.request(req, 0)
	f.processOffsetsForLeaderEpoch(sts, asked, r, err)
}

// buildOffsetsForLeaderEpoch truncates the partitions whose log knows no epoch to their HW
// and builds the OffsetsForLeaderEpoch request for the others (nil when none is left),
// with the states it asks for.
func (f *replicaFetcher) buildOffsetsForLeaderEpoch(sts []*fetchState) (*kmsg.OffsetForLeaderEpochRequest, map[logstore.TopicPartition]*fetchState) {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = f.m.rm.cfg.BrokerID
	byTopic := map[string]int{}
	asked := map[logstore.TopicPartition]*fetchState{}
	for _, st := range sts {
		l := st.p.Log()
		if l == nil {
			continue
		}
		epoch, ok := l.LatestEpoch()
		if !ok {
			f.mu.Lock()
			if f.currentLocked(st) {
				hw := l.HighWatermark()
				if err := f.truncate(st, hw); err != nil {
					st.delayUntil = f.m.now().Add(f.m.cfg.Backoff)
				} else {
					f.replaceLocked(st, l.LogEndOffset(), false)
				}
			}
			f.mu.Unlock()
			continue
		}
		i, ok := byTopic[st.p.tp.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[st.p.tp.Topic] = i
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = st.p.tp.Topic
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = st.p.tp.Partition, st.currentLeaderEpoch, epoch
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		asked[st.p.tp] = st
	}
	if len(asked) == 0 {
		return nil, nil
	}
	return req, asked
}

// processOffsetsForLeaderEpoch truncates each partition still in the state it was asked in
// by the leader's answer (r, or the request's error err).
func (f *replicaFetcher) processOffsetsForLeaderEpoch(sts []*fetchState, asked map[logstore.TopicPartition]*fetchState, r kmsg.Response, err error) {
	if err != nil {
		f.log.WithError(err).Info("OffsetsForLeaderEpoch failed; backing off")
		f.delayAll(sts)
		return
	}
	resp := r.(*kmsg.OffsetForLeaderEpochResponse)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			st, ok := asked[logstore.TopicPartition{Topic: t.Topic, Partition: rp.Partition}]
			if !ok || !f.currentLocked(st) {
				continue
			}
			if rp.ErrorCode != 0 {
				f.handlePartitionErrorLocked(st, rp.ErrorCode)
				continue
			}
			f.truncateByLeaderEpochLocked(st, rp.LeaderEpoch, rp.EndOffset)
		}
	}
}

// fetch sends one Fetch for the given partitions and processes the response
// (processFetchRequest / processPartitionData). The request is built by the fetch session
// (buildFetch): full, or incremental with only the partitions added or changed; an
// incremental response leaves out the partitions with no news, which then have no data.
func (f *replicaFetcher) fetch(sts []*fetchState) {
	// Connect before building: a built request that is not sent would leave the session's
	// view of what the leader knows wrong.
	if err := f.ensureConn(); err != nil {
		f.log.WithError(err).Info("cannot connect to the leader; backing off")
		f.delayAll(sts)
		return
	}
	maxVersion := int16(-1)
	if r, ok := f.conn.Versions(kmsg.Fetch.Int16()); ok {
		maxVersion = r.Max
	}
	req, freq, sent := f.buildFetch(sts, maxVersion)
	if req == nil {
		return
	}
	r, err := f.request(freq, f.m.cfg.MaxWait)
	f.requestRate.mark(f.m.now())
	f.processFetch(sts, req, sent, r, err)
}

// buildFetch builds the session's next Fetch for sts at most at maxVersion (-1: any); nil
// when there is nothing to send. freq is what to send (req, or req capped at v12 when a
// topic has no id); sent maps each partition to the state it was fetched in.
func (f *replicaFetcher) buildFetch(sts []*fetchState, maxVersion int16) (req *kmsg.FetchRequest, freq kmsg.Request, sent map[logstore.TopicPartition]*fetchState) {
	cfg := f.m.cfg
	b := f.session.newBuilder()
	sent = map[logstore.TopicPartition]*fetchState{}
	for _, st := range sts {
		l := st.p.Log()
		if l == nil {
			continue
		}
		b.add(st.p.tp, fetchPartitionData{topicID: st.topicID, fetchOffset: st.fetchOffset, logStartOffset: l.LogStartOffset(),
			maxBytes: cfg.MaxBytes, currentLeaderEpoch: st.currentLeaderEpoch, lastFetchedEpoch: st.lastFetchedEpoch})
		sent[st.p.tp] = st
	}
	d := b.build()
	if len(d.session) == 0 && len(d.toForget) == 0 {
		return nil, nil, nil
	}
	req = kmsg.NewPtrFetchRequest()
	req.ReplicaID = f.m.rm.cfg.BrokerID
	req.ReplicaState.ID = f.m.rm.cfg.BrokerID
	req.ReplicaState.Epoch = f.m.rm.brokerEpoch()
	req.MaxWaitMillis = int32(cfg.MaxWait / time.Millisecond)
	req.MinBytes = cfg.MinBytes
	req.MaxBytes = cfg.ResponseMaxBytes
	freq = req
	version := req.MaxVersion()
	if maxVersion >= 0 {
		version = min(version, maxVersion)
	}
	if !d.canUseTopicIDs {
		freq = fetchByName{req} // a topic without id (created by an old tool): Fetch v12, by name
		version = min(version, 12)
	}
	d.request(req, version)
	return req, freq, sent
}

// processFetch handles the answer to req (r, or the request's error err): the session's
// bookkeeping, then each partition still in the state it was fetched in.
func (f *replicaFetcher) processFetch(sts []*fetchState, req *kmsg.FetchRequest, sent map[logstore.TopicPartition]*fetchState, r kmsg.Response, err error) {
	if err != nil {
		f.session.handleError(err)
		if f.ctx.Err() == nil {
			f.log.WithError(err).Info("error sending fetch request; backing off")
			f.delayAll(sts)
		}
		return
	}
	resp := r.(*kmsg.FetchResponse)
	if !f.session.handleResponse(resp, req.Version) {
		// The session reset (handleResponse logged why). A lost session or a wrong epoch is
		// retried at once with a full fetch, as Kafka does; any other top-level error waits
		// the backoff (Kafka only does so for FETCH_SESSION_TOPIC_ID_ERROR), so that an error
		// the leader keeps returning cannot make the fetcher spin.
		switch resp.ErrorCode {
		case 0, kerr.FetchSessionIDNotFound.Code, kerr.InvalidFetchSessionEpoch.Code:
		default:
			f.delayAll(sts)
		}
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range resp.Topics {
		topic, ok := f.session.topicName(&t, req.Version)
		if !ok {
			continue
		}
		for i := range t.Partitions {
			rp := &t.Partitions[i]
			st, ok := sent[logstore.TopicPartition{Topic: topic, Partition: rp.Partition}]
			// Drop data for a partition removed or re-added meanwhile, or whose offset moved.
			if !ok || !f.currentLocked(st) {
				continue
			}
			f.processPartitionLocked(st, rp)
		}
	}
}

// fetchByName caps Fetch at v12, the last version naming topics, as Kafka's fetcher does
// when some partition has no topic id.
type fetchByName struct{ *kmsg.FetchRequest }

func (fetchByName) MaxVersion() int16 { return 12 }
