package main

// producer-perf-test mirrors Kafka 3.7's kafka-producer-perf-test.sh
// (org.apache.kafka.tools.ProducerPerformance and server.util.ThroughputThrottler): the same
// flags, a progress line every 5 s and the same final line, over a franz-go producer.
//
// Idempotence follows the Java producer's 3.x default: on unless enable.idempotence=false,
// or acks is not all and enable.idempotence is unset. Deviations: payloads come from a pool
// of 64 random A–Z payloads instead of being regenerated per record (less client CPU, same
// bytes on the wire); latency is kept in microseconds and printed in Kafka's units;
// --payload-file is not supported.
//
// Transactions are Kafka 3.7's: on only when --transaction-duration-ms is positive (default 0),
// with --transactional-id (default "performance-producer-default-transactional-id"); a
// transaction begins before a record when none is open and commits after the send of the
// first record at least that many ms after it began, and once more at the end. (Kafka 4.0
// later turned transactions on for a transactional id alone, with 3000 ms; 3.7 does not.)

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type producerPerfOpts struct {
	topic        string
	numRecords   int64
	recordSize   int
	throughput   float64
	printMetrics bool
	props        map[string]string
	// transactionDuration > 0 turns transactions on (ProducerPerformance's transactionsEnabled).
	transactionDuration time.Duration
	transactionalID     string
}

func parseProducerPerfArgs(args []string, stderr io.Writer) (*producerPerfOpts, *flag.FlagSet, error) {
	fs := newFlagSet("samsa producer-perf-test", stderr)
	var topic, numRecords, recordSize, throughput, configFile optString
	fs.Var(&topic, "topic", "REQUIRED: produce messages to this topic")
	fs.Var(&numRecords, "num-records", "REQUIRED: number of messages to produce")
	fs.Var(&recordSize, "record-size", "REQUIRED: message size in bytes")
	fs.Var(&throughput, "throughput", "REQUIRED: throttle maximum message throughput to *approximately* THROUGHPUT messages/sec. Set this to -1 to disable throttling.")
	fs.Var(&configFile, "producer.config", "producer config properties file.")
	printMetrics := fs.Bool("print-metrics", false, "print out metrics at the end of the test (accepted; franz-go has no Java metrics).")
	transactionalID := fs.String("transactional-id", "performance-producer-default-transactional-id", "The transactionalId to use if transaction-duration-ms is > 0. Useful when testing the performance of concurrent transactions.")
	var txnDuration optInt
	fs.Var(&txnDuration, "transaction-duration-ms", "The max age of each transaction. The commitTransaction will be called after this time has elapsed. Transactions are only enabled if this value is positive. (default 0)")
	// --producer-props takes one or more values (argparse4j nargs("+")): gather them first.
	args, props := splitNargs(args, "producer-props")
	if err := parseFlags(fs, args); err != nil {
		return nil, fs, err
	}
	o := &producerPerfOpts{topic: topic.v, printMetrics: *printMetrics, transactionalID: *transactionalID}
	if txnDuration.v > 0 {
		o.transactionDuration = time.Duration(txnDuration.v) * time.Millisecond
	}
	for _, req := range []struct {
		name string
		set  bool
	}{{"--topic", topic.set}, {"--num-records", numRecords.set}, {"--throughput", throughput.set}} {
		if !req.set {
			return nil, fs, usageErr("argument %s is required", req.name)
		}
	}
	var err error
	if o.numRecords, err = strconv.ParseInt(numRecords.v, 10, 64); err != nil || o.numRecords <= 0 {
		return nil, fs, usageErr("--num-records should be greater than zero")
	}
	if !recordSize.set {
		return nil, fs, usageErr("one of the arguments --record-size --payload-file --payload-monotonic is required")
	}
	if o.recordSize, err = strconv.Atoi(recordSize.v); err != nil || o.recordSize <= 0 {
		return nil, fs, usageErr("--record-size should be greater than zero")
	}
	if o.throughput, err = strconv.ParseFloat(throughput.v, 64); err != nil {
		return nil, fs, usageErr("argument --throughput: could not convert %q to Double", throughput.v)
	}
	if props == nil && !configFile.set {
		return nil, fs, usageErr("Either --producer-props or --producer.config must be specified.")
	}
	o.props = map[string]string{}
	if configFile.set {
		if o.props, err = loadPropsFile(configFile.v); err != nil {
			return nil, fs, err
		}
	}
	for _, p := range props {
		// ProducerPerformance.readProps splits on every '=' and wants exactly two pieces.
		pieces := strings.Split(p, "=")
		if len(pieces) != 2 {
			return nil, fs, fmt.Errorf("Invalid property: %s", p)
		}
		o.props[pieces[0]] = pieces[1]
	}
	if o.transactionDuration > 0 { // readProps: the flag's id wins over a transactional.id property
		o.props["transactional.id"] = o.transactionalID
	}
	return o, fs, nil
}

