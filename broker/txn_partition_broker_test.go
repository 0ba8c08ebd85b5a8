package broker

// The partition side of transactions on a real broker (ZooKeeper, the transaction
// coordinator, real clients): KIP-890 verification of a transactional batch against the
// coordinator over the inter-broker listener, and read_committed against read_uncommitted
// consumers after franz-go transactions committed and aborted (markers sent by the
// coordinator through WriteTxnMarkers).

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// singleTxnBroker is one broker whose __transaction_state fits a one-broker cluster.
func singleTxnBroker(t *testing.T) *Broker {
	t.Helper()
	b := startTestBroker(t, testChroot(t), map[string]string{
		"transaction.state.log.replication.factor": "1",
		"transaction.state.log.min.isr":            "1",
		"transaction.state.log.num.partitions":     "2",
		"offsets.topic.num.partitions":             "1",
		"controlled.shutdown.enable":               "false",
	})
	waitController(t, b)
	return b
}

func createTopicKadm(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, partitions, 1, nil, topic)
	if err != nil || resp[topic].Err != nil {
		t.Fatalf("create topic %s: %v %v", topic, err, resp[topic].Err)
	}
	adminWaitFor(t, 15*time.Second, "topic leader", func() bool {
		md, err := kadm.NewClient(cl).Metadata(ctx, topic)
		return err == nil && md.Topics[topic].Err == nil && len(md.Topics[topic].Partitions) == int(partitions) &&
			md.Topics[topic].Partitions[0].Leader >= 0
	})
}

// consumeValues reads topic from the start at the isolation level until n records came.
func consumeValues(t *testing.T, addr, topic string, level kgo.IsolationLevel, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %q, want %d records", got, n)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	// Nothing more is visible at this level (give a late record a chance to show up).
	late, lateCancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer lateCancel()
	fs := cl.PollRecords(late, 100)
	fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	return got
}

