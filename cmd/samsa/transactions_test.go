package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestParseTransactionsArgs(t *testing.T) {
	bs := []string{"--bootstrap-server", "h:9092"}
	with := func(a ...string) []string { return append(append([]string{}, bs...), a...) }
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, o *txnOpts)
	}{
		{"list", with("list"), "", func(t *testing.T, o *txnOpts) {
			if o.command != "list" || o.bootstrap != "h:9092" {
				t.Fatalf("%+v", o)
			}
		}},
		{"base option after the command", []string{"list", "--bootstrap-server=h:1"}, "", func(t *testing.T, o *txnOpts) {
			if o.bootstrap != "h:1" {
				t.Fatalf("bootstrap %q", o.bootstrap)
			}
		}},
		{"describe", with("describe", "--transactional-id", "tx"), "", func(t *testing.T, o *txnOpts) {
			if o.transactionalID.v != "tx" {
				t.Fatalf("%+v", o)
			}
		}},
		{"describe-producers on a broker", with("describe-producers", "--topic", "t", "--partition", "3", "--broker-id", "2"), "", func(t *testing.T, o *txnOpts) {
			if o.topic.v != "t" || o.partition.v != 3 || !o.brokerID.set || o.brokerID.v != 2 {
				t.Fatalf("%+v", o)
			}
		}},
		{"find-hanging default timeout", with("find-hanging", "--broker-id", "1"), "", func(t *testing.T, o *txnOpts) {
			if o.maxTxnTimeoutMin != 15 {
				t.Fatalf("max timeout %d, want Kafka's 15 minutes", o.maxTxnTimeoutMin)
			}
		}},
		{"find-hanging timeout", with("find-hanging", "--topic", "t", "--max-transaction-timeout", "0"), "", func(t *testing.T, o *txnOpts) {
			if o.maxTxnTimeoutMin != 0 {
				t.Fatalf("max timeout %d", o.maxTxnTimeoutMin)
			}
		}},
		{"abort by start offset", with("abort", "--topic", "t", "--partition", "0", "--start-offset", "42"), "", func(t *testing.T, o *txnOpts) {
			if o.startOffset.v != 42 || o.producerID.set {
				t.Fatalf("%+v", o)
			}
		}},
		{"no bootstrap", []string{"list"}, "argument --bootstrap-server is required", nil},
		{"no command", bs, "too few arguments", nil},
		{"unknown command", with("nope"), "invalid choice: 'nope'", nil},
		{"describe without id", with("describe"), "argument --transactional-id is required", nil},
		{"describe-producers without partition", with("describe-producers", "--topic", "t"), "argument --partition is required", nil},
		{"abort without topic", with("abort", "--partition", "0", "--start-offset", "1"), "argument --topic is required", nil},
		{"epoch out of short range", with("abort", "--topic", "t", "--partition", "0", "--producer-id", "1", "--producer-epoch", "40000", "--coordinator-epoch", "0"), "could not convert '40000' to Short", nil},
		{"option of another command", with("list", "--topic", "t"), "flag provided but not defined", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errb bytes.Buffer
			o, _, err := parseTransactionsArgs(tt.args, &errb)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error()+errb.String(), tt.wantErr) {
					t.Fatalf("err %v (%s), want %q", err, errb.String(), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, o)
		})
	}
}

func TestPrettyPrintTable(t *testing.T) {
	var b strings.Builder
	prettyPrintTable(&b, []string{"A", "LongHeader"}, [][]string{{"wide-cell", "x"}, {"", "y"}})
	want := "A        \tLongHeader\t\n" +
		"wide-cell\tx         \t\n" +
		"         \ty         \t\n"
	if b.String() != want {
		t.Fatalf("got\n%q\nwant\n%q", b.String(), want)
	}
}