// splitNargs removes "--name v1 v2 ..." (values up to the next flag) from args and returns
// the values; nil when the flag is absent.
func splitNargs(args []string, name string) (rest, values []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a != "-"+name && a != "--"+name {
			if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
				values = append(values, v)
				continue
			}
			rest = append(rest, a)
			continue
		}
		if values == nil {
			values = []string{}
		}
		for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			i++
			values = append(values, args[i])
		}
	}
	return rest, values
}

// perfProducerOpts maps Java producer properties to kgo options, security settings included
// (clientSecurityOpts). Unknown keys are reported (the Java producer logs "... was supplied
// but isn't a known config").
func perfProducerOpts(topic string, props map[string]string) (opts []kgo.Opt, unknown []string, err error) {
	bootstrap := props["bootstrap.servers"]
	if bootstrap == "" {
		return nil, nil, fmt.Errorf("Missing required configuration \"bootstrap.servers\" which has no default value.")
	}
	clientID := "perf-producer-client"
	if v, ok := props["client.id"]; ok {
		clientID = v
	}
	opts = []kgo.Opt{
		kgo.SeedBrokers(splitServers(bootstrap)...),
		kgo.DefaultProduceTopic(topic),
		kgo.ClientID(clientID),
		kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(0), // Kafka 3.7: linger.ms=0
		kgo.ProducerBatchMaxBytes(16384),
		kgo.RecordDeliveryTimeout(120 * time.Second),
	}
	sec, err := clientSecurityOpts(props)
	if err != nil {
		return nil, nil, err
	}
	opts = append(opts, sec.opts...)
	intProp := func(k string) (int64, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(props[k]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("Invalid value %s for configuration %s: Not a number of type LONG", props[k], k)
		}
		return n, nil
	}
	inFlight := int64(5)
	idempotent := isTrue(props["enable.idempotence"])
	if _, set := props["enable.idempotence"]; !set {
		acks := strings.TrimSpace(props["acks"])
		idempotent = acks == "" || acks == "all" || acks == "-1"
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := props[k]
		if sec.used[k] {
			continue
		}
		switch k {
		case "transactional.id":
			opts = append(opts, kgo.TransactionalID(v))
		case "transaction.timeout.ms":
			n, err := intProp(k)
			if err != nil {
				return nil, nil, err
			}
			opts = append(opts, kgo.TransactionTimeout(time.Duration(n)*time.Millisecond))
		case "bootstrap.servers", "client.id", "enable.idempotence",
			"key.serializer", "value.serializer", "send.buffer.bytes", "receive.buffer.bytes":
		case "acks":
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "-1", "all":
				opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
			case "1":
				opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
			case "0":
				opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
			default:
				return nil, nil, fmt.Errorf("Invalid value %s for configuration acks: String must be one of: all, -1, 0, 1", v)
			}
		case "linger.ms":
			n, err := intProp(k)
			if err != nil {
				return nil, nil, err
			}
			opts = append(opts, kgo.ProducerLinger(time.Duration(n)*time.Millisecond))
		case "batch.size":
			n, err := intProp(k)
			if err != nil {
				return nil, nil, err
			}
			if n <= 0 { // Java: 0 disables batching; kgo needs room for one record
				n = 1
			}
			opts = append(opts, kgo.ProducerBatchMaxBytes(int32(min(n, 1<<30))))
		case "compression.type":
			c, err := kgoCompression(v)
			if err != nil {
				return nil, nil, err
			}
			opts = append(opts, kgo.ProducerBatchCompression(c))
		case "max.in.flight.requests.per.connection":
			if inFlight, err = intProp(k); err != nil {
				return nil, nil, err
			}
		case "buffer.memory":
			n, err := intProp(k)
			if err != nil {
				return nil, nil, err
			}
			opts = append(opts, kgo.MaxBufferedBytes(int(n)))
		case "request.timeout.ms":
			n, err := intProp(k)
			if err != nil {
				return nil, nil, err
			}
			opts = append(opts, kgo.ProduceRequestTimeout(time.Duration(n)*time.Millisecond))
		case "delivery.timeout.ms":
			n, err := intProp(k)
			if err != nil {
				return nil, nil, err
			}
			opts = append(opts, kgo.RecordDeliveryTimeout(time.Duration(n)*time.Millisecond))
		case "retries":
			n, err := intProp(k)
			if err != nil {
				return nil, nil, err
			}
			opts = append(opts, kgo.RecordRetries(int(min(n, 1<<31-1))))
		case "max.request.size":
			n, err := intProp(k)
			if err != nil {
				return nil, nil, err
			}
			opts = append(opts, kgo.BrokerMaxWriteBytes(int32(n)))
		default:
			unknown = append(unknown, k)
		}
	}
	// ProducerConfig.postProcessAndValidateIdempotenceConfigs.
	if _, txn := props["transactional.id"]; txn {
		if !idempotent {
			return nil, nil, fmt.Errorf("Cannot set a transactional.id without also enabling idempotence.")
		}
		if acks := strings.ToLower(strings.TrimSpace(props["acks"])); acks != "" && acks != "all" && acks != "-1" {
			return nil, nil, fmt.Errorf("Must set acks to all in order to use the idempotent producer. Otherwise we cannot guarantee idempotence.")
		}
		if _, set := props["transaction.timeout.ms"]; !set {
			opts = append(opts, kgo.TransactionTimeout(60*time.Second)) // the Java producer's default
		}
	}
	if !idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(int(inFlight)))
	}
	return opts, unknown, nil
}

