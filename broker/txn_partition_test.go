package broker

// Tests of the partition side of transactions at the broker: request builders for
// WriteTxnMarkers (27) and DescribeProducers (61) in TestEveryAdvertisedVersionRoundTrips;
// transactional produce with and without KIP-890 verification; markers and their errors;
// read_committed Fetch (LSO bound, aborted transactions, both the copying and the sendfile
// path, delayed fetches woken by a marker) and ListOffsets; DescribeProducers; the
// AddPartitionsToTxnManager's batching and error translation over a fake transport.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/coordinator/group"
	"github.com/samsa-kafka/samsa/internal/recordbatch"
	"github.com/samsa-kafka/samsa/logstore"
)

func init() {
	requestBuilders[27] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrWriteTxnMarkersRequest()
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = 424242, 0, false, 0
			t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			t.Topic, t.Partitions = "rt", []int32{0, 1}
			m.Topics = append(m.Topics, t)
			req.Markers = append(req.Markers, m)
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.WriteTxnMarkersResponse)
			if len(resp.Markers) != 1 || len(resp.Markers[0].Topics) != 1 || len(resp.Markers[0].Topics[0].Partitions) != 2 {
				t.Fatalf("write txn markers response: %+v", resp)
			}
			for _, p := range resp.Markers[0].Topics[0].Partitions {
				if p.ErrorCode != 0 {
					t.Fatalf("marker on rt-%d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
				}
			}
		},
	}
	requestBuilders[61] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrDescribeProducersRequest()
			t := kmsg.NewDescribeProducersRequestTopic()
			t.Topic, t.Partitions = "rt", []int32{0, 1}
			req.Topics = append(req.Topics, t)
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			resp := r.(*kmsg.DescribeProducersResponse)
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
				t.Fatalf("describe producers response: %+v", resp)
			}
			for _, p := range resp.Topics[0].Partitions {
				if p.ErrorCode != 0 {
					t.Fatalf("describe producers rt-%d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
				}
			}
		},
	}
}

// txnBatch is a producer batch of n records; transactional sets the flag, control makes it
// a (client-sent, hence refused) control batch.
func txnBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, transactional, control bool, value string) []byte {
	t.Helper()
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		recs[i] = recordbatch.Record{OffsetDelta: int32(i), Value: []byte(fmt.Sprintf("%s-%d", value, i))}
	}
	var attrs int16
	if transactional {
		attrs |= recordbatch.AttrTransactional
	}
	if control {
		attrs |= recordbatch.AttrControl
	}
	ts := time.Now().UnixMilli()
	b, err := recordbatch.Build(recordbatch.Header{PartitionLeaderEpoch: -1, Attributes: attrs, LastOffsetDelta: int32(n - 1),
		BaseTimestamp: ts, MaxTimestamp: ts, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}, recs, recordbatch.None)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// produceOne sends one batch to topic-partition with acks=-1 and returns its partition response.
func produceOne(t testing.TB, e *dataEnv, txnID *string, topic string, partition int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis, req.TransactionID = -1, 5000, txnID
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := e.handle(req)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// writeMarker sends WriteTxnMarkers (v1) for one producer on topic's partitions.
func writeMarker(t testing.TB, e *dataEnv, pid int64, epoch int16, commit bool, coordEpoch int32, topic string, partitions ...int32) map[int32]int16 {
	t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(1)
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, epoch, commit, coordEpoch
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, partitions
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	resp, err := e.handle(req)
	if err != nil {
		t.Fatalf("write txn markers: %v", err)
	}
	out := map[int32]int16{}
	for _, rm := range resp.(*kmsg.WriteTxnMarkersResponse).Markers {
		if rm.ProducerID != pid {
			t.Fatalf("marker response for producer %d, want %d", rm.ProducerID, pid)
		}
		for _, rt := range rm.Topics {
			for _, p := range rt.Partitions {
				out[p.Partition] = p.ErrorCode
			}
		}
	}
	return out
}

// fetchOne fetches topic-partition 0 from offset with the given isolation level through the
// dispatcher (the copying path).
func fetchOne(t testing.TB, e *dataEnv, topic string, offset int64, isolation int8, maxWait time.Duration) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.IsolationLevel = -1, int32(maxWait/time.Millisecond), 1, 1<<20, isolation
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := e.handle(req)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	return resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
}

