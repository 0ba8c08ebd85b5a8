package broker

// sim_replication.go — the simulated broker's replication traffic (sim.go): follower
// requests out of the real replica fetchers and their answers back in, the leader's side of
// those requests, AlterPartition proposals, and the replica state the simulation's
// invariants read.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/recordbatch"
	"github.com/samsa-kafka/samsa/logstore"
)

// SimReplicaRequest is one request of a follower's replica fetcher to a leader: a Fetch or an
// OffsetForLeaderEpoch. The simulation delivers Request to broker To (SimBroker.Handle) and
// the answer, or a failure, back with SimBroker.CompleteReplicaRequest.
type SimReplicaRequest struct {
	From, To int32        // the follower and the leader
	Request  kmsg.Request // *kmsg.FetchRequest or *kmsg.OffsetForLeaderEpochRequest

	b     *SimBroker
	f     *replicaFetcher
	key   simFetchKey
	sts   []*fetchState
	asked map[logstore.TopicPartition]*fetchState // OffsetForLeaderEpoch
	fetch *kmsg.FetchRequest                      // Fetch
	sent  map[logstore.TopicPartition]*fetchState // Fetch
}

// PollReplicaRequests is one round of every replica fetcher (AbstractFetcherThread.doWork)
// with nothing of its kind in flight: partitions without a leader epoch truncate to their HW
// at once; the others yield an OffsetForLeaderEpoch (partitions truncating) and a Fetch
// (partitions fetching) each. Partitions in a backoff (replica.fetch.backoff.ms on the
// simulated clock) sit out. The order is deterministic (by leader, fetcher, partition).
//
// Kafka's fetcher sends its next fetch as soon as one is answered and the leader holds it
// up to replica.fetch.wait.max.ms; here the leader answers at once and the simulation
// chooses when to poll again. Every request polled must be completed, with an error when
// it is lost (as a socket timeout would), or its fetcher sends nothing more of its kind.
func (b *SimBroker) PollReplicaRequests() []*SimReplicaRequest {
	if b.dead {
		return nil
	}
	defer b.settle() // partitions without an epoch truncate here
	m := b.rm.fetchers
	m.mu.Lock()
	keys := make([]fetcherKey, 0, len(m.fetchers))
	for k := range m.fetchers {
		keys = append(keys, k)
	}
	fetchers := make([]*replicaFetcher, 0, len(keys))
	slices.SortFunc(keys, func(x, y fetcherKey) int {
		if x.source != y.source {
			return int(x.source) - int(y.source)
		}
		return x.id - y.id
	})
	for _, k := range keys {
		fetchers = append(fetchers, m.fetchers[k])
	}
	m.mu.Unlock()

	now := b.cfg.Now()
	byTP := func(x, y *fetchState) int { return compareTP(x.p.tp, y.p.tp) }
	var out []*SimReplicaRequest
	for _, f := range fetchers {
		truncating, fetching, _, _ := f.ready(now)
		slices.SortFunc(truncating, byTP)
		slices.SortFunc(fetching, byTP)
		tk := simFetchKey{fetcher: f, truncate: true}
		if len(truncating) > 0 && !b.pending[tk] {
			if req, asked := f.buildOffsetsForLeaderEpoch(truncating); req != nil {
				req.SetVersion(req.MaxVersion()) // as the connection would negotiate with a samsa leader
				b.pending[tk] = true
				out = append(out, &SimReplicaRequest{From: b.cfg.BrokerID, To: f.key.source, Request: req, b: b, f: f, key: tk,
					sts: truncating, asked: asked})
			}
		}
		fk := simFetchKey{fetcher: f}
		if (len(fetching) > 0 || len(f.session.session) > 0) && !b.pending[fk] {
			if req, freq, sent := f.buildFetch(fetching, -1); req != nil {
				req.SetVersion(freq.MaxVersion()) // v16, or v12 when a topic has no id
				b.pending[fk] = true
				out = append(out, &SimReplicaRequest{From: b.cfg.BrokerID, To: f.key.source, Request: req, b: b, f: f, key: fk,
					sts: fetching, fetch: req, sent: sent})
			}
		}
	}
	return out
}