func kgoCompression(v string) (kgo.CompressionCodec, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.NoCompression(), fmt.Errorf("Invalid value %s for configuration compression.type: String must be one of: none, gzip, snappy, lz4, zstd", v)
}

// perfStats is ProducerPerformance.Stats: totals, a 5 s reporting window, and a sample of at
// most 500,000 latencies for the percentiles. Safe for concurrent use.
type perfStats struct {
	mu                 sync.Mutex
	out                io.Writer
	now                func() time.Time
	start, windowStart time.Time
	reporting          time.Duration
	sampling           int64
	latencies          []time.Duration
	iteration          int64

	count, bytes, windowCount, windowBytes int64
	totalLatency, windowTotalLatency       time.Duration
	maxLatency, windowMaxLatency           time.Duration
}

func newPerfStats(numRecords int64, out io.Writer, now func() time.Time) *perfStats {
	t := now()
	sampling := numRecords / min(numRecords, 500000)
	return &perfStats{out: out, now: now, start: t, windowStart: t, reporting: 5 * time.Second,
		sampling: sampling, latencies: make([]time.Duration, 0, numRecords/sampling+1)}
}

// record counts one acknowledged record (Stats.record).
func (s *perfStats) record(latency time.Duration, bytes int, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count++
	s.bytes += int64(bytes)
	s.totalLatency += latency
	s.maxLatency = max(s.maxLatency, latency)
	s.windowCount++
	s.windowBytes += int64(bytes)
	s.windowTotalLatency += latency
	s.windowMaxLatency = max(s.windowMaxLatency, latency)
	if s.iteration%s.sampling == 0 {
		s.latencies = append(s.latencies, latency)
	}
	if s.out != nil && now.Sub(s.windowStart) >= s.reporting {
		fmt.Fprintln(s.out, formatWindow(s.windowCount, s.windowBytes, s.now().Sub(s.windowStart), s.windowTotalLatency, s.windowMaxLatency))
		s.windowStart = s.now()
		s.windowCount, s.windowBytes, s.windowTotalLatency, s.windowMaxLatency = 0, 0, 0, 0
	}
	s.iteration++
}

