package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestFormatWindow(t *testing.T) {
	// 5000 records of 100 bytes in 5 s, 10 ms total latency each, 25 ms max.
	got := formatWindow(5000, 500000, 5*time.Second, 5000*10*time.Millisecond, 25*time.Millisecond)
	want := "5000 records sent, 1000.0 records/sec (0.10 MB/sec), 10.0 ms avg latency, 25.0 ms max latency."
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

func TestFormatTotal(t *testing.T) {
	s := perfSummary{Count: 1000000, Bytes: 100000000, Elapsed: 4 * time.Second,
		Avg: 3456 * time.Microsecond, Max: 87900 * time.Microsecond,
		P50: 2900 * time.Microsecond, P95: 7 * time.Millisecond, P99: 12 * time.Millisecond, P999: 40 * time.Millisecond}
	got := formatTotal(s)
	want := "1000000 records sent, 250000.000000 records/sec (23.84 MB/sec), 3.46 ms avg latency, 87.00 ms max latency, 2 ms 50th, 7 ms 95th, 12 ms 99th, 40 ms 99.9th."
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

func TestPerfStatsSamplingAndPercentiles(t *testing.T) {
	now := time.Unix(0, 0)
	clock := func() time.Time { return now }
	s := newPerfStats(1000, nil, clock)
	for i := 1; i <= 1000; i++ {
		s.record(time.Duration(i)*time.Millisecond, 10, now)
	}
	now = now.Add(time.Second)
	sum := s.summary()
	if sum.Count != 1000 || sum.Bytes != 10000 || sum.Max != time.Second {
		t.Fatalf("summary %+v", sum)
	}
	// Kafka picks latencies[int(p*n)] of the sorted sample: 501, 951, 991, 1000 ms.
	if sum.P50 != 501*time.Millisecond || sum.P95 != 951*time.Millisecond || sum.P99 != 991*time.Millisecond || sum.P999 != 1000*time.Millisecond {
		t.Fatalf("percentiles %v %v %v %v", sum.P50, sum.P95, sum.P99, sum.P999)
	}
	if got := newPerfStats(2_000_000, nil, clock).sampling; got != 4 {
		t.Fatalf("sampling for 2M records = %d, want 4 (at most 500000 samples)", got)
	}
}

func TestPerfStatsPrintsWindowEvery5s(t *testing.T) {
	var out strings.Builder
	now := time.Unix(0, 0)
	s := newPerfStats(10, &out, func() time.Time { return now })
	s.record(time.Millisecond, 1, now)
	now = now.Add(5 * time.Second)
	s.record(3*time.Millisecond, 1, now)
	if want := "2 records sent, 0.4 records/sec (0.00 MB/sec), 2.0 ms avg latency, 3.0 ms max latency.\n"; out.String() != want {
		t.Fatalf("got %q want %q", out.String(), want)
	}
}

func TestThroughputThrottler(t *testing.T) {
	start := time.Unix(100, 0)
	th := newThroughputThrottler(1000, start)
	var slept time.Duration
	th.sleep = func(d time.Duration) { slept += d }
	if th.shouldThrottle(5, start) {
		t.Fatal("no elapsed time: Kafka never throttles")
	}
	if th.shouldThrottle(500, start.Add(time.Second)) {
		t.Fatal("500 records in 1 s is below 1000/s")
	}
	if !th.shouldThrottle(2000, start.Add(time.Second)) {
		t.Fatal("2000 records in 1 s is above 1000/s")
	}
	th.throttle() // 1 ms deficit: below the 2 ms minimum sleep
	if slept != 0 {
		t.Fatalf("slept %v after one record", slept)
	}
	th.throttle()
	if slept != 2*time.Millisecond {
		t.Fatalf("slept %v, want 2ms", slept)
	}
	if newThroughputThrottler(-1, start).shouldThrottle(1e9, start.Add(time.Second)) {
		t.Fatal("-1 disables throttling")
	}
}

func TestParseProducerPerfArgs(t *testing.T) {
	o, _, err := parseProducerPerfArgs([]string{"--topic", "t", "--num-records", "10", "--record-size", "100",
		"--throughput", "-1", "--producer-props", "bootstrap.servers=127.0.0.1:9092", "acks=1", "linger.ms=5", "--print-metrics"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.topic != "t" || o.numRecords != 10 || o.recordSize != 100 || o.throughput != -1 || !o.printMetrics {
		t.Fatalf("opts %+v", o)
	}
	if o.props["bootstrap.servers"] != "127.0.0.1:9092" || o.props["acks"] != "1" || o.props["linger.ms"] != "5" {
		t.Fatalf("props %v", o.props)
	}
	for name, args := range map[string][]string{
		"no props":      {"--topic", "t", "--num-records", "10", "--record-size", "1", "--throughput", "-1"},
		"zero records":  {"--topic", "t", "--num-records", "0", "--record-size", "1", "--throughput", "-1", "--producer-props", "a=b"},
		"no size":       {"--topic", "t", "--num-records", "1", "--throughput", "-1", "--producer-props", "a=b"},
		"bad prop":      {"--topic", "t", "--num-records", "1", "--record-size", "1", "--throughput", "-1", "--producer-props", "a=b=c"},
		"no throughput": {"--topic", "t", "--num-records", "1", "--record-size", "1", "--producer-props", "a=b"},
	} {
		if _, _, err := parseProducerPerfArgs(args, io.Discard); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestPerfProducerOpts(t *testing.T) {
	base := map[string]string{"bootstrap.servers": "127.0.0.1:1"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cl := func(props map[string]string) *kgo.Client {
		t.Helper()
		opts, _, err := perfProducerOpts("t", props)
		if err != nil {
			t.Fatal(err)
		}
		c, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	c := cl(with("acks", "1", "linger.ms", "7", "batch.size", "65536", "compression.type", "lz4"))
	if got := c.OptValue(kgo.ProducerLinger); got != 7*time.Millisecond {
		t.Errorf("linger %v", got)
	}
	if got := c.OptValue(kgo.ProducerBatchMaxBytes); got != int32(65536) {
		t.Errorf("batch max bytes %v", got)
	}
	if got := c.OptValue(kgo.MaxProduceRequestsInflightPerBroker); got != 5 {
		t.Errorf("in flight %v, want 5", got)
	}
	if got := c.OptValue(kgo.DisableIdempotentWrite); got != true {
		t.Errorf("idempotence must be off by default, got disable=%v", got)
	}
	if got := c.OptValue(kgo.ClientID); got != "perf-producer-client" {
		t.Errorf("client id %v", got)
	}
	c = cl(with("max.in.flight.requests.per.connection", "1"))
	if got := c.OptValue(kgo.MaxProduceRequestsInflightPerBroker); got != 1 {
		t.Errorf("in flight %v, want 1", got)
	}
	if _, unknown, _ := perfProducerOpts("t", with("foo.bar", "1")); len(unknown) != 1 || unknown[0] != "foo.bar" {
		t.Errorf("unknown %v", unknown)
	}
	for _, bad := range []map[string]string{{}, with("acks", "2"), with("compression.type", "brotli"), with("linger.ms", "x")} {
		if _, _, err := perfProducerOpts("t", bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func TestConsumerPerfOutput(t *testing.T) {
	if got, want := consumerPerfHeader(false), "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"; got != want {
		t.Fatalf("header %q", got)
	}
	layout := javaDateLayout("yyyy-MM-dd HH:mm:ss:SSS")
	start := time.Date(2026, 12, 2, 15, 4, 5, 123e6, time.UTC)
	r := consumerPerfResult{Start: start, End: start.Add(4 * time.Second), Bytes: 100 * 1024 * 1024, Messages: 1000000, JoinTime: 3 * time.Second / 2}
	got := formatConsumerPerf(r, layout)
	want := "2026-12-02 15:04:05:123, 2026-12-02 15:04:09:123, 100.0000, 25.0000, 1000000, 250000.0000, 1500, 2500, 40.0000, 400000.0000"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

func TestParseConsumerPerfArgs(t *testing.T) {
	o, _, err := parseConsumerPerfArgs([]string{"--bootstrap-server", "h:1", "--topic", "t", "--messages", "50"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.messages != 50 || o.topic != "t" || !strings.HasPrefix(o.group, "perf-consumer-") || o.timeout != 10*time.Second || o.fetchSize != 1<<20 {
		t.Fatalf("opts %+v", o)
	}
	for name, args := range map[string][]string{
		"no bootstrap": {"--topic", "t", "--messages", "1"},
		"no messages":  {"--bootstrap-server", "h:1", "--topic", "t"},
		"no topic":     {"--bootstrap-server", "h:1", "--messages", "1"},
	} {
		if _, _, err := parseConsumerPerfArgs(args, io.Discard); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestProducerPerfTransactions: Kafka 3.7's ProducerPerformance turns transactions on only for
// a positive --transaction-duration-ms; the flag's transactional id then wins over a
// transactional.id property, whose Java checks (idempotence, acks=all) apply.
func TestProducerPerfTransactions(t *testing.T) {
	base := []string{"--topic", "t", "--num-records", "10", "--record-size", "10", "--throughput", "-1", "--producer-props", "bootstrap.servers=h:1"}
	o, _, err := parseProducerPerfArgs(base, io.Discard)
	if err != nil || o.transactionDuration != 0 || o.props["transactional.id"] != "" {
		t.Fatalf("no transactions by default: %+v %v", o, err)
	}
	o, _, err = parseProducerPerfArgs(append(append([]string{}, base...), "--transactional-id", "perf-tx"), io.Discard)
	if err != nil || o.transactionDuration != 0 || o.props["transactional.id"] != "" {
		t.Fatalf("3.7: a transactional id alone does not turn transactions on: %+v %v", o, err)
	}
	o, _, err = parseProducerPerfArgs(append(append([]string{}, base...), "transactional.id=prop", "--transaction-duration-ms", "250"), io.Discard)
	if err != nil || o.transactionDuration != 250*time.Millisecond || o.props["transactional.id"] != "performance-producer-default-transactional-id" {
		t.Fatalf("duration with the default id: %+v %v", o, err)
	}
	opts, _, err := perfProducerOpts("t", o.props)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if got := cl.OptValue(kgo.TransactionalID); got != "performance-producer-default-transactional-id" {
		t.Errorf("transactional id %v", got)
	}
	if got := cl.OptValue(kgo.TransactionTimeout); got != time.Minute {
		t.Errorf("transaction timeout %v, want the Java producer's 60 s", got)
	}
	for name, props := range map[string]map[string]string{
		"idempotence off": {"bootstrap.servers": "h:1", "transactional.id": "x", "enable.idempotence": "false"},
		"acks=1 implicit": {"bootstrap.servers": "h:1", "transactional.id": "x", "acks": "1"},
		"acks=1 explicit": {"bootstrap.servers": "h:1", "transactional.id": "x", "acks": "1", "enable.idempotence": "true"},
	} {
		if _, _, err := perfProducerOpts("t", props); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestProducerPerfTransactionsKfake runs producer-perf-test with short transactions against
// franz-go's in-memory Kafka: every record is committed, so a read_committed reader sees all.
func TestProducerPerfTransactionsKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "perf-txn"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bs := c.ListenAddrs()[0]
	var out, errb strings.Builder
	code := runProducerPerfTest([]string{"--topic", "perf-txn", "--num-records", "3000", "--record-size", "100", "--throughput", "20000",
		"--transaction-duration-ms", "20", "--transactional-id", "perf-tx", "--producer-props", "bootstrap.servers=" + bs}, nil, &out, &errb)
	if code != 0 || !strings.HasPrefix(lastLine(out.String()), "3000 records sent, ") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out.String(), errb.String())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	committed, err := adm.ListCommittedOffsets(ctx, "perf-txn")
	if err != nil {
		t.Fatal(err)
	}
	end, err := adm.ListEndOffsets(ctx, "perf-txn")
	if err != nil {
		t.Fatal(err)
	}
	lso, _ := committed.Lookup("perf-txn", 0)
	hw, _ := end.Lookup("perf-txn", 0)
	// 3000 records plus one commit marker per transaction (at 20000 records/s and 20 ms, a
	// few tens of transactions): everything is stable.
	if lso.Offset != hw.Offset || hw.Offset <= 3001 || hw.Offset > 3000+200 {
		t.Fatalf("last stable offset %d, end offset %d: want all 3000 records committed in several transactions", lso.Offset, hw.Offset)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