func TestTransactionFormats(t *testing.T) {
	now := time.UnixMilli(1_700_000_100_000)
	t.Run("describe", func(t *testing.T) {
		d := kadm.DescribedTransaction{Coordinator: 1, TxnID: "tx", State: "Ongoing", TimeoutMillis: 60000,
			StartTimestamp: 1_700_000_000_000, ProducerID: 7, ProducerEpoch: 2,
			Topics: kadm.TopicsSet{"b": {1: {}}, "a": {2: {}, 0: {}}}}
		got := formatDescribeTransaction(d, now)
		want := "CoordinatorId\tTransactionalId\tProducerId\tProducerEpoch\tTransactionState\tTransactionTimeoutMs\tCurrentTransactionStartTimeMs\tTransactionDurationMs\tTopicPartitions\t\n" +
			"1            \ttx             \t7         \t2            \tOngoing         \t60000               \t1700000000000                \t100000               \ta-0,a-2,b-1    \t\n"
		if got != want {
			t.Fatalf("got\n%q\nwant\n%q", got, want)
		}
		d.StartTimestamp, d.State, d.Topics = -1, "Empty", nil
		if got := formatDescribeTransaction(d, now); !strings.Contains(got, "\tEmpty           \t60000               \tNone                         \tNone                 \t               \t\n") {
			t.Fatalf("no transaction start: %q", got)
		}
	})
	t.Run("describe-producers", func(t *testing.T) {
		got := formatDescribeProducers([]activeProducer{
			{ProducerID: 1000, ProducerEpoch: 3, LastSequence: 41, LastTimestamp: 1_700_000_000_000, CoordinatorEpoch: -1, CurrentTxnStartOffset: -1},
			{ProducerID: 1001, ProducerEpoch: 0, LastSequence: 0, LastTimestamp: 1_700_000_000_001, CoordinatorEpoch: 5, CurrentTxnStartOffset: 12},
		})
		want := "ProducerId\tProducerEpoch\tLatestCoordinatorEpoch\tLastSequence\tLastTimestamp\tCurrentTransactionStartOffset\t\n" +
			"1000      \t3            \t-1                    \t41          \t1700000000000\tNone                         \t\n" +
			"1001      \t0            \t5                     \t0           \t1700000000001\t12                           \t\n"
		if got != want {
			t.Fatalf("got\n%q\nwant\n%q", got, want)
		}
	})
	t.Run("list", func(t *testing.T) {
		got := formatListTransactions([]kadm.ListedTransaction{
			{Coordinator: 2, TxnID: "b", ProducerID: 5, State: "Ongoing"},
			{Coordinator: 1, TxnID: "z", ProducerID: 6, State: "CompleteCommit"},
			{Coordinator: 2, TxnID: "a", ProducerID: 4, State: "Empty"},
		})
		want := "TransactionalId\tCoordinator\tProducerId\tTransactionState\t\n" +
			"z              \t1          \t6         \tCompleteCommit  \t\n" +
			"a              \t2          \t4         \tEmpty           \t\n" +
			"b              \t2          \t5         \tOngoing         \t\n"
		if got != want {
			t.Fatalf("got\n%q\nwant\n%q", got, want)
		}
	})
	t.Run("find-hanging", func(t *testing.T) {
		got := formatHangingTransactions([]openTransaction{{topicPartition{"t", 3},
			activeProducer{ProducerID: 9, ProducerEpoch: 1, LastTimestamp: now.UnixMilli() - 20*60000 - 5, CoordinatorEpoch: -1, CurrentTxnStartOffset: 17}}}, now)
		want := "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\tLastTimestamp\tDuration(min)\t\n" +
			"t    \t3        \t9         \t1            \t-1              \t17         \t1699998899995\t20           \t\n"
		if got != want {
			t.Fatalf("got\n%q\nwant\n%q", got, want)
		}
		if got := formatHangingTransactions(nil, now); got != "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\tLastTimestamp\tDuration(min)\t\n" {
			t.Fatalf("none: %q", got)
		}
	})
}