// perfSummary is the final line's numbers.
type perfSummary struct {
	Count, Bytes        int64
	Elapsed             time.Duration
	Avg, Max            time.Duration
	P50, P95, P99, P999 time.Duration
}

func (s *perfStats) summary() perfSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := perfSummary{Count: s.count, Bytes: s.bytes, Elapsed: s.now().Sub(s.start), Max: s.maxLatency}
	if s.count > 0 {
		r.Avg = s.totalLatency / time.Duration(s.count)
	}
	p := percentiles(s.latencies, 0.5, 0.95, 0.99, 0.999)
	r.P50, r.P95, r.P99, r.P999 = p[0], p[1], p[2], p[3]
	return r
}

// percentiles sorts lat in place and picks lat[int(p*len)] for each p, as Kafka does.
func percentiles(lat []time.Duration, ps ...float64) []time.Duration {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	out := make([]time.Duration, len(ps))
	if len(lat) == 0 {
		return out
	}
	for i, p := range ps {
		out[i] = lat[min(int(p*float64(len(lat))), len(lat)-1)]
	}
	return out
}

func msFloat(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func perSec(n float64, elapsed time.Duration) float64 {
	ms := elapsed.Milliseconds()
	if ms <= 0 {
		ms = 1
	}
	return 1000 * n / float64(ms)
}

// formatWindow is Stats.printWindow's line.
func formatWindow(count, bytes int64, elapsed, totalLatency, maxLatency time.Duration) string {
	avg := 0.0
	if count > 0 {
		avg = msFloat(totalLatency) / float64(count)
	}
	return fmt.Sprintf("%d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.",
		count, perSec(float64(count), elapsed), perSec(float64(bytes), elapsed)/(1024*1024), avg, float64(maxLatency.Milliseconds()))
}

// formatTotal is Stats.printTotal's line (Java's %f prints six decimals; percentiles are whole ms).
func formatTotal(s perfSummary) string {
	return fmt.Sprintf("%d records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, %d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th.",
		s.Count, perSec(float64(s.Count), s.Elapsed), perSec(float64(s.Bytes), s.Elapsed)/(1024*1024),
		msFloat(s.Avg), float64(s.Max.Milliseconds()),
		s.P50.Milliseconds(), s.P95.Milliseconds(), s.P99.Milliseconds(), s.P999.Milliseconds())
}

// throughputThrottler is Kafka's ThroughputThrottler: between sends, sleep on average
// 1/target seconds per record once the rate so far is above target, in sleeps of >= 2 ms.
type throughputThrottler struct {
	start        time.Time
	target       float64
	sleepTime    time.Duration
	sleepDeficit time.Duration
	sleep        func(time.Duration)
	now          func() time.Time
}

const minThrottleSleep = 2 * time.Millisecond

func newThroughputThrottler(target float64, start time.Time) *throughputThrottler {
	t := &throughputThrottler{start: start, target: target, sleep: time.Sleep, now: time.Now, sleepTime: time.Duration(1<<63 - 1)}
	if target > 0 {
		t.sleepTime = time.Duration(float64(time.Second) / target)
	}
	return t
}

// shouldThrottle reports whether amountSoFar sent by sendStart is above the target rate.
func (t *throughputThrottler) shouldThrottle(amountSoFar int64, sendStart time.Time) bool {
	if t.target < 0 {
		return false
	}
	elapsed := sendStart.Sub(t.start).Seconds()
	return elapsed > 0 && float64(amountSoFar)/elapsed > t.target
}

// throttle adds one record's share of sleep and sleeps once enough has accumulated.
func (t *throughputThrottler) throttle() {
	if t.target == 0 {
		select {} // Kafka waits for wakeup(), which this tool never calls
	}
	t.sleepDeficit += t.sleepTime
	if t.sleepDeficit >= minThrottleSleep {
		t.sleep(t.sleepDeficit)
		t.sleepDeficit = 0
	}
}

// perfPayloads returns n payloads of size random upper-case letters (Kafka: random.nextInt(26)+65).
func perfPayloads(n, size int, seed int64) [][]byte {
	r := rand.New(rand.NewSource(seed))
	out := make([][]byte, n)
	for i := range out {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(r.Intn(26) + 65)
		}
		out[i] = b
	}
	return out
}