// CompleteReplicaRequest hands the follower the leader's answer to r (resp), or the
// request's failure (err non-nil: lost, timed out, connection cut), and runs the fetcher's
// processing of it: appends, truncations, HW updates, backoffs. An answer for an earlier
// incarnation, or for a fetcher removed since, is dropped as Kafka's would be.
func (b *SimBroker) CompleteReplicaRequest(r *SimReplicaRequest, resp kmsg.Response, err error) {
	if b.dead || r.b != b {
		return
	}
	defer b.settle()
	delete(b.pending, r.key)
	m := b.rm.fetchers
	m.mu.Lock()
	current := m.fetchers[r.f.key] == r.f
	m.mu.Unlock()
	if !current {
		return
	}
	if err == nil && resp == nil {
		err = errors.New("no response")
	}
	if r.fetch != nil {
		if _, ok := resp.(*kmsg.FetchResponse); err == nil && !ok {
			err = fmt.Errorf("unexpected answer %T to a fetch", resp)
		}
		r.f.processFetch(r.sts, r.fetch, r.sent, resp, err)
		return
	}
	if _, ok := resp.(*kmsg.OffsetForLeaderEpochResponse); err == nil && !ok {
		err = fmt.Errorf("unexpected answer %T to OffsetForLeaderEpoch", resp)
	}
	r.f.processOffsetsForLeaderEpoch(r.sts, r.asked, resp, err)
}

// fetcherRequest is ReplicaFetcherManager.simRequest: the fetchers' synchronous requests.
func (b *SimBroker) fetcherRequest(source int32, req kmsg.Request) (kmsg.Response, error) {
	lo, ok := req.(*kmsg.ListOffsetsRequest)
	if !ok || b.cfg.ListOffsets == nil {
		return nil, fmt.Errorf("sim broker %d: no synchronous %T to broker %d", b.cfg.BrokerID, req, source)
	}
	return b.cfg.ListOffsets(source, lo)
}

// handleFetch is KafkaApis.handleFetch for a follower, without fetch sessions (every fetch
// is answered in full with session id 0, which the follower's session handler accepts as
// "no session") and without waiting.
func (b *SimBroker) handleFetch(req *kmsg.FetchRequest) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	replicaID, replicaEpoch := req.ReplicaID, int64(-1)
	if req.Version >= 15 {
		replicaID, replicaEpoch = req.ReplicaState.ID, req.ReplicaState.Epoch
	}
	params := FetchParams{ReplicaID: replicaID, ReplicaEpoch: replicaEpoch, MinBytes: req.MinBytes, MaxBytes: req.MaxBytes}
	type slot struct{ ti, pi int }
	var (
		reqs  []FetchPartitionRequest
		slots []slot
	)
	for _, rt := range req.Topics {
		topic, known := rt.Topic, true
		if req.Version >= 13 {
			topic, known = b.topicName(rt.TopicID)
		}
		respTopic := kmsg.NewFetchResponseTopic()
		respTopic.Topic, respTopic.TopicID = topic, rt.TopicID
		for _, rp := range rt.Partitions {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = rp.Partition
			p.RecordBatches = []byte{}
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = -1, -1, -1
			if !known {
				p.ErrorCode = kerr.UnknownTopicID.Code
				respTopic.Partitions = append(respTopic.Partitions, p)
				continue
			}
			slots = append(slots, slot{len(resp.Topics), len(respTopic.Partitions)})
			respTopic.Partitions = append(respTopic.Partitions, p)
			reqs = append(reqs, FetchPartitionRequest{TP: logstore.TopicPartition{Topic: topic, Partition: rp.Partition},
				FetchOffset: rp.FetchOffset, LogStartOffset: rp.LogStartOffset, MaxBytes: rp.PartitionMaxBytes,
				CurrentLeaderEpoch: rp.CurrentLeaderEpoch, LastFetchedEpoch: lastFetchedEpoch(req.Version, rp.LastFetchedEpoch)})
		}
		resp.Topics = append(resp.Topics, respTopic)
	}
	results := b.rm.FetchMessages(context.Background(), params, reqs)
	for i, r := range results {
		p := &resp.Topics[slots[i].ti].Partitions[slots[i].pi]
		if r.Err != nil {
			p.ErrorCode = fetchErrorCode(req.Version, r.Err)
			continue
		}
		p.HighWatermark, p.LastStableOffset, p.LogStartOffset = r.HighWatermark, r.LastStableOffset, r.LogStartOffset
		if r.Diverging {
			p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = r.DivergingEpoch, r.DivergingEndOffset
		}
		if r.Records.Size > 0 {
			data, err := r.Records.Bytes()
			if err != nil {
				continue // as KafkaApis: an empty answer, the follower fetches again
			}
			p.RecordBatches = data
		}
	}
	return resp
}

// topicName resolves a topic id through the metadata cache, then the hosted partitions.
func (b *SimBroker) topicName(id [16]byte) (string, bool) {
	if name, ok := b.rm.cfg.Metadata.TopicName(id); ok {
		return name, true
	}
	for _, p := range b.sortedPartitions() {
		if p.topicIDSnapshot() == id {
			return p.tp.Topic, true
		}
	}
	return "", false
}