// TestFindHangingLogic follows FindHangingTransactionsCommand: an open transaction older than
// the maximum timeout hangs unless its producer's transactional id is described with the
// partition among the transaction's partitions.
func TestFindHangingLogic(t *testing.T) {
	now := time.UnixMilli(10 * 60 * 60 * 1000)
	old := now.UnixMilli() - 16*60*1000
	res := map[topicPartition][]activeProducer{
		{"t", 0}: {
			{ProducerID: 1, LastTimestamp: old, CurrentTxnStartOffset: 5},                       // no transactional id: hanging
			{ProducerID: 2, LastTimestamp: old, CurrentTxnStartOffset: -1},                      // no open transaction
			{ProducerID: 3, LastTimestamp: now.UnixMilli() - 60*1000, CurrentTxnStartOffset: 9}, // recent
		},
		{"t", 1}: {
			{ProducerID: 4, LastTimestamp: old, CurrentTxnStartOffset: 0}, // coordinator has t-1: not hanging
			{ProducerID: 5, LastTimestamp: old, CurrentTxnStartOffset: 2}, // coordinator lacks t-1: hanging
			{ProducerID: 6, LastTimestamp: old, CurrentTxnStartOffset: 3}, // id not found: hanging
		},
	}
	candidates := candidateOpenTransactions(res, now, 15*time.Minute)
	var pids []int64
	for _, c := range candidates {
		pids = append(pids, c.producer.ProducerID)
	}
	if len(pids) != 4 || pids[0] != 1 || pids[1] != 4 || pids[2] != 5 || pids[3] != 6 {
		t.Fatalf("candidates %v, want producers 1, 4, 5, 6", pids)
	}
	txnIDs := map[int64]string{4: "a", 5: "b", 6: "gone"}
	descriptions := map[string]kadm.DescribedTransaction{
		"a": {TxnID: "a", Topics: kadm.TopicsSet{"t": {1: {}}}},
		"b": {TxnID: "b", Topics: kadm.TopicsSet{"t": {0: {}}, "u": {1: {}}}},
	}
	hanging := filterHangingTransactions(candidates, txnIDs, descriptions)
	pids = pids[:0]
	for _, h := range hanging {
		pids = append(pids, h.producer.ProducerID)
	}
	if len(pids) != 3 || pids[0] != 1 || pids[1] != 5 || pids[2] != 6 {
		t.Fatalf("hanging %v, want producers 1, 5, 6", pids)
	}
	if c := candidateOpenTransactions(res, now, 0); len(c) != 5 {
		t.Fatalf("with a zero timeout every open transaction is a candidate: %d", len(c))
	}
}

func TestAbortSpecString(t *testing.T) {
	s := abortSpec{topicPartition{"orders", 2}, 1000, 3, 0}
	if got, want := s.String(), "AbortTransactionSpec(topicPartition=orders-2, producerId=1000, producerEpoch=3, coordinatorEpoch=0)"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
}

// runTxnTool runs `samsa transactions` with args after the base options.
func runTxnTool(t *testing.T, bs string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runTransactions(append([]string{"--bootstrap-server", bs}, args...), nil, &out, &errb)
	t.Logf("$ samsa transactions %s\n%s%s", strings.Join(args, " "), out.String(), errb.String())
	return out.String(), errb.String(), code
}

