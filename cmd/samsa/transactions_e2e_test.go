package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/broker"
	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/recordbatch"
	"github.com/samsa-kafka/samsa/internal/zktest"
)

// startTxnBrokers starts n in-process brokers (ids 0..n-1) against their own ZooKeeper, with
// single-replica internal topics, and returns their addresses and log dirs. Verification of
// transactional produces (KIP-890) is off so a test can write a transactional batch the
// coordinator never heard of: a hanging transaction.
func startTxnBrokers(t *testing.T, n int) (addrs, logDirs []string) {
	t.Helper()
	zk := zktest.Start(t)
	for id := 0; id < n; id++ {
		logDir := t.TempDir()
		cfg, _, err := config.FromMap(map[string]string{
			"broker.id":                                 strconv.Itoa(id),
			"listeners":                                 "PLAINTEXT://127.0.0.1:0",
			"log.dirs":                                  logDir,
			"zookeeper.connect":                         zk.Connect("/txn-tools"),
			"offsets.topic.replication.factor":          "1",
			"offsets.topic.num.partitions":              "1",
			"transaction.state.log.replication.factor":  "1",
			"transaction.state.log.min.isr":             "1",
			"transaction.state.log.num.partitions":      "2",
			"transaction.partition.verification.enable": "false",
			"group.initial.rebalance.delay.ms":          "0",
			"controlled.shutdown.enable":                "false",
		})
		if err != nil {
			t.Fatal(err)
		}
		b, err := broker.New(cfg, testLog(t).WithField("broker", id))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = b.Start(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Shutdown)
		addrs, logDirs = append(addrs, b.Addr("PLAINTEXT")), append(logDirs, logDir)
	}
	return addrs, logDirs
}

// waitFor polls fn until it returns nil or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %v", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writeHangingTransaction writes one transactional record to topic-partition with a producer
// id from InitProducerId without a transactional id, as a client that skipped
// AddPartitionsToTxn would: no coordinator ever writes its marker. Returns the producer id.
func writeHangingTransaction(t *testing.T, ctx context.Context, cl *kgo.Client, leader int32, topic string, partition int32) int64 {
	t.Helper()
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionTimeoutMillis = 60000
	var ir *kmsg.InitProducerIDResponse
	// Right after start-up the broker may still be fetching its producer id block
	// (COORDINATOR_LOAD_IN_PROGRESS, retriable).
	waitFor(t, 20*time.Second, func() error {
		kresp, err := cl.Broker(int(leader)).Request(ctx, init)
		if err != nil {
			return err
		}
		ir = kresp.(*kmsg.InitProducerIDResponse)
		return kerr.ErrorForCode(ir.ErrorCode)
	})
	now := time.Now().UnixMilli()
	batch, err := recordbatch.Build(recordbatch.Header{Attributes: recordbatch.AttrTransactional, BaseTimestamp: now, MaxTimestamp: now,
		ProducerID: ir.ProducerID, ProducerEpoch: ir.ProducerEpoch, BaseSequence: 0},
		[]recordbatch.Record{{Value: []byte("hanging")}}, recordbatch.None)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	txnID := "hanging-writer" // Kafka wants a transactional id on a request with transactional records
	req.TransactionID, req.Acks, req.TimeoutMillis = &txnID, -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := cl.Broker(int(leader)).Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	pr := kresp.(*kmsg.ProduceResponse)
	if code := pr.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce of the hanging transaction: error %d", code)
	}
	return ir.ProducerID
}

// dumpFirstMatching dumps the first segment of every partition directory named prefix-N with
// extra flags and returns the output of the first dump that contains want.
func dumpFirstMatching(t *testing.T, logDir, prefix, want string, extra ...string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(logDir, prefix+"-*"))
	var all strings.Builder
	for _, d := range dirs {
		f := filepath.Join(d, "00000000000000000000.log")
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			continue
		}
		var out, errb strings.Builder
		code := runDumpLog(append([]string{"--files", f}, extra...), nil, &out, &errb)
		all.WriteString(out.String() + errb.String())
		if code == 0 && strings.Contains(out.String(), want) {
			t.Logf("$ samsa dump-log --files %s %s\n%s", f, strings.Join(extra, " "), out.String())
			return out.String()
		}
	}
	t.Fatalf("no %s segment dump with %v contains %q:\n%s", prefix, extra, want, all.String())
	return ""
}