// handleOffsetForLeaderEpoch is KafkaApis.handleOffsetForLeaderEpochRequest for a follower.
func (b *SimBroker) handleOffsetForLeaderEpoch(req *kmsg.OffsetForLeaderEpochRequest) *kmsg.OffsetForLeaderEpochResponse {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		ot := kmsg.NewOffsetForLeaderEpochResponseTopic()
		ot.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			op := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			op.Partition = rp.Partition
			epoch, end, err := b.rm.LastOffsetForLeaderEpoch(logstore.TopicPartition{Topic: rt.Topic, Partition: rp.Partition},
				rp.CurrentLeaderEpoch, rp.LeaderEpoch, true)
			op.ErrorCode, op.LeaderEpoch, op.EndOffset = ErrorCode(err), epoch, end
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp
}

// handleListOffsets answers a follower's latest (-1: the LEO, as for a replica) or
// earliest (-2) offset from the leader.
func (b *SimBroker) handleListOffsets(req *kmsg.ListOffsetsRequest) *kmsg.ListOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range req.Topics {
		ot := kmsg.NewListOffsetsResponseTopic()
		ot.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			op := kmsg.NewListOffsetsResponseTopicPartition()
			op.Partition, op.Offset, op.Timestamp = rp.Partition, -1, -1
			off, err := b.listOffset(logstore.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}, rp.CurrentLeaderEpoch, rp.Timestamp)
			op.ErrorCode = ErrorCode(err)
			if err == nil {
				op.Offset = off
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp
}

func (b *SimBroker) listOffset(tp logstore.TopicPartition, currentLeaderEpoch int32, ts int64) (int64, error) {
	p, err := b.rm.Partition(tp)
	if err != nil {
		return -1, err
	}
	p.mu.RLock()
	l, err := p.leaderLogLocked(currentLeaderEpoch, true)
	p.mu.RUnlock()
	if err != nil {
		return -1, err
	}
	switch ts {
	case -1:
		return l.LogEndOffset(), nil
	case -2:
		return l.LogStartOffset(), nil
	}
	return -1, fmt.Errorf("sim broker: ListOffsets timestamp %d: %w", ts, kerr.InvalidRequest)
}

// SimAlterPartition is one ISR proposal of a partition leader (AlterPartitionManager): the
// simulation delivers Request to the controller and the answer, or a failure, back with
// SimBroker.CompleteAlterPartition.
type SimAlterPartition struct {
	From    int32
	TP      logstore.TopicPartition
	Request *kmsg.AlterPartitionRequest // built at poll time (current broker epoch)

	b        *SimBroker
	p        *Partition
	prop     *isrProposal
	inFlight bool
}

func (b *SimBroker) submitAlter(p *Partition, prop *isrProposal) {
	b.alters = append(b.alters, &SimAlterPartition{From: b.cfg.BrokerID, TP: p.tp, b: b, p: p, prop: prop})
}

// PollAlterPartitions returns the proposals to send now: each pending proposal not in
// flight, in the order they were made (each must be completed, with an error when lost). A proposal superseded by a LeaderAndIsr is dropped,
// as the AlterPartitionManager stops retrying it. A failed or refused request (request-level
// error) is sent again at the next poll (its retry backoff is the simulation's).
func (b *SimBroker) PollAlterPartitions() []*SimAlterPartition {
	if b.dead {
		return nil
	}
	var out []*SimAlterPartition
	b.alters = slices.DeleteFunc(b.alters, func(a *SimAlterPartition) bool { return !a.p.isPending(a.prop) })
	for _, a := range b.alters {
		if a.inFlight {
			continue
		}
		a.inFlight = true
		a.Request = b.rm.alterPartitionRequest(a.prop)
		out = append(out, a)
	}
	return out
}

// CompleteAlterPartition hands the leader the controller's answer to a (resp), or the
// request's failure (err non-nil). The partition-level answer goes to
// Partition.handleAlterPartitionResult, as in the AlterPartitionManager.
func (b *SimBroker) CompleteAlterPartition(a *SimAlterPartition, resp *kmsg.AlterPartitionResponse, err error) {
	if b.dead || a.b != b {
		return
	}
	a.inFlight = false
	if err != nil || resp == nil || resp.ErrorCode != 0 {
		return // retried at the next poll while still pending
	}
	if handleAlterPartitionResponse(a.p, a.prop, resp) {
		b.alters = slices.DeleteFunc(b.alters, func(x *SimAlterPartition) bool { return x == a })
	}
}