// runProducerPerfTest is kafka-producer-perf-test.sh.
func runProducerPerfTest(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, fs, err := parseProducerPerfArgs(args, stderr)
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	opts, unknown, err := perfProducerOpts(o.topic, o.props)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, k := range unknown {
		fmt.Fprintf(stderr, "WARN These configurations '[%s]' were supplied but are not used yet.\n", k)
	}
	if _, txn := o.props["transactional.id"]; txn && o.transactionDuration <= 0 {
		// The Java tool never calls initTransactions then, and its first send throws.
		fmt.Fprintf(stderr, "Cannot add partition %s to transaction before completing a call to initTransactions (transactional.id is set but --transaction-duration-ms is not positive)\n", o.topic)
		return 1
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer cl.Close()
	s, err := producerPerf(context.Background(), cl, o, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintln(stdout, formatTotal(s))
	return 0
}

// producerPerf sends o.numRecords records through cl at o.throughput and returns the stats;
// progress lines go to stdout every 5 s. Failed sends are printed and not counted, as in Kafka.
func producerPerf(ctx context.Context, cl *kgo.Client, o *producerPerfOpts, stdout, stderr io.Writer) (perfSummary, error) {
	payloads := perfPayloads(64, o.recordSize, 0)
	stats := newPerfStats(o.numRecords, stdout, time.Now)
	throttler := newThroughputThrottler(o.throughput, time.Now())
	var errMu sync.Mutex
	var firstErr error
	txn := o.transactionDuration > 0
	currentTxnSize := 0
	var txnStart time.Time
	for i := int64(0); i < o.numRecords; i++ {
		if err := ctx.Err(); err != nil {
			return perfSummary{}, err
		}
		if txn && currentTxnSize == 0 {
			if err := cl.BeginTransaction(); err != nil {
				return perfSummary{}, err
			}
			txnStart = time.Now()
		}
		value := payloads[i%int64(len(payloads))]
		start := time.Now()
		cl.Produce(ctx, &kgo.Record{Topic: o.topic, Value: value}, func(r *kgo.Record, err error) {
			now := time.Now()
			if err != nil {
				errMu.Lock()
				if firstErr == nil {
					firstErr = err
					fmt.Fprintf(stderr, "ERROR sending to %s: %v\n", o.topic, err)
				}
				errMu.Unlock()
				return
			}
			stats.record(now.Sub(start), len(r.Value), now)
		})
		currentTxnSize++
		// Kafka compares whole milliseconds: sendStartMs - transactionStartTime.
		if txn && o.transactionDuration.Milliseconds() <= start.UnixMilli()-txnStart.UnixMilli() {
			if err := commitTransaction(ctx, cl); err != nil {
				return perfSummary{}, err
			}
			currentTxnSize = 0
		}
		if throttler.shouldThrottle(i, start) {
			throttler.throttle()
		}
	}
	if txn && currentTxnSize != 0 {
		if err := commitTransaction(ctx, cl); err != nil {
			return perfSummary{}, err
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return perfSummary{}, err
	}
	return stats.summary(), nil
}

// commitTransaction is KafkaProducer.commitTransaction: flush what the transaction sent, then
// end it with a commit.
func commitTransaction(ctx context.Context, cl *kgo.Client) error {
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("commit transaction: %w", err)
	}
	return nil
}