// TestTransactionsToolsEndToEnd runs the transaction tools against a real broker: list,
// describe and describe-producers of an open and then committed transaction, find-hanging and
// abort of a transaction written without the coordinator, dump-log's transaction and offsets
// decoders on the internal topics, and producer-perf-test with transactions.
func TestTransactionsToolsEndToEnd(t *testing.T) {
	addrs, logDirs := startTxnBrokers(t, 1)
	bs, logDir := addrs[0], logDirs[0]
	const topic = "txn-tools"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	admCl, err := kgo.NewClient(kgo.SeedBrokers(bs))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}

	// Before any transaction: list shows only its header; describe waits out the creation of
	// __transaction_state (COORDINATOR_NOT_AVAILABLE is retried) and finds no such id.
	out, _, code := runTxnTool(t, bs, "list")
	if code != 0 || out != strings.Join(listTransactionsHeaders, "\t")+"\t\n" {
		t.Fatalf("list on a new cluster: exit %d\n%s", code, out)
	}
	_, errOut, code := runTxnTool(t, bs, "describe", "--transactional-id", "tools-tx")
	if code != 1 || errOut != "Failed to describe transaction state of transactional-id `tools-tx`: DescribeTransactions request for transactionalId `tools-tx` failed because the ID could not be found. Enable debug logging for additional detail.\n" {
		t.Fatalf("describe before the first transaction: exit %d, stderr %q", code, errOut)
	}

	// An open transaction of a franz-go producer.
	txCl, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.TransactionalID("tools-tx"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer txCl.Close()
	if err := txCl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := txCl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("transactional produce: %v", err)
		}
	}

	out, _, code = runTxnTool(t, bs, "list")
	if code != 0 || !regexp.MustCompile(`(?m)^tools-tx\s*\t0\s*\t\d+\s*\tOngoing\s*\t$`).MatchString(out) {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
	out, _, code = runTxnTool(t, bs, "describe", "--transactional-id", "tools-tx")
	if code != 0 || !regexp.MustCompile(`(?m)^0\s*\ttools-tx\s*\t\d+\s*\t0\s*\tOngoing\s*\t\d+\s*\t\d+\s*\t\d+\s*\ttxn-tools-0\s*\t$`).MatchString(out) {
		t.Fatalf("describe: exit %d\n%s", code, out)
	}
	for _, extra := range [][]string{nil, {"--broker-id", "0"}} {
		out, _, code = runTxnTool(t, bs, append([]string{"describe-producers", "--topic", topic, "--partition", "0"}, extra...)...)
		if code != 0 || !regexp.MustCompile(`(?m)^\d+\s*\t0\s*\t-?\d+\s*\t2\s*\t\d+\s*\t0\s*\t$`).MatchString(out) {
			t.Fatalf("describe-producers %v: exit %d; want the open transaction starting at offset 0\n%s", extra, code, out)
		}
	}
	// Its coordinator will write its marker: it does not hang.
	time.Sleep(10 * time.Millisecond)
	out, _, code = runTxnTool(t, bs, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0")
	if code != 0 || strings.Contains(out, "\n"+topic) {
		t.Fatalf("find-hanging with only a live transaction: exit %d\n%s", code, out)
	}

	if err := txCl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	waitFor(t, 30*time.Second, func() error {
		out, _, code := runTxnTool(t, bs, "describe", "--transactional-id", "tools-tx")
		// Kafka keeps the start time of the completed transaction (prepareComplete).
		if code != 0 || !regexp.MustCompile(`(?m)^0\s*\ttools-tx\s*\t\d+\s*\t0\s*\tCompleteCommit\s*\t\d+\s*\t\d+\s*\t\d+\s*\t\s*\t$`).MatchString(out) {
			return fmt.Errorf("describe after commit: exit %d\n%s", code, out)
		}
		out, _, code = runTxnTool(t, bs, "describe-producers", "--topic", topic, "--partition", "0")
		if code != 0 || !regexp.MustCompile(`(?m)^\d+\s*\t0\s*\t\d+\s*\t2\s*\t\d+\s*\tNone\s*\t$`).MatchString(out) {
			return fmt.Errorf("describe-producers after commit: exit %d\n%s", code, out)
		}
		return nil
	})

	// A transaction no coordinator knows: found by find-hanging, cleared by abort.
	pid := writeHangingTransaction(t, ctx, admCl, 0, topic, 1)
	time.Sleep(10 * time.Millisecond)
	hangingRow := regexp.MustCompile(`(?m)^` + topic + `\s*\t1\s*\t` + strconv.FormatInt(pid, 10) + `\s*\t0\s*\t-1\s*\t0\s*\t\d+\s*\t0\s*\t$`)
	for _, scope := range [][]string{{"--topic", topic}, {"--topic", topic, "--partition", "1"}, {"--broker-id", "0"}} {
		out, _, code = runTxnTool(t, bs, append(append([]string{"find-hanging"}, scope...), "--max-transaction-timeout", "0")...)
		if code != 0 || !hangingRow.MatchString(out) || strings.Count(out, "\n") != 2 {
			t.Fatalf("find-hanging %v: exit %d; want exactly producer %d's transaction at txn-tools-1 offset 0\n%s", scope, code, pid, out)
		}
	}
	out, _, code = runTxnTool(t, bs, "find-hanging", "--topic", topic)
	if code != 0 || strings.Count(out, "\n") != 1 {
		t.Fatalf("find-hanging with the default 15 min timeout lists a fresh transaction: exit %d\n%s", code, out)
	}
	out, errOut, code = runTxnTool(t, bs, "abort", "--topic", topic, "--partition", "1", "--start-offset", "0")
	if code != 0 || out != "" || errOut != "" {
		t.Fatalf("abort: exit %d %q %q", code, out, errOut)
	}
	out, _, code = runTxnTool(t, bs, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0")
	if code != 0 || strings.Count(out, "\n") != 1 {
		t.Fatalf("find-hanging after abort: exit %d\n%s", code, out)
	}
	committed, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := committed.Lookup(topic, 1); o.Offset != 2 {
		t.Fatalf("last stable offset of %s-1 after abort: %+v, want 2 (the record and the marker)", topic, o)
	}
	// Aborting again with the explicit fields: the epoch is current, the marker is accepted.
	_, errOut, code = runTxnTool(t, bs, "abort", "--topic", topic, "--partition", "1", "--producer-id", strconv.FormatInt(pid, 10),
		"--producer-epoch", "0", "--coordinator-epoch", "-1")
	if code != 0 {
		t.Fatalf("abort by producer fields: exit %d %q", code, errOut)
	}

	// dump-log: the control batch, the coordinator's records and a committed offset.
	dumpFirstMatching(t, logDir, topic, "endTxnMarker: ABORT coordinatorEpoch: 0", "--deep-iteration")
	dump := dumpFirstMatching(t, logDir, "__transaction_state", "key: transaction_metadata::transactionalId=tools-tx", "--transaction-log-decoder")
	for _, want := range []string{"state=Ongoing,partitions=[txn-tools-0]", "state=PrepareCommit,partitions=[txn-tools-0]", "state=CompleteCommit,partitions=[]"} {
		if !strings.Contains(dump, want) {
			t.Errorf("__transaction_state dump lacks %q:\n%s", want, dump)
		}
	}
	if _, err := adm.CommitOffsets(ctx, "tools-group", kadm.OffsetsFromRecords(kgo.Record{Topic: topic, Partition: 0, Offset: 2})); err != nil {
		t.Fatal(err)
	}
	dumpFirstMatching(t, logDir, "__consumer_offsets", "key: offset_commit::group=tools-group,partition=txn-tools-0 payload: offset=3", "--offsets-decoder")

	// producer-perf-test with transactions: all of it committed.
	var pout, perr strings.Builder
	code = runProducerPerfTest([]string{"--topic", "perf-txn", "--num-records", "2000", "--record-size", "100", "--throughput", "10000",
		"--transaction-duration-ms", "50", "--producer-props", "bootstrap.servers=" + bs}, nil, &pout, &perr)
	if code != 0 || !strings.HasPrefix(lastLine(pout.String()), "2000 records sent, ") {
		t.Fatalf("producer-perf-test: exit %d\n%s%s", code, pout.String(), perr.String())
	}
	// Markers are written after EndTxn answers (as in Kafka): wait until the last one is in.
	waitFor(t, 20*time.Second, func() error {
		end, err := adm.ListEndOffsets(ctx, "perf-txn")
		if err != nil {
			return err
		}
		lso, err := adm.ListCommittedOffsets(ctx, "perf-txn")
		if err != nil {
			return err
		}
		var records, stable int64
		end.Each(func(o kadm.ListedOffset) { records += o.Offset })
		lso.Each(func(o kadm.ListedOffset) { stable += o.Offset })
		if stable != records || records <= 2001 {
			return fmt.Errorf("perf-txn: end offsets sum %d, last stable offsets sum %d: want 2000 records and a commit marker per transaction (several), all stable\n%s",
				records, stable, dumpFirstMatching(t, logDir, "perf-txn", "", "--deep-iteration"))
		}
		return nil
	})
	out, _, _ = runTxnTool(t, bs, "list")
	if !regexp.MustCompile(`(?m)^performance-producer-default-transactional-id\s*\t0\s*\t\d+\s*\tCompleteCommit\s*\t$`).MatchString(out) {
		t.Errorf("list after producer-perf-test lacks its committed transactional id:\n%s", out)
	}
}

// TestTransactionsToolsOnFollower: with a replica named by --broker-id, describe-producers and
// find-hanging ask that broker, follower or not (a follower tracks open transactions as it
// replicates), and abort still writes its marker through the leader.
func TestTransactionsToolsOnFollower(t *testing.T) {
	addrs, _ := startTxnBrokers(t, 2)
	bs := strings.Join(addrs, ",")
	const topic = "txn-follower"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 2, nil, topic); err != nil {
		t.Fatal(err)
	}
	var leader, follower int32
	waitFor(t, 20*time.Second, func() error {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		p := md.Topics[topic].Partitions[0]
		if p.Leader < 0 || len(p.ISR) != 2 {
			return fmt.Errorf("partition 0: leader %d isr %v", p.Leader, p.ISR)
		}
		leader, follower = p.Leader, 1-p.Leader
		return nil
	})
	pid := writeHangingTransaction(t, ctx, cl, leader, topic, 0)
	row := regexp.MustCompile(`(?m)^` + strconv.FormatInt(pid, 10) + `\s*\t0\s*\t-1\s*\t0\s*\t\d+\s*\t0\s*\t$`)
	waitFor(t, 20*time.Second, func() error {
		out, _, code := runTxnTool(t, bs, "describe-producers", "--topic", topic, "--partition", "0", "--broker-id", strconv.Itoa(int(follower)))
		if code != 0 || !row.MatchString(out) {
			return fmt.Errorf("describe-producers on follower %d: exit %d\n%s", follower, code, out)
		}
		return nil
	})
	out, _, code := runTxnTool(t, bs, "find-hanging", "--broker-id", strconv.Itoa(int(follower)), "--max-transaction-timeout", "0")
	if code != 0 || !regexp.MustCompile(`(?m)^`+topic+`\s*\t0\s*\t`+strconv.FormatInt(pid, 10)+`\s*\t`).MatchString(out) {
		t.Fatalf("find-hanging on follower %d: exit %d\n%s", follower, code, out)
	}
	if _, errOut, code := runTxnTool(t, bs, "abort", "--topic", topic, "--partition", "0", "--start-offset", "0"); code != 0 {
		t.Fatalf("abort: exit %d %s", code, errOut)
	}
	waitFor(t, 20*time.Second, func() error {
		out, _, code := runTxnTool(t, bs, "describe-producers", "--topic", topic, "--partition", "0", "--broker-id", strconv.Itoa(int(follower)))
		if code != 0 || !strings.Contains(out, "\tNone") {
			return fmt.Errorf("describe-producers on follower %d after abort: exit %d\n%s", follower, code, out)
		}
		return nil
	})
}
