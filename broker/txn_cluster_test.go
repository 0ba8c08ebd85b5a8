package broker

// Transactions on a three-broker cluster with a real ZooKeeper: __transaction_state is
// created by the first FindCoordinator for a transactional id once three brokers are alive
// (transaction.state.log.replication.factor), with its own configs; a franz-go transactional
// producer finds its coordinator, initializes, adds partitions and commits; the coordinator
// describes and lists the transaction. With WriteTxnMarkers served, commit and abort are
// told apart by read_committed and read_uncommitted consumers.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnCluster is three brokers under one chroot with a three-partition __transaction_state.
type txnCluster struct {
	t       *testing.T
	brokers map[int32]*Broker
}

var txnClusterConfig = map[string]string{
	"transaction.state.log.num.partitions": "3",
	// One offsets partition keeps the group coordinator's load small.
	"offsets.topic.num.partitions": "1",
	"controlled.shutdown.enable":   "false",
}

func txnBrokerConfig(id int32) map[string]string {
	m := map[string]string{"broker.id": fmt.Sprint(id)}
	for k, v := range txnClusterConfig {
		m[k] = v
	}
	return m
}

func (c *txnCluster) seeds() []string {
	var out []string
	for id := int32(1); id <= 3; id++ {
		if b := c.brokers[id]; b != nil {
			out = append(out, b.Addr("PLAINTEXT"))
		}
	}
	return out
}

// findTxnCoordinator asks broker 1 for id's coordinator (FindCoordinator v4, key type 1).
func (c *txnCluster) findTxnCoordinator(id string) kmsg.FindCoordinatorResponseCoordinator {
	c.t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKeys = 1, []string{id}
	resp := adminDial(c.t, c.brokers[1].Addr("PLAINTEXT")).request(req, 4).(*kmsg.FindCoordinatorResponse)
	if len(resp.Coordinators) != 1 {
		c.t.Fatalf("FindCoordinator: %+v", resp)
	}
	return resp.Coordinators[0]
}

func (c *txnCluster) describe(coordinator int32, id string) kmsg.DescribeTransactionsResponseTransactionState {
	c.t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp := adminDial(c.t, c.brokers[coordinator].Addr("PLAINTEXT")).request(req, 0).(*kmsg.DescribeTransactionsResponse)
	if len(resp.TransactionStates) != 1 {
		c.t.Fatalf("DescribeTransactions: %+v", resp)
	}
	return resp.TransactionStates[0]
}

// startTxnCluster starts broker 1, checks that FindCoordinator for a transactional id is
// refused without creating __transaction_state while it is alone, starts brokers 2 and 3 and
// waits until the coordinator of every id in ids is found.
func startTxnCluster(t *testing.T, ids ...string) *txnCluster {
	t.Helper()
	chroot := testChroot(t)
	c := &txnCluster{t: t, brokers: map[int32]*Broker{}}
	c.brokers[1] = startTestBroker(t, chroot, txnBrokerConfig(1))
	waitController(t, c.brokers[1])

	got := c.findTxnCoordinator(ids[0])
	adminWantCode(t, "FindCoordinator with one broker alive", got.ErrorCode, kerr.CoordinatorNotAvailable)
	if ok, err := c.brokers[1].ZK().TopicExists(TransactionStateTopicName); err != nil || ok {
		t.Fatalf("__transaction_state exists with one broker alive: %v %v", ok, err)
	}

	c.brokers[2] = startTestBroker(t, chroot, txnBrokerConfig(2))
	c.brokers[3] = startTestBroker(t, chroot, txnBrokerConfig(3))
	adminWaitFor(t, 15*time.Second, "three brokers alive", func() bool {
		return c.brokers[1].Metadata().IsBrokerAlive(2) && c.brokers[1].Metadata().IsBrokerAlive(3)
	})
	for _, id := range ids {
		adminWaitFor(t, 30*time.Second, "transaction coordinator of "+id, func() bool {
			return c.findTxnCoordinator(id).ErrorCode == 0
		})
	}
	return c
}