// SimReplicaState is one hosted partition's replica state, for the simulation's invariants.
type SimReplicaState struct {
	TP                                    logstore.TopicPartition
	Leader, LeaderEpoch, PartitionEpoch   int32
	IsLeader                              bool
	Replicas, ISR                         []int32
	MaximalISR                            []int32 // the leader's ISR for HW and acks while a proposal is pending
	ProposalPending                       bool
	HasLog                                bool
	HighWatermark, LogEndOffset, LogStart int64
	LatestEpoch                           int32 // of the log's epoch cache, -1 if none
	EpochEntries                          []logstore.EpochEntry
}

// Replica returns tp's replica state, false if the broker does not host it.
func (b *SimBroker) Replica(tp logstore.TopicPartition) (SimReplicaState, bool) {
	if b.dead {
		return SimReplicaState{}, false
	}
	b.rm.mu.RLock()
	p, ok := b.rm.partitions[tp]
	b.rm.mu.RUnlock()
	if !ok {
		return SimReplicaState{}, false
	}
	return p.simState(), true
}

// Replicas returns every hosted partition's replica state, by topic and partition.
func (b *SimBroker) Replicas() []SimReplicaState {
	if b.dead {
		return nil
	}
	var out []SimReplicaState
	for _, p := range b.sortedPartitions() {
		out = append(out, p.simState())
	}
	return out
}

func (p *Partition) simState() SimReplicaState {
	p.mu.RLock()
	defer p.mu.RUnlock()
	s := SimReplicaState{TP: p.tp, Leader: p.mu.leaderID, LeaderEpoch: p.mu.leaderEpoch, PartitionEpoch: p.mu.partitionEpoch,
		IsLeader: p.mu.leaderID == p.localBrokerID, Replicas: slices.Clone(p.mu.replicas), ISR: slices.Clone(p.mu.isr),
		MaximalISR: slices.Clone(p.mu.maximalISR), ProposalPending: p.mu.pending != nil, LatestEpoch: -1,
		HighWatermark: -1, LogEndOffset: -1, LogStart: -1}
	if l := p.mu.log; l != nil {
		s.HasLog = true
		s.HighWatermark, s.LogEndOffset, s.LogStart = l.HighWatermark(), l.LogEndOffset(), l.LogStartOffset()
		if e, ok := l.LatestEpoch(); ok {
			s.LatestEpoch = e
		}
		s.EpochEntries = l.EpochEntries()
	}
	return s
}

// SimBatch is one record batch of a log as stored.
type SimBatch struct {
	BaseOffset, LastOffset int64
	LeaderEpoch            int32
	CRC                    uint32
	Bytes                  []byte // the whole batch, header included
}

// ReadLog returns tp's batches in [from, to) (whole batches overlapping it) from the log as
// stored, leaders' and followers' alike; to < 0 means the log end. It reads the log
// whether or not the broker hosts the partition (a log recovered at start is readable
// before the controller's LeaderAndIsr).
func (b *SimBroker) ReadLog(tp logstore.TopicPartition, from, to int64) ([]SimBatch, error) {
	if b.dead {
		return nil, errors.New("sim broker is down")
	}
	l, ok := b.logs.GetLog(tp)
	if !ok {
		return nil, fmt.Errorf("%s: %w", tp, ErrUnknownTopicOrPartition)
	}
	if to < 0 {
		to = l.LogEndOffset()
	}
	from = max(from, l.LogStartOffset())
	var out []SimBatch
	for from < to {
		info, err := l.Read(from, 1<<20, to, true)
		if err != nil {
			return nil, fmt.Errorf("read %s at %d: %w", tp, from, err)
		}
		if info.Size == 0 {
			break
		}
		data, err := info.Bytes()
		if err != nil {
			return nil, err
		}
		next := from
		for len(data) > 0 {
			batch, rest, err := recordbatch.Next(data)
			if err != nil {
				return nil, fmt.Errorf("read %s at %d: %w", tp, from, err)
			}
			data = rest
			out = append(out, SimBatch{BaseOffset: batch.BaseOffset(), LastOffset: batch.LastOffset(),
				LeaderEpoch: batch.PartitionLeaderEpoch(), CRC: batch.CRC(), Bytes: slices.Clone([]byte(batch))})
			next = batch.NextOffset()
		}
		if next <= from {
			break
		}
		from = next
	}
	return out, nil
}

// LogTopicPartitions lists the partitions with a log on this broker's disk (recovered at
// start or created since), whether hosted or not.
func (b *SimBroker) LogTopicPartitions() []logstore.TopicPartition {
	if b.dead {
		return nil
	}
	var out []logstore.TopicPartition
	for _, l := range b.logs.AllLogs() {
		out = append(out, l.TopicPartition())
	}
	slices.SortFunc(out, compareTP)
	return out
}