// TestTransactionsCommandKfake drives every sub-command against franz-go's in-memory Kafka,
// which has a transaction coordinator: an open transaction is listed, described (with its
// partition), shown by describe-producers with its start offset, not reported by find-hanging
// (its coordinator will write the marker), and aborted by abort --start-offset.
func TestTransactionsCommandKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bs := c.ListenAddrs()[0]

	cl, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.TransactionalID("tx-1"), kgo.DefaultProduceTopic("t"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	out, _, code := runTxnTool(t, bs, "list")
	if code != 0 || !regexp.MustCompile(`(?m)^TransactionalId\s*\tCoordinator\s*\tProducerId\s*\tTransactionState\s*\t\ntx-1\s*\t0\s*\t\d+\s*\tOngoing\s*\t$`).MatchString(out) {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
	out, _, code = runTxnTool(t, bs, "describe", "--transactional-id", "tx-1")
	if code != 0 || !regexp.MustCompile(`(?m)^0\s*\ttx-1\s*\t\d+\s*\t0\s*\tOngoing\s*\t\d+\s*\t\d+\s*\t\d+\s*\tt-1\s*\t$`).MatchString(out) {
		t.Fatalf("describe: exit %d\n%s", code, out)
	}
	_, errOut, code := runTxnTool(t, bs, "describe", "--transactional-id", "nope")
	if code != 1 || !strings.Contains(errOut, "Failed to describe transaction state of transactional-id `nope`: DescribeTransactions request for transactionalId `nope` failed because the ID could not be found. Enable debug logging for additional detail.") {
		t.Fatalf("describe of an unknown id: exit %d, stderr %q", code, errOut)
	}
	out, _, code = runTxnTool(t, bs, "describe-producers", "--topic", "t", "--partition", "1")
	if code != 0 || !regexp.MustCompile(`(?m)^\d+\s*\t0\s*\t-?\d+\s*\t2\s*\t\d+\s*\t0\s*\t$`).MatchString(out) {
		t.Fatalf("describe-producers: exit %d\n%s", code, out)
	}
	_, errOut, code = runTxnTool(t, bs, "describe-producers", "--topic", "missing", "--partition", "0")
	if code != 1 || !strings.HasPrefix(errOut, "Failed to describe producers for partition missing-0 on leader: ") {
		t.Fatalf("describe-producers of a missing topic: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = runTxnTool(t, bs, "describe-producers", "--topic", "t", "--partition", "1", "--broker-id", "7")
	if code != 1 || errOut != "Failed to describe producers for partition t-1 on broker 7: Broker 7 is not in the cluster metadata. Enable debug logging for additional detail.\n" {
		t.Fatalf("describe-producers on a broker not in the cluster: exit %d, stderr %q", code, errOut)
	}
	time.Sleep(5 * time.Millisecond) // past the last write, so a zero timeout makes it a candidate
	out, _, code = runTxnTool(t, bs, "find-hanging", "--topic", "t", "--max-transaction-timeout", "0")
	if code != 0 || out != strings.Join(findHangingHeaders, "\t")+"\t\n" {
		t.Fatalf("find-hanging: exit %d; the coordinator's transaction holds t-1, so nothing hangs:\n%s", code, out)
	}
	_, errOut, code = runTxnTool(t, bs, "find-hanging")
	if code != 1 || !strings.Contains(errOut, "requires either --topic or --broker-id") {
		t.Fatalf("find-hanging without scope: exit %d %q", code, errOut)
	}

	_, errOut, code = runTxnTool(t, bs, "abort", "--topic", "t", "--partition", "1", "--start-offset", "7")
	if code != 1 || !strings.Contains(errOut, "Could not find any open transactions starting at offset 7 on partition t-1") {
		t.Fatalf("abort at a wrong offset: exit %d %q", code, errOut)
	}
	_, errOut, code = runTxnTool(t, bs, "abort", "--topic", "t", "--partition", "1")
	if code != 1 || !strings.Contains(errOut, "must be identified either with --start-offset") {
		t.Fatalf("abort without a transaction: exit %d %q", code, errOut)
	}
	_, errOut, code = runTxnTool(t, bs, "abort", "--topic", "t", "--partition", "1", "--producer-id", "5", "--producer-epoch", "0")
	if code != 1 || !strings.Contains(errOut, "Missing required argument --coordinator-epoch") {
		t.Fatalf("abort without coordinator epoch: exit %d %q", code, errOut)
	}
	out, errOut, code = runTxnTool(t, bs, "abort", "--topic", "t", "--partition", "1", "--start-offset", "0")
	if code != 0 || out != "" || errOut != "" {
		t.Fatalf("abort: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// kfake's DescribeProducers answers from its coordinator, so the marker shows in the
	// partition's last stable offset: past the 3 records and the marker.
	lso, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := lso.Lookup("t", 1); o.Offset != 4 {
		t.Fatalf("last stable offset of t-1 after abort: %+v, want 4", o)
	}
	if err := cl.AbortBufferedRecords(ctx); err != nil {
		t.Fatal(err)
	}
	_ = cl.EndTransaction(ctx, kgo.TryAbort)
}

func TestRunTransactionsUsage(t *testing.T) {
	var errb bytes.Buffer
	if code := runTransactions([]string{"list"}, nil, io.Discard, &errb); code != 1 || !strings.Contains(errb.String(), "argument --bootstrap-server is required") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}