func TestTxnPartitionSideOnRealBroker(t *testing.T) {
	b := singleTxnBroker(t)
	addr := b.Addr("PLAINTEXT")
	createTopicKadm(t, addr, "vt", 1)

	// A franz-go transactional producer: commit, abort, commit.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("h4-kgo"), kgo.DefaultProduceTopic("vt"),
		kgo.TransactionTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	txn := func(commit bool, values ...string) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if err := cl.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction (commit %v): %v", commit, err)
		}
	}
	txn(true, "c1", "c2")
	txn(false, "a1", "a2", "a3")
	txn(true, "c3")
	if got := consumeValues(t, addr, "vt", kgo.ReadCommitted(), 3); !slices.Equal(got, []string{"c1", "c2", "c3"}) {
		t.Fatalf("read_committed: %q", got)
	}
	if got := consumeValues(t, addr, "vt", kgo.ReadUncommitted(), 6); !slices.Equal(got, []string{"c1", "c2", "a1", "a2", "a3", "c3"}) {
		t.Fatalf("read_uncommitted: %q", got)
	}

	// Several partitions in one Produce: one verification with all of them.
	createTopicKadm(t, addr, "vt3", 3)
	multi, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("h4-kgo-multi"), kgo.DefaultProduceTopic("vt3"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer multi.Close()
	for round, commit := range []bool{true, false, true} {
		if err := multi.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 9; i++ {
			multi.Produce(ctx, kgo.StringRecord(fmt.Sprintf("r%d-%d", round, i)), nil)
		}
		if err := multi.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := multi.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction %d: %v", round, err)
		}
	}
	if got := consumeValues(t, addr, "vt3", kgo.ReadCommitted(), 18); len(got) != 18 || slices.ContainsFunc(got, func(v string) bool { return strings.HasPrefix(v, "r1-") }) {
		t.Fatalf("read_committed on three partitions: %q", got)
	}

	// A hand-built transactional batch of an initialized producer that never called
	// AddPartitionsToTxn: the leader asks the coordinator (VerifyOnly) and refuses it.
	const id = "h4-raw"
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{id}
	adminWaitFor(t, 20*time.Second, "transaction coordinator", func() bool {
		r := adminDial(t, addr).request(fc, 4).(*kmsg.FindCoordinatorResponse)
		return len(r.Coordinators) == 1 && r.Coordinators[0].ErrorCode == 0
	})
	conn := adminDial(t, addr)
	var pid int64
	var epoch int16
	adminWaitFor(t, 20*time.Second, "InitProducerId", func() bool {
		ip := kmsg.NewPtrInitProducerIDRequest()
		ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr(id), 30000
		r := conn.request(ip, 4).(*kmsg.InitProducerIDResponse)
		pid, epoch = r.ProducerID, r.ProducerEpoch
		return r.ErrorCode == 0
	})
	produce := func(seq int32) kmsg.ProduceResponseTopicPartition {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis, req.TransactionID = -1, 10000, kmsg.StringPtr(id)
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "vt"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = txnBatch(t, pid, epoch, seq, 1, true, false, "raw")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return conn.request(req, 9).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}
	r := produce(0)
	if r.ErrorCode != kerr.InvalidTxnState.Code || r.ErrorMessage == nil || *r.ErrorMessage != "Partition was not added to the transaction" {
		t.Fatalf("transactional batch without AddPartitionsToTxn: %v (%v), want INVALID_TXN_STATE", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}

	// Once added, the same batch is accepted, and an abort through the coordinator closes it.
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.TransactionalID, ap.ProducerID, ap.ProducerEpoch = id, pid, epoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "vt", []int32{0}
	ap.Topics = append(ap.Topics, at)
	apr := conn.request(ap, 3).(*kmsg.AddPartitionsToTxnResponse)
	if code := apr.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("AddPartitionsToTxn: %v", kerr.ErrorForCode(code))
	}
	if r := produce(0); r.ErrorCode != 0 {
		t.Fatalf("transactional batch after AddPartitionsToTxn: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	et := kmsg.NewPtrEndTxnRequest()
	et.TransactionalID, et.ProducerID, et.ProducerEpoch, et.Commit = id, pid, epoch, false
	if code := conn.request(et, 3).(*kmsg.EndTxnResponse).ErrorCode; code != 0 {
		t.Fatalf("EndTxn: %v", kerr.ErrorForCode(code))
	}
	// The abort marker arrives: the LSO passes it and read_committed still sees three records.
	adminWaitFor(t, 20*time.Second, "abort marker", func() bool {
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.ReplicaID, lo.IsolationLevel = -1, 1
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "vt"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp = -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		p := adminDial(t, addr).request(lo, 5).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		return p.ErrorCode == 0 && p.Offset == 11 // 6 records + 3 markers, the raw record and its marker
	})
	if got := consumeValues(t, addr, "vt", kgo.ReadCommitted(), 3); len(got) != 3 {
		t.Fatalf("read_committed after the raw abort: %q", got)
	}

	// Transactional offsets become visible when the COMMIT marker lands in __consumer_offsets
	// (WriteTxnMarkers hands it to the group coordinator).
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr(id), 30000
	adminWaitFor(t, 20*time.Second, "InitProducerId again", func() bool {
		r := conn.request(ip, 4).(*kmsg.InitProducerIDResponse)
		pid, epoch = r.ProducerID, r.ProducerEpoch
		return r.ErrorCode == 0
	})
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = id, pid, epoch, "h4-group"
	if code := conn.request(ao, 3).(*kmsg.AddOffsetsToTxnResponse).ErrorCode; code != 0 {
		t.Fatalf("AddOffsetsToTxn: %v", kerr.ErrorForCode(code))
	}
	gc := kmsg.NewPtrFindCoordinatorRequest()
	gc.CoordinatorKeys = []string{"h4-group"}
	adminWaitFor(t, 20*time.Second, "group coordinator", func() bool {
		r := adminDial(t, addr).request(gc, 4).(*kmsg.FindCoordinatorResponse)
		return len(r.Coordinators) == 1 && r.Coordinators[0].ErrorCode == 0
	})
	toc := kmsg.NewPtrTxnOffsetCommitRequest()
	toc.TransactionalID, toc.Group, toc.ProducerID, toc.ProducerEpoch = id, "h4-group", pid, epoch
	tt := kmsg.NewTxnOffsetCommitRequestTopic()
	tt.Topic = "vt"
	tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	tp.Partition, tp.Offset = 0, 5
	tt.Partitions = append(tt.Partitions, tp)
	toc.Topics = append(toc.Topics, tt)
	if code := conn.request(toc, 3).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("TxnOffsetCommit: %v", kerr.ErrorForCode(code))
	}
	fetchOffset := func() int64 {
		of := kmsg.NewPtrOffsetFetchRequest()
		of.Group = "h4-group"
		ot := kmsg.NewOffsetFetchRequestTopic()
		ot.Topic, ot.Partitions = "vt", []int32{0}
		of.Topics = append(of.Topics, ot)
		r := adminDial(t, addr).request(of, 6).(*kmsg.OffsetFetchResponse)
		if r.ErrorCode != 0 || len(r.Topics) != 1 {
			return -2
		}
		return r.Topics[0].Partitions[0].Offset
	}
	if got := fetchOffset(); got != -1 {
		t.Fatalf("transactional offset visible before the marker: %d", got)
	}
	et.ProducerID, et.ProducerEpoch, et.Commit = pid, epoch, true
	if code := conn.request(et, 3).(*kmsg.EndTxnResponse).ErrorCode; code != 0 {
		t.Fatalf("EndTxn commit: %v", kerr.ErrorForCode(code))
	}
	adminWaitFor(t, 20*time.Second, "committed transactional offset", func() bool { return fetchOffset() == 5 })

	// DescribeProducers shows both producers, neither with an open transaction.
	dp := kmsg.NewPtrDescribeProducersRequest()
	dt := kmsg.NewDescribeProducersRequestTopic()
	dt.Topic, dt.Partitions = "vt", []int32{0}
	dp.Topics = append(dp.Topics, dt)
	pr := adminDial(t, addr).request(dp, 0).(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0]
	if pr.ErrorCode != 0 || len(pr.ActiveProducers) != 2 {
		t.Fatalf("DescribeProducers: %+v", pr)
	}
	for _, p := range pr.ActiveProducers {
		if p.CurrentTxnStartOffset != -1 {
			t.Fatalf("producer %d still has an open transaction at %d", p.ProducerID, p.CurrentTxnStartOffset)
		}
	}
}