func listLatest(t testing.TB, e *dataEnv, topic string, isolation int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(5)
	req.ReplicaID, req.IsolationLevel = -1, isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 0, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := e.handle(req)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("list offsets: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	return p.Offset
}

// batchValues decodes the record values of raw batches, skipping control batches; with
// aborted (read_committed), the records of aborted transactions are dropped as a consumer does.
func batchValues(t testing.TB, raw []byte, aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction) []string {
	t.Helper()
	var out []string
	skipping := map[int64]bool{}
	for len(raw) > 0 {
		b, rest, err := recordbatch.Next(raw)
		if err != nil {
			break
		}
		raw = rest
		for _, a := range aborted {
			if a.FirstOffset <= b.LastOffset() && a.ProducerID == b.ProducerID() && b.Transactional() {
				skipping[a.ProducerID] = true
			}
		}
		if b.Control() {
			delete(skipping, b.ProducerID())
			continue
		}
		if skipping[b.ProducerID()] {
			continue
		}
		recs := b.Records() // uncompressed in these tests
		for i := int32(0); i < b.RecordCount(); i++ {
			var r recordbatch.Record
			if err := recordbatch.ParseRecord(recs, &r, false); err != nil {
				t.Fatal(err)
			}
			out = append(out, string(r.Value))
			recs = recs[r.Size:]
		}
	}
	return out
}

func withoutVerification(e *dataEnv) {
	e.cfg.Props["transaction.partition.verification.enable"] = "false"
}

// The partition side end to end without a coordinator (verification off, markers sent by
// hand): an open transaction holds the LSO at its first offset for read_committed Fetch and
// ListOffsets; an ABORT marker moves it and the aborted transaction is listed; a COMMIT
// makes the data visible; read_uncommitted sees everything all along.
func TestTxnReadCommittedWithMarkers(t *testing.T) {
	e := newDataEnv(t)
	withoutVerification(e)
	e.createTopic("txn", 1)
	txnID := "hand-built"

	if r := produceOne(t, e, nil, "txn", 0, txnBatch(t, -1, -1, -1, 2, false, false, "plain")); r.ErrorCode != 0 {
		t.Fatalf("plain produce: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// Producer 7000 opens a transaction at offset 2.
	if r := produceOne(t, e, &txnID, "txn", 0, txnBatch(t, 7000, 0, 0, 3, true, false, "aborted")); r.ErrorCode != 0 || r.BaseOffset != 2 {
		t.Fatalf("transactional produce: %v at %d", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
	}
	if got := listLatest(t, e, "txn", 0); got != 5 {
		t.Fatalf("read_uncommitted latest %d, want 5", got)
	}
	if got := listLatest(t, e, "txn", 1); got != 2 {
		t.Fatalf("read_committed latest (LSO) %d, want 2", got)
	}
	p := fetchOne(t, e, "txn", 0, 1, 0)
	if p.ErrorCode != 0 || p.LastStableOffset != 2 || p.HighWatermark != 5 {
		t.Fatalf("read_committed fetch: error %d, LSO %d, HW %d", p.ErrorCode, p.LastStableOffset, p.HighWatermark)
	}
	if got := batchValues(t, p.RecordBatches, p.AbortedTransactions); !slices.Equal(got, []string{"plain-0", "plain-1"}) {
		t.Fatalf("read_committed before the marker: %q", got)
	}
	if p.AbortedTransactions == nil {
		t.Fatalf("read_committed answers an empty, not null, aborted list")
	}

	// A read_committed fetch at the LSO waits; the ABORT marker wakes it.
	done := make(chan kmsg.FetchResponseTopicPartition, 1)
	start := time.Now()
	go func() { done <- fetchOne(t, e, "txn", 2, 1, 10*time.Second) }()
	time.Sleep(200 * time.Millisecond)
	if codes := writeMarker(t, e, 7000, 0, false, 3, "txn", 0); codes[0] != 0 {
		t.Fatalf("abort marker: %v", kerr.ErrorForCode(codes[0]))
	}
	woken := <-done
	if time.Since(start) > 5*time.Second {
		t.Fatalf("delayed read_committed fetch was not woken by the marker")
	}
	if woken.LastStableOffset != 6 || len(woken.AbortedTransactions) != 1 ||
		woken.AbortedTransactions[0].ProducerID != 7000 || woken.AbortedTransactions[0].FirstOffset != 2 {
		t.Fatalf("after abort: LSO %d, aborted %+v", woken.LastStableOffset, woken.AbortedTransactions)
	}
	if got := batchValues(t, woken.RecordBatches, woken.AbortedTransactions); len(got) != 0 {
		t.Fatalf("read_committed sees aborted records %q", got)
	}

	// Producer 7001 commits.
	if r := produceOne(t, e, &txnID, "txn", 0, txnBatch(t, 7001, 0, 0, 2, true, false, "committed")); r.ErrorCode != 0 || r.BaseOffset != 6 {
		t.Fatalf("second transaction: %v at %d", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
	}
	if got := listLatest(t, e, "txn", 1); got != 6 {
		t.Fatalf("LSO with the second transaction open: %d, want 6", got)
	}
	if codes := writeMarker(t, e, 7001, 0, true, 3, "txn", 0); codes[0] != 0 {
		t.Fatalf("commit marker: %v", kerr.ErrorForCode(codes[0]))
	}
	if got := listLatest(t, e, "txn", 1); got != 9 {
		t.Fatalf("LSO after commit %d, want 9", got)
	}
	all := fetchOne(t, e, "txn", 0, 1, 0)
	want := []string{"plain-0", "plain-1", "committed-0", "committed-1"}
	if got := batchValues(t, all.RecordBatches, all.AbortedTransactions); !slices.Equal(got, want) {
		t.Fatalf("read_committed: %q, want %q (aborted %+v)", got, want, all.AbortedTransactions)
	}
	unc := fetchOne(t, e, "txn", 0, 0, 0)
	if unc.AbortedTransactions != nil {
		t.Fatalf("read_uncommitted got an aborted list %+v", unc.AbortedTransactions)
	}
	if got := batchValues(t, unc.RecordBatches, nil); len(got) != 7 {
		t.Fatalf("read_uncommitted sees %q, want all 7 records", got)
	}

	// The same through real consumers on the sendfile path.
	e.serve()
	consume := func(level kgo.IsolationLevel, n int) []string {
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.ConsumeTopics("txn"), kgo.FetchIsolationLevel(level),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		var got []string
		for len(got) < n {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("consumed %q, want %d records: %v", got, n, err)
			}
			fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		return got
	}
	if got := consume(kgo.ReadCommitted(), 4); !slices.Equal(got, want) {
		t.Fatalf("kgo read_committed: %q, want %q", got, want)
	}
	if got := consume(kgo.ReadUncommitted(), 7); len(got) != 7 || got[2] != "aborted-0" {
		t.Fatalf("kgo read_uncommitted: %q", got)
	}

	// sarama's read_committed consumer drops the aborted transaction too.
	for _, level := range []sarama.IsolationLevel{sarama.ReadCommitted, sarama.ReadUncommitted} {
		cfg := sarama.NewConfig()
		cfg.Version = sarama.V3_7_0_0
		cfg.Consumer.IsolationLevel = level
		cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
		c, err := sarama.NewConsumer([]string{e.addr}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		pc, err := c.ConsumePartition("txn", 0, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		timeout := time.After(10 * time.Second)
	loop:
		for {
			select {
			case m := <-pc.Messages():
				got = append(got, string(m.Value))
			case err := <-pc.Errors():
				t.Fatalf("sarama consume: %v", err)
			case <-time.After(500 * time.Millisecond):
				if len(got) >= 4 {
					break loop
				}
			case <-timeout:
				break loop
			}
		}
		pc.Close()
		c.Close()
		if level == sarama.ReadCommitted && !slices.Equal(got, want) {
			t.Fatalf("sarama read_committed: %q, want %q", got, want)
		}
		if level == sarama.ReadUncommitted && len(got) != 7 {
			t.Fatalf("sarama read_uncommitted: %q", got)
		}
	}
}

// WriteTxnMarkers' per-partition errors (KafkaApis.handleWriteTxnMarkersRequest and the
// log's marker fencing).
func TestWriteTxnMarkersErrors(t *testing.T) {
	e := newDataEnv(t)
	withoutVerification(e)
	e.createTopic("wm", 1)
	e.createTopic("elsewhere", 1)
	e.leaderAndIsr("elsewhere", 2, []int32{2, testBrokerID}) // this broker follows
	txnID := "t"

	if r := produceOne(t, e, &txnID, "wm", 0, txnBatch(t, 8000, 3, 0, 1, true, false, "v")); r.ErrorCode != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if codes := writeMarker(t, e, 8000, 3, true, 5, "wm", 0); codes[0] != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(codes[0]))
	}
	if r := produceOne(t, e, &txnID, "wm", 0, txnBatch(t, 8000, 3, 1, 1, true, false, "v")); r.ErrorCode != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	for _, tc := range []struct {
		name       string
		epoch      int16
		coordEpoch int32
		topic      string
		partition  int32
		want       *kerr.Error
	}{
		{"old coordinator epoch", 3, 4, "wm", 0, kerr.TransactionCoordinatorFenced},
		{"old producer epoch", 2, 5, "wm", 0, kerr.InvalidProducerEpoch},
		{"unknown partition", 3, 5, "nope", 0, kerr.UnknownTopicOrPartition},
		{"partition this broker follows", 3, 5, "elsewhere", 0, kerr.NotLeaderForPartition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if codes := writeMarker(t, e, 8000, tc.epoch, false, tc.coordEpoch, tc.topic, tc.partition); codes[tc.partition] != tc.want.Code {
				t.Fatalf("got %v, want %v", kerr.ErrorForCode(codes[tc.partition]), tc.want)
			}
		})
	}
	// The transaction is still open: the fenced markers wrote nothing.
	if got := listLatest(t, e, "wm", 1); got != 2 {
		t.Fatalf("LSO %d, want 2 (transaction still open)", got)
	}
	if codes := writeMarker(t, e, 8000, 3, false, 5, "wm", 0); codes[0] != 0 {
		t.Fatalf("abort at the current epochs: %v", kerr.ErrorForCode(codes[0]))
	}

	// Two markers of one producer share its response entry.
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	for _, topic := range []string{"wm", "nope"} {
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch = 8000, 3, 5
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = topic, []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
	}
	resp, err := e.handle(req)
	if err != nil {
		t.Fatal(err)
	}
	if ms := resp.(*kmsg.WriteTxnMarkersResponse).Markers; len(ms) != 1 || len(ms[0].Topics) != 2 {
		t.Fatalf("two markers of one producer: %+v", ms)
	}
}

// Bad produce input: a control batch from a client is INVALID_RECORD; transactional records
// without a transactional id fail the whole request with TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
// (With verification on, a transactional control batch is verified first, as in Kafka, so
// without a coordinator it fails verification before the log sees it.)
func TestProduceTransactionalBadInput(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("bad", 1)
	txnID := "t"
	if r := produceOne(t, e, &txnID, "bad", 0, txnBatch(t, 9000, 0, 0, 1, true, true, "marker")); r.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("client control batch, no coordinator: %v, want NOT_ENOUGH_REPLICAS", kerr.ErrorForCode(r.ErrorCode))
	}
	withoutVerification(e)
	if r := produceOne(t, e, &txnID, "bad", 0, txnBatch(t, 9000, 0, 0, 1, true, true, "marker")); r.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("client control batch: %v, want INVALID_RECORD", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := produceOne(t, e, nil, "bad", 0, txnBatch(t, 9000, 0, 0, 1, true, false, "v")); r.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("transactional batch without a transactional id: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if got := listLatest(t, e, "bad", 0); got != 0 {
		t.Fatalf("log end %d after refused batches", got)
	}
}

// fakeVerifier answers verifications from a table and counts the calls.
type fakeVerifier struct {
	mu    sync.Mutex
	codes map[logstore.TopicPartition]int16
	calls []string
}

func (f *fakeVerifier) verify(ctx context.Context, id string, pid int64, epoch int16, tps []logstore.TopicPartition) map[logstore.TopicPartition]int16 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("%s/%d/%d/%v", id, pid, epoch, tps))
	out := map[logstore.TopicPartition]int16{}
	for _, tp := range tps {
		if c := f.codes[tp]; c != 0 {
			out[tp] = c
		}
	}
	return out
}

func (f *fakeVerifier) shutdown() {}

// KIP-890 verification on produce: a producer's first transactional batch on a partition
// is verified; the coordinator's answers reach the producer as Kafka 3.7 translates them;
// a batch of an ongoing transaction is not verified again.
func TestProduceTransactionVerification(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("ver", 3)
	tp := func(p int32) logstore.TopicPartition { return logstore.TopicPartition{Topic: "ver", Partition: p} }
	f := &fakeVerifier{codes: map[logstore.TopicPartition]int16{
		tp(1): kerr.InvalidTxnState.Code,
		tp(2): kerr.ConcurrentTransactions.Code,
	}}
	e.rm.verifier = f
	txnID := "verified"

	r := produceOne(t, e, &txnID, "ver", 1, txnBatch(t, 100, 0, 0, 1, true, false, "v"))
	if r.ErrorCode != kerr.InvalidTxnState.Code || r.ErrorMessage == nil || *r.ErrorMessage != "Partition was not added to the transaction" {
		t.Fatalf("not added: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	r = produceOne(t, e, &txnID, "ver", 2, txnBatch(t, 100, 0, 0, 1, true, false, "v"))
	if r.ErrorCode != kerr.NotEnoughReplicas.Code || r.ErrorMessage == nil ||
		!strings.Contains(*r.ErrorMessage, "Unable to verify the partition has been added to the transaction. Underlying error: CONCURRENT_TRANSACTIONS") {
		t.Fatalf("concurrent transactions: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	for p := int32(1); p <= 2; p++ {
		if l, _ := e.logs.GetLog(tp(p)); l.LogEndOffset() != 0 {
			t.Fatalf("unverified batch appended to ver-%d", p)
		}
	}
	// Verified: appended; the next batch of the same transaction needs no verification.
	if r := produceOne(t, e, &txnID, "ver", 0, txnBatch(t, 100, 0, 0, 1, true, false, "v")); r.ErrorCode != 0 {
		t.Fatalf("verified produce: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := produceOne(t, e, &txnID, "ver", 0, txnBatch(t, 100, 0, 1, 1, true, false, "v")); r.ErrorCode != 0 {
		t.Fatalf("second batch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	f.mu.Lock()
	calls := slices.Clone(f.calls)
	f.mu.Unlock()
	if len(calls) != 3 || calls[2] != "verified/100/0/[ver-0]" {
		t.Fatalf("verifications: %q", calls)
	}
	// Non-transactional batches are never verified.
	if r := produceOne(t, e, &txnID, "ver", 0, txnBatch(t, -1, -1, -1, 1, false, false, "plain")); r.ErrorCode != 0 {
		t.Fatalf("plain produce with a transactional id: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if f.mu.Lock(); len(f.calls) != 3 {
		t.Errorf("plain batch was verified: %q", f.calls)
	}
	f.mu.Unlock()
}

// The produce path hands each batch's base sequence to the verification state: a batch
// whose verification failed retriably keeps later batches of the producer (higher
// sequences, verified meanwhile) from opening the transaction ahead of it, so the
// producer's retry of the earlier batch is not answered OUT_OF_ORDER_SEQUENCE_NUMBER for
// ever (Kafka's VerificationStateEntry lowest sequence).
func TestProduceVerificationLowestSequence(t *testing.T) {
	e := newDataEnv(t)
	e.createTopic("seq", 1)
	tp := logstore.TopicPartition{Topic: "seq", Partition: 0}
	f := &fakeVerifier{codes: map[logstore.TopicPartition]int16{tp: kerr.NotCoordinator.Code}}
	e.rm.verifier = f
	txnID := "seq"
	if r := produceOne(t, e, &txnID, "seq", 0, txnBatch(t, 300, 0, 0, 2, true, false, "a")); r.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("unverifiable first batch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	f.mu.Lock()
	f.codes = map[logstore.TopicPartition]int16{}
	f.mu.Unlock()
	if r := produceOne(t, e, &txnID, "seq", 0, txnBatch(t, 300, 0, 2, 2, true, false, "b")); r.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("later batch ahead of the unverified one: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := produceOne(t, e, &txnID, "seq", 0, txnBatch(t, 300, 0, 0, 2, true, false, "a")); r.ErrorCode != 0 {
		t.Fatalf("retried first batch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := produceOne(t, e, &txnID, "seq", 0, txnBatch(t, 300, 0, 2, 2, true, false, "b")); r.ErrorCode != 0 {
		t.Fatalf("retried later batch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if l, _ := e.logs.GetLog(tp); l.LogEndOffset() != 4 {
		t.Fatalf("log end %d, want 4", l.LogEndOffset())
	}
}

// A read_committed fetch lists the aborted transactions up to the bound of what it read
// (LocalLog.addAbortedTransactions: the next segment's base offset here), not up to the
// LSO: a consumer reading an old segment is not sent every later aborted transaction.
func TestTxnFetchAbortedUpToSegmentEnd(t *testing.T) {
	e := newDataEnv(t)
	withoutVerification(e)
	e.createTopic("abseg", 1)
	txnID := "abseg"
	l, _ := e.logs.GetLog(logstore.TopicPartition{Topic: "abseg", Partition: 0})
	for i, pid := range []int64{8100, 8101} {
		if r := produceOne(t, e, &txnID, "abseg", 0, txnBatch(t, pid, 0, 0, 2, true, false, "aborted")); r.ErrorCode != 0 {
			t.Fatalf("transactional produce: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		if got := writeMarker(t, e, pid, 0, false, 0, "abseg", 0); got[0] != 0 {
			t.Fatalf("abort marker: %v", got)
		}
		if i == 0 {
			if err := l.Roll(); err != nil { // the second transaction starts segment 3
				t.Fatal(err)
			}
		}
	}
	if r := produceOne(t, e, nil, "abseg", 0, txnBatch(t, -1, -1, -1, 1, false, false, "plain")); r.ErrorCode != 0 {
		t.Fatalf("plain produce: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	aborted := func(p kmsg.FetchResponseTopicPartition) []int64 {
		var out []int64
		for _, a := range p.AbortedTransactions {
			out = append(out, a.ProducerID)
		}
		return out
	}
	p := fetchOne(t, e, "abseg", 0, 1, 0)
	if p.ErrorCode != 0 || p.LastStableOffset != 7 || !slices.Equal(aborted(p), []int64{8100}) {
		t.Fatalf("read_committed from the first segment: error %d, LSO %d, aborted %v", p.ErrorCode, p.LastStableOffset, aborted(p))
	}
	p = fetchOne(t, e, "abseg", 3, 1, 0)
	if got := batchValues(t, p.RecordBatches, p.AbortedTransactions); !slices.Equal(aborted(p), []int64{8101}) || !slices.Equal(got, []string{"plain-0"}) {
		t.Fatalf("read_committed from the second segment: aborted %v, values %q", aborted(p), got)
	}
}

// DescribeProducers lists a partition's producers with their open transaction's first offset.
func TestDescribeProducers(t *testing.T) {
	e := newDataEnv(t)
	withoutVerification(e)
	e.createTopic("dp", 1)
	txnID := "t"
	if r := produceOne(t, e, &txnID, "dp", 0, txnBatch(t, 5000, 2, 0, 2, true, false, "v")); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	if r := produceOne(t, e, nil, "dp", 0, txnBatch(t, 5001, 0, 0, 3, false, false, "v")); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	req := kmsg.NewPtrDescribeProducersRequest()
	for _, topic := range []string{"dp", "missing"} {
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := e.handle(req)
	if err != nil {
		t.Fatal(err)
	}
	ts := resp.(*kmsg.DescribeProducersResponse).Topics
	if ts[1].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %v", kerr.ErrorForCode(ts[1].Partitions[0].ErrorCode))
	}
	p := ts[0].Partitions[0]
	if p.ErrorCode != 0 || len(p.ActiveProducers) != 2 {
		t.Fatalf("producers: %+v", p)
	}
	byID := map[int64]kmsg.DescribeProducersResponseTopicPartitionActiveProducer{}
	for _, ap := range p.ActiveProducers {
		byID[ap.ProducerID] = ap
	}
	if a := byID[5000]; a.ProducerEpoch != 2 || a.LastSequence != 1 || a.CurrentTxnStartOffset != 0 {
		t.Fatalf("transactional producer: %+v", a)
	}
	if a := byID[5001]; a.LastSequence != 2 || a.CurrentTxnStartOffset != -1 {
		t.Fatalf("idempotent producer: %+v", a)
	}
}

// txnVerifyEnv is an AddPartitionsToTxnManager over a metadata cache where broker 2 leads
// __transaction_state partition 0 and broker 3 partition 1 (2 partitions), with a scripted
// transport.
type txnVerifyEnv struct {
	m     *addPartitionsToTxnManager
	mu    sync.Mutex
	reqs  map[int32][]*kmsg.AddPartitionsToTxnRequest
	reply func(node int32, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error)
	gate  chan struct{} // if set, sends wait for it
}

func newTxnVerifyEnv(t *testing.T) *txnVerifyEnv {
	log, _ := newTestLogger(t)
	mc := NewMetadataCache(1)
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.Version = 8
	for _, id := range []int32{1, 2, 3} {
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID = id
		ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
		ep.Host, ep.Port, ep.ListenerName = "127.0.0.1", 9000+id, "PLAINTEXT"
		lb.Endpoints = append(lb.Endpoints, ep)
		req.LiveBrokers = append(req.LiveBrokers, lb)
	}
	ts := kmsg.NewUpdateMetadataRequestTopicState()
	ts.Topic = TransactionStateTopicName
	for p, leader := range []int32{2, 3} {
		ps := kmsg.NewUpdateMetadataRequestTopicPartition()
		ps.Topic, ps.Partition, ps.Leader, ps.ISR, ps.Replicas = TransactionStateTopicName, int32(p), leader, []int32{leader}, []int32{leader}
		ts.PartitionStates = append(ts.PartitionStates, ps)
	}
	req.TopicStates = append(req.TopicStates, ts)
	mc.UpdateMetadata(req)
	v := &txnVerifyEnv{reqs: map[int32][]*kmsg.AddPartitionsToTxnRequest{}}
	v.m = newAddPartitionsToTxnManager(1, mc, "PLAINTEXT", func() int32 { return 2 }, 5*time.Second, log)
	v.m.send = func(ctx context.Context, node int32, addr string, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
		if v.gate != nil {
			select {
			case <-v.gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		v.mu.Lock()
		v.reqs[node] = append(v.reqs[node], req)
		reply := v.reply
		v.mu.Unlock()
		return reply(node, req)
	}
	t.Cleanup(v.m.shutdown)
	return v
}

// okReply answers every partition with code, except the listed overrides.
func okReply(code int16) func(int32, *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
	return func(_ int32, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
		resp := kmsg.NewPtrAddPartitionsToTxnResponse()
		for _, tr := range req.Transactions {
			rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rt.TransactionalID = tr.TransactionalID
			for _, t := range tr.Topics {
				tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				tt.Topic = t.Topic
				for _, p := range t.Partitions {
					pp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					pp.Partition, pp.ErrorCode = p, code
					tt.Partitions = append(tt.Partitions, pp)
				}
				rt.Topics = append(rt.Topics, tt)
			}
			resp.Transactions = append(resp.Transactions, rt)
		}
		return resp, nil
	}
}

// txnIDsFor returns n transactional ids whose __transaction_state partition (of 2) is p.
func txnIDsFor(p int32, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		id := fmt.Sprintf("txn-%d", i)
		if group.PartitionFor(id, 2) == p {
			out = append(out, id)
		}
	}
	return out
}

func TestAddPartitionsToTxnManager(t *testing.T) {
	tps := []logstore.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}, {Topic: "b", Partition: 0}}
	ctx := context.Background()

	t.Run("verified and batched per coordinator", func(t *testing.T) {
		v := newTxnVerifyEnv(t)
		v.reply = okReply(0)
		v.gate = make(chan struct{})
		ids := append(txnIDsFor(0, 3), txnIDsFor(1, 1)...)
		var wg sync.WaitGroup
		results := make([]map[logstore.TopicPartition]int16, len(ids))
		for i, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = v.m.verify(ctx, id, int64(i), 0, tps)
			}()
		}
		// Let every verification queue, then let the sends go: the first request to each
		// node may leave with fewer transactions, the rest follow in one more request.
		time.Sleep(100 * time.Millisecond)
		close(v.gate)
		wg.Wait()
		for i, r := range results {
			if len(r) != 0 {
				t.Fatalf("verification %d: %v", i, r)
			}
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		n2 := 0
		for _, r := range v.reqs[2] {
			for _, tr := range r.Transactions {
				n2++
				if !tr.VerifyOnly || len(tr.Topics) != 2 {
					t.Fatalf("request transaction %+v", tr)
				}
			}
		}
		if n2 != 3 || len(v.reqs[2]) > 2 || len(v.reqs[3]) != 1 {
			t.Fatalf("requests to node 2: %d (%d transactions), to node 3: %d", len(v.reqs[2]), n2, len(v.reqs[3]))
		}
	})

	t.Run("errors translated", func(t *testing.T) {
		v := newTxnVerifyEnv(t)
		id := txnIDsFor(0, 1)[0]
		for _, tc := range []struct {
			name  string
			reply func(int32, *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error)
			want  int16 // for every partition; 0: verified
		}{
			{"not added", okReply(kerr.InvalidTxnState.Code), kerr.InvalidTxnState.Code},
			{"producer fenced", okReply(kerr.ProducerFenced.Code), kerr.InvalidProducerEpoch.Code},
			{"top-level cluster authorization", func(int32, *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
				resp := kmsg.NewPtrAddPartitionsToTxnResponse()
				resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				return resp, nil
			}, kerr.InvalidTxnState.Code},
			{"network", func(int32, *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
				return nil, errors.New("connection reset")
			}, kerr.NetworkException.Code},
			{"coordinator without v4", func(int32, *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
				return nil, errVerificationUnsupported
			}, 0},
			{"transaction missing from the response", func(int32, *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
				return kmsg.NewPtrAddPartitionsToTxnResponse(), nil
			}, kerr.NetworkException.Code},
		} {
			t.Run(tc.name, func(t *testing.T) {
				v.mu.Lock()
				v.reply = tc.reply
				v.mu.Unlock()
				got := v.m.verify(ctx, id, 1, 0, tps)
				for _, tp := range tps {
					if got[tp] != tc.want {
						t.Fatalf("%s: %v, want %v", tp, kerr.ErrorForCode(got[tp]), kerr.ErrorForCode(tc.want))
					}
				}
			})
		}
	})

	t.Run("no coordinator", func(t *testing.T) {
		v := newTxnVerifyEnv(t)
		v.m.numPartitions = func() int32 { return 3 } // partition 2 has no leader in the cache
		var id string
		for i := 0; ; i++ {
			if id = fmt.Sprintf("x%d", i); group.PartitionFor(id, 3) == 2 {
				break
			}
		}
		if got := v.m.verify(ctx, id, 1, 0, tps[:1]); got[tps[0]] != kerr.CoordinatorNotAvailable.Code {
			t.Fatalf("got %v", got)
		}
	})

	t.Run("epochs of a queued verification", func(t *testing.T) {
		v := newTxnVerifyEnv(t)
		v.reply = okReply(0)
		v.gate = make(chan struct{})
		ids := txnIDsFor(0, 2)
		// A first request occupies node 2; the next ones queue behind it.
		first := make(chan map[logstore.TopicPartition]int16, 1)
		go func() { first <- v.m.verify(ctx, ids[1], 9, 0, tps) }()
		time.Sleep(50 * time.Millisecond)
		queued := make(chan map[logstore.TopicPartition]int16, 1)
		go func() { queued <- v.m.verify(ctx, ids[0], 1, 5, tps) }()
		time.Sleep(50 * time.Millisecond)
		// A lower epoch is refused at once.
		if got := v.m.verify(ctx, ids[0], 1, 4, tps); got[tps[0]] != kerr.InvalidProducerEpoch.Code {
			t.Fatalf("lower epoch: %v", got)
		}
		// The same epoch replaces the queued one, which gets NETWORK_EXCEPTION.
		same := make(chan map[logstore.TopicPartition]int16, 1)
		go func() { same <- v.m.verify(ctx, ids[0], 1, 5, tps) }()
		if got := <-queued; got[tps[0]] != kerr.NetworkException.Code {
			t.Fatalf("replaced by a retry: %v", got)
		}
		// A higher epoch fences the queued one.
		time.Sleep(50 * time.Millisecond)
		higher := make(chan map[logstore.TopicPartition]int16, 1)
		go func() { higher <- v.m.verify(ctx, ids[0], 1, 6, tps) }()
		if got := <-same; got[tps[0]] != kerr.InvalidProducerEpoch.Code {
			t.Fatalf("fenced by a higher epoch: %v", got)
		}
		close(v.gate)
		if got := <-higher; len(got) != 0 {
			t.Fatalf("higher epoch: %v", got)
		}
		if got := <-first; len(got) != 0 {
			t.Fatalf("first: %v", got)
		}
	})
}

func TestTxnPartitionAPIVersionsMatchKafka37(t *testing.T) {
	for key, r := range map[int16][2]int16{27: {0, 1}, 61: {0, 0}} {
		if minV, maxV, ok := SupportedVersions(key); !ok || minV != r[0] || maxV != r[1] {
			t.Errorf("%s: [%d, %d] ok=%v, want %v", kmsg.NameForKey(key), minV, maxV, ok, r)
		}
	}
}