func TestTxnClusterCoordinatorAndKgoCommit(t *testing.T) {
	c := startTxnCluster(t, "tx-a")
	zk := c.brokers[1].ZK()

	// The topic as AutoTopicCreationManager makes it (transaction.state.log.*).
	asg, _, err := zk.GetTopic(TransactionStateTopicName)
	if err != nil || len(asg.Partitions) != 3 {
		t.Fatalf("__transaction_state assignment %+v: %v", asg, err)
	}
	for p, replicas := range asg.Partitions {
		if len(replicas) != 3 {
			t.Fatalf("partition %d replicas %v, want 3", p, replicas)
		}
	}
	cfg, err := zk.GetTopicConfig(TransactionStateTopicName)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"cleanup.policy": "compact", "compression.type": "uncompressed",
		"min.insync.replicas": "2", "unclean.leader.election.enable": "false", "segment.bytes": "104857600"} {
		if cfg[k] != want {
			t.Errorf("__transaction_state %s = %q, want %q (configs %v)", k, cfg[k], want, cfg)
		}
	}
	coord := c.findTxnCoordinator("tx-a")
	if c.brokers[coord.NodeID] == nil || fmt.Sprintf("%s:%d", coord.Host, coord.Port) != c.brokers[coord.NodeID].Addr("PLAINTEXT") {
		t.Fatalf("coordinator %+v", coord)
	}

	tc := adminDial(t, c.brokers[1].Addr("PLAINTEXT"))
	cresp := tc.request(adminCreateTopicsReq(15000, false, adminTopic("txn-data", 2, 3)), 7).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "create txn-data", cresp.Topics[0].ErrorCode, nil)

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.TransactionalID("tx-a"),
		kgo.TransactionTimeout(60*time.Second), kgo.DefaultProduceTopic("txn-data"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(100),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		r := &kgo.Record{Partition: int32(i % 2), Value: []byte(fmt.Sprintf("c1-%d", i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce in a transaction: %v", err)
		}
	}
	st := c.describe(coord.NodeID, "tx-a")
	adminWantCode(t, "describe ongoing", st.ErrorCode, nil)
	if st.State != "Ongoing" || st.ProducerID < 0 || st.TimeoutMillis != 60000 || st.StartTimestamp <= 0 ||
		len(st.Topics) != 1 || st.Topics[0].Topic != "txn-data" || !slices.Equal(st.Topics[0].Partitions, []int32{0, 1}) {
		t.Fatalf("ongoing transaction described as %+v", st)
	}

	// ListTransactions on the coordinator lists it; other brokers do not (they list their own).
	list := func(b int32, states ...string) []kmsg.ListTransactionsResponseTransactionState {
		req := kmsg.NewPtrListTransactionsRequest()
		req.StateFilters = states
		resp := adminDial(t, c.brokers[b].Addr("PLAINTEXT")).request(req, 0).(*kmsg.ListTransactionsResponse)
		adminWantCode(t, "list transactions", resp.ErrorCode, nil)
		return resp.TransactionStates
	}
	for b := int32(1); b <= 3; b++ {
		ls := list(b)
		found := slices.ContainsFunc(ls, func(s kmsg.ListTransactionsResponseTransactionState) bool {
			return s.TransactionalID == "tx-a" && s.ProducerID == st.ProducerID && s.TransactionState == "Ongoing"
		})
		if found != (b == coord.NodeID) {
			t.Fatalf("broker %d (coordinator %d) lists %+v", b, coord.NodeID, ls)
		}
	}
	if ls := list(coord.NodeID, "CompleteAbort"); len(ls) != 0 {
		t.Fatalf("state filter CompleteAbort lists %+v", ls)
	}

	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	st = c.describe(coord.NodeID, "tx-a")
	if st.ErrorCode != 0 || (st.State != "PrepareCommit" && st.State != "CompleteCommit") {
		t.Fatalf("committed transaction described as %+v", st)
	}

	// sarama's transactional producer, at old and new request versions.
	for _, v := range []sarama.KafkaVersion{sarama.V0_11_0_0, sarama.NewConfig().Version, sarama.V3_7_0_0} {
		t.Run("sarama-"+v.String(), func(t *testing.T) {
			id := "tx-sarama-" + v.String()
			cfg := sarama.NewConfig()
			cfg.Version = v
			cfg.Producer.Idempotent = true
			cfg.Producer.Transaction.ID = id
			cfg.Producer.RequiredAcks = sarama.WaitForAll
			cfg.Producer.Return.Successes = true
			cfg.Producer.Partitioner = sarama.NewManualPartitioner
			cfg.Producer.Retry.Backoff = 50 * time.Millisecond
			cfg.Producer.Retry.Max = 100
			cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
			cfg.Net.MaxOpenRequests = 1
			p, err := sarama.NewSyncProducer(c.seeds(), cfg)
			if err != nil {
				t.Fatalf("sarama transactional producer: %v", err)
			}
			defer p.Close()
			if err := p.BeginTxn(); err != nil {
				t.Fatal(err)
			}
			for i := int32(0); i < 2; i++ {
				if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "txn-data", Partition: i,
					Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", id, i))}); err != nil {
					t.Fatalf("send: %v", err)
				}
			}
			if err := p.CommitTxn(); err != nil {
				t.Fatalf("commit: %v", err)
			}
			sc := c.findTxnCoordinator(id)
			adminWantCode(t, "find "+id, sc.ErrorCode, nil)
			st := c.describe(sc.NodeID, id)
			if st.ErrorCode != 0 || (st.State != "PrepareCommit" && st.State != "CompleteCommit") {
				t.Fatalf("sarama's committed transaction described as %+v", st)
			}
		})
	}
}

// Commit and abort through the whole path: markers written by WriteTxnMarkers, a
// read_committed consumer sees the committed records only, a read_uncommitted one all.
func TestTxnClusterKgoCommitAbortIsolation(t *testing.T) {
	if _, _, ok := SupportedVersions(27); !ok {
		t.Skip("WriteTxnMarkers (API 27) is not served by this build: transactions cannot complete")
	}
	c := startTxnCluster(t, "tx-b")
	tc := adminDial(t, c.brokers[1].Addr("PLAINTEXT"))
	cresp := tc.request(adminCreateTopicsReq(15000, false, adminTopic("txn-iso", 2, 3)), 7).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "create txn-iso", cresp.Topics[0].ErrorCode, nil)
	coord := c.findTxnCoordinator("tx-b")

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.TransactionalID("tx-b"),
		kgo.TransactionTimeout(60*time.Second), kgo.DefaultProduceTopic("txn-iso"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(100),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	txn := func(prefix string, commit kgo.TransactionEndTry, wantState string) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 4; i++ {
			r := &kgo.Record{Partition: int32(i % 2), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", prefix, err)
			}
		}
		if err := cl.EndTransaction(ctx, commit); err != nil {
			t.Fatalf("end %s: %v", prefix, err)
		}
		adminWaitFor(t, 30*time.Second, prefix+" completed (markers written)", func() bool {
			return c.describe(coord.NodeID, "tx-b").State == wantState
		})
	}
	txn("c1", kgo.TryCommit, "CompleteCommit")
	txn("a1", kgo.TryAbort, "CompleteAbort")
	txn("c2", kgo.TryCommit, "CompleteCommit")

	consume := func(level kgo.IsolationLevel, want int) []string {
		t.Helper()
		cons, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.ConsumeTopics("txn-iso"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(level),
			kgo.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer cons.Close()
		var got []string
		deadline := time.Now().Add(30 * time.Second)
		for len(got) < want && time.Now().Before(deadline) {
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			fs := cons.PollFetches(pctx)
			pcancel()
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		// Nothing beyond what is expected turns up.
		pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		cons.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		pcancel()
		slices.Sort(got)
		return got
	}
	committed := consume(kgo.ReadCommitted(), 8)
	if strings.Join(committed, ",") != "c1-0,c1-1,c1-2,c1-3,c2-0,c2-1,c2-2,c2-3" {
		t.Fatalf("read_committed saw %v", committed)
	}
	all := consume(kgo.ReadUncommitted(), 12)
	if len(all) != 12 || !slices.Contains(all, "a1-0") {
		t.Fatalf("read_uncommitted saw %v", all)
	}

	// Zombie fencing: a second producer with the same transactional id bumps the epoch; the
	// first one's commit fails with the fencing error and what it wrote stays invisible.
	cresp = tc.request(adminCreateTopicsReq(15000, false, adminTopic("txn-zombie", 1, 3)), 7).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "create txn-zombie", cresp.Topics[0].ErrorCode, nil)
	newProducer := func() *kgo.Client {
		p, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.TransactionalID("tx-z"),
			kgo.TransactionTimeout(60*time.Second), kgo.DefaultProduceTopic("txn-zombie"), kgo.RecordRetries(100),
			kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}
	zombie, fresh := newProducer(), newProducer()
	for _, x := range []struct {
		p *kgo.Client
		v string
	}{{zombie, "zombie"}, {fresh, "fresh"}} {
		if err := x.p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := x.p.ProduceSync(ctx, &kgo.Record{Value: []byte(x.v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", x.v, err)
		}
	}
	err = zombie.EndTransaction(ctx, kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("zombie's commit: %v, want the fencing error", err)
	}
	if err := fresh.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("fresh producer's commit: %v", err)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.ConsumeTopics("txn-zombie"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var seen []string
	deadline := time.Now().Add(30 * time.Second)
	for !slices.Contains(seen, "fresh") && time.Now().Before(deadline) {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		cons.PollFetches(pctx).EachRecord(func(r *kgo.Record) { seen = append(seen, string(r.Value)) })
		pcancel()
	}
	if !slices.Equal(seen, []string{"fresh"}) {
		t.Fatalf("read_committed after fencing saw %v, want [fresh]", seen)
	}
}

// The coordinator's broker goes away in the middle of a transaction: the controller makes
// another broker leader of the id's __transaction_state partition, LeaderAndIsr makes its
// coordinator load the partition (coordinator epoch = the new leader epoch), and the
// producer commits the open transaction there; read_committed sees both transactions.
func TestTxnClusterCoordinatorFailover(t *testing.T) {
	ids := make([]string, 8)
	for i := range ids {
		ids[i] = fmt.Sprintf("tx-f%d", i)
	}
	c := startTxnCluster(t, ids...)
	// An id coordinated away from broker 1, the controller, so that only the coordinator moves.
	id, coord := "", int32(-1)
	for _, x := range ids {
		if n := c.findTxnCoordinator(x).NodeID; n != 1 {
			id, coord = x, n
			break
		}
	}
	if id == "" {
		t.Fatal("every id is coordinated by broker 1")
	}
	tc := adminDial(t, c.brokers[1].Addr("PLAINTEXT"))
	cresp := tc.request(adminCreateTopicsReq(15000, false, adminTopic("txn-fo", 2, 3)), 7).(*kmsg.CreateTopicsResponse)
	adminWantCode(t, "create txn-fo", cresp.Topics[0].ErrorCode, nil)

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.TransactionalID(id),
		kgo.TransactionTimeout(60*time.Second), kgo.DefaultProduceTopic("txn-fo"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(1000),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	produce := func(prefix string) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 4; i++ {
			r := &kgo.Record{Partition: int32(i % 2), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", prefix, err)
			}
		}
	}
	produce("f1")
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit f1: %v", err)
	}
	adminWaitFor(t, 30*time.Second, "f1 complete", func() bool { return c.describe(coord, id).State == "CompleteCommit" })
	produce("f2")
	before := c.describe(coord, id)
	if before.State != "Ongoing" {
		t.Fatalf("f2 described as %+v", before)
	}

	c.brokers[coord].Shutdown()
	delete(c.brokers, coord)
	var moved kmsg.FindCoordinatorResponseCoordinator
	adminWaitFor(t, 30*time.Second, "another coordinator for "+id, func() bool {
		moved = c.findTxnCoordinator(id)
		return moved.ErrorCode == 0 && moved.NodeID != coord && c.brokers[moved.NodeID] != nil
	})
	var after kmsg.DescribeTransactionsResponseTransactionState
	adminWaitFor(t, 30*time.Second, "the new coordinator loaded "+id, func() bool {
		after = c.describe(moved.NodeID, id)
		return after.ErrorCode == 0
	})
	if after.State != "Ongoing" || after.ProducerID != before.ProducerID || after.ProducerEpoch != before.ProducerEpoch ||
		len(after.Topics) != 1 || !slices.Equal(after.Topics[0].Partitions, []int32{0, 1}) {
		t.Fatalf("loaded as %+v, was %+v", after, before)
	}

	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit f2 on the new coordinator: %v", err)
	}
	adminWaitFor(t, 30*time.Second, "f2 complete", func() bool { return c.describe(moved.NodeID, id).State == "CompleteCommit" })

	cons, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.ConsumeTopics("txn-fo"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < 8 && time.Now().Before(deadline) {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		cons.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		pcancel()
	}
	slices.Sort(got)
	if strings.Join(got, ",") != "f1-0,f1-1,f1-2,f1-3,f2-0,f2-1,f2-2,f2-3" {
		t.Fatalf("read_committed after failover saw %v", got)
	}
}
