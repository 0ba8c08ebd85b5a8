package main

// consumer-perf-test mirrors Kafka 3.7's kafka-consumer-perf-test.sh
// (org.apache.kafka.tools.ConsumerPerformance): the same flags, header and result line, over
// a franz-go group consumer (group perf-consumer-<random> unless --group).
//
// Deviations: --show-detailed-stats prints the same per-interval columns; --print-metrics is
// accepted and ignored (franz-go has no Java metrics); --socket-buffer-size is accepted.
// From --consumer.config only the settings franz-go has are applied (client.id,
// isolation.level, fetch.min.bytes, fetch.max.bytes, fetch.max.wait.ms, enable.auto.commit,
// and the security settings clientSecurityOpts honours);
// group.id and auto.offset.reset are the flags', as in Kafka.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type consumerPerfOpts struct {
	bootstrap         string
	topic             string
	include           string
	group             string
	messages          int64
	fetchSize         int64
	fromLatest        bool
	timeout           time.Duration
	reportingInterval time.Duration
	detailed          bool
	hideHeader        bool
	dateFormat        string // Go layout
	props             map[string]string
}

func parseConsumerPerfArgs(args []string, stderr io.Writer) (*consumerPerfOpts, *flag.FlagSet, error) {
	fs := newFlagSet("samsa consumer-perf-test", stderr)
	var bootstrap, brokerList, topic, include, group, configFile optString
	var messages optInt
	o := &consumerPerfOpts{}
	fs.Var(&bootstrap, "bootstrap-server", "REQUIRED unless --broker-list(deprecated) is specified. The server(s) to connect to.")
	fs.Var(&brokerList, "broker-list", "DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server is specified.")
	fs.Var(&topic, "topic", "The topic to consume from.")
	fs.Var(&include, "include", "Regular expression specifying list of topics to include for consumption.")
	fs.Var(&group, "group", "The group id to consume on. (default: perf-consumer-<random>)")
	fs.Var(&messages, "messages", "REQUIRED: The number of messages to send or consume")
	fs.Int64Var(&o.fetchSize, "fetch-size", 1024*1024, "The amount of data to fetch in a single request.")
	fs.BoolVar(&o.fromLatest, "from-latest", false, "If the consumer does not already have an established offset to consume from, start with the latest message present in the log rather than the earliest message.")
	fs.Int64("socket-buffer-size", 2*1024*1024, "The size of the tcp RECV size (accepted).")
	fs.Var(&configFile, "consumer.config", "Consumer config properties file.")
	fs.Bool("print-metrics", false, "Print out the metrics (accepted; franz-go has no Java metrics).")
	fs.BoolVar(&o.detailed, "show-detailed-stats", false, "If set, stats are reported for each reporting interval as configured by reporting-interval")
	timeoutMs := fs.Int64("timeout", 10000, "The maximum allowed time in milliseconds between returned records.")
	reportMs := fs.Int64("reporting-interval", 5000, "Interval in milliseconds at which to print progress info.")
	dateFormat := fs.String("date-format", "yyyy-MM-dd HH:mm:ss:SSS", "The date format to use for formatting the time field. See java.text.SimpleDateFormat for options.")
	fs.BoolVar(&o.hideHeader, "hide-header", false, "If set, skips printing the header for the stats")
	if err := parseFlags(fs, args); err != nil {
		return nil, fs, err
	}
	o.bootstrap = bootstrap.v
	if !bootstrap.set {
		o.bootstrap = brokerList.v
	}
	if o.bootstrap == "" {
		return nil, fs, usageErr("Missing required argument \"[bootstrap-server]\"")
	}
	if !messages.set {
		return nil, fs, usageErr("Missing required argument \"[messages]\"")
	}
	if topic.set == include.set {
		return nil, fs, usageErr("Exactly one of the following arguments is required: [topic], [include]")
	}
	o.topic, o.include, o.messages = topic.v, include.v, messages.v
	o.group = group.v
	if !group.set {
		o.group = fmt.Sprintf("perf-consumer-%d", rand.Intn(100000))
	}
	if *reportMs <= 0 {
		return nil, fs, usageErr("Reporting interval must be greater than 0.")
	}
	o.timeout = time.Duration(*timeoutMs) * time.Millisecond
	o.reportingInterval = time.Duration(*reportMs) * time.Millisecond
	o.dateFormat = javaDateLayout(*dateFormat)
	o.props = map[string]string{}
	if configFile.set {
		var err error
		if o.props, err = loadPropsFile(configFile.v); err != nil {
			return nil, fs, err
		}
	}
	return o, fs, nil
}

// autoCommit is enable.auto.commit (default true).
func (o *consumerPerfOpts) autoCommit() bool {
	v, ok := o.props["enable.auto.commit"]
	return !ok || isTrue(v)
}

// javaDateLayout turns the SimpleDateFormat letters Kafka's tools use into a Go layout.
func javaDateLayout(f string) string {
	r := strings.NewReplacer("yyyy", "2006", "yy", "06", "MM", "01", "dd", "02", "HH", "15",
		"hh", "03", "mm", "04", "ss", "05", "SSS", msToken, "a", "PM", "Z", "-0700", "z", "MST")
	return r.Replace(f)
}

// msToken stands for SimpleDateFormat's SSS: Go formats milliseconds only after '.' or ','.
const msToken = "{ms}"

// formatJavaDate formats t with a layout from javaDateLayout.
func formatJavaDate(t time.Time, layout string) string {
	return strings.ReplaceAll(t.Format(layout), msToken, fmt.Sprintf("%03d", t.Nanosecond()/1e6))
}

// consumerPerfHeader is ConsumerPerformance.printHeader.
func consumerPerfHeader(detailed bool) string {
	const extra = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
	if detailed {
		return "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec" + extra
	}
	return "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec" + extra
}

// consumerPerfResult is what a consumer-perf-test run measured.
type consumerPerfResult struct {
	Start, End      time.Time
	Bytes, Messages int64
	JoinTime        time.Duration // rebalance.time.ms
}

// formatConsumerPerf is ConsumerPerformance's final line.
func formatConsumerPerf(r consumerPerfResult, layout string) string {
	elapsedSec := float64(r.End.Sub(r.Start).Milliseconds()) / 1000
	fetchMs := r.End.Sub(r.Start).Milliseconds() - r.JoinTime.Milliseconds()
	mb := float64(r.Bytes) / (1024 * 1024)
	return fmt.Sprintf("%s, %s, %s, %s, %d, %s, %d, %d, %s, %s",
		formatJavaDate(r.Start, layout), formatJavaDate(r.End, layout), javaF4(mb), javaF4(javaDiv(mb, elapsedSec)), r.Messages,
		javaF4(javaDiv(float64(r.Messages), elapsedSec)), r.JoinTime.Milliseconds(), fetchMs,
		javaF4(javaDiv(mb, float64(fetchMs)/1000)), javaF4(javaDiv(float64(r.Messages), float64(fetchMs)/1000)))
}

// formatConsumerProgress is printConsumerProgress (--show-detailed-stats): interval figures.
func formatConsumerProgress(bytes, lastBytes, msgs, lastMsgs int64, start, end time.Time, join time.Duration, layout string) string {
	elapsedMs := float64(end.Sub(start).Milliseconds())
	intervalMB := float64(bytes-lastBytes) / (1024 * 1024)
	fetchMs := end.Sub(start).Milliseconds() - join.Milliseconds()
	fetchMBs, fetchMsgs := 0.0, 0.0
	if fetchMs > 0 {
		fetchMBs = 1000 * intervalMB / float64(fetchMs)
		fetchMsgs = 1000 * float64(msgs-lastMsgs) / float64(fetchMs)
	}
	return fmt.Sprintf("%s, %d, %.4f, %s, %d, %s, %d, %d, %.4f, %.4f",
		formatJavaDate(end, layout), 0, float64(bytes)/(1024*1024), javaF4(javaDiv(1000*intervalMB, elapsedMs)), msgs,
		javaF4(javaDiv(float64(msgs-lastMsgs), elapsedMs)*1000), join.Milliseconds(), fetchMs, fetchMBs, fetchMsgs)
}

// javaDiv divides as Java doubles do: x/0 is ±Inf or NaN rather than a panic.
func javaDiv(a, b float64) float64 { return a / b }

// javaF4 is Java's String.format("%.4f", v): Infinity, -Infinity and NaN by name, where
// Go would print +Inf, -Inf and NaN.
func javaF4(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

// nowMs is System.currentTimeMillis(): the tool's times are whole milliseconds, so the
// printed start and end differ by exactly the elapsed time the rates use.
func nowMs() time.Time { return time.UnixMilli(time.Now().UnixMilli()) }

func consumerPerfClientOpts(o *consumerPerfOpts, onAssigned func()) ([]kgo.Opt, error) {
	reset := kgo.NewOffset().AtStart()
	if o.fromLatest {
		reset = kgo.NewOffset().AtEnd()
	}
	clientID := "perf-consumer-client"
	if v, ok := o.props["client.id"]; ok {
		clientID = v
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(splitServers(o.bootstrap)...),
		kgo.ClientID(clientID),
		kgo.ConsumerGroup(o.group),
		kgo.ConsumeResetOffset(reset),
		kgo.FetchMaxPartitionBytes(int32(o.fetchSize)),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { onAssigned() }),
	}
	sec, err := clientSecurityOpts(o.props)
	if err != nil {
		return nil, err
	}
	opts = append(opts, sec.opts...)
	if o.props["isolation.level"] == "read_committed" {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if !o.autoCommit() {
		opts = append(opts, kgo.DisableAutoCommit())
	}
	for _, k := range []string{"fetch.min.bytes", "fetch.max.bytes", "fetch.max.wait.ms"} {
		v, ok := o.props[k]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("Invalid value %s for configuration %s: Not a number of type INT", v, k)
		}
		switch k {
		case "fetch.min.bytes":
			opts = append(opts, kgo.FetchMinBytes(int32(n)))
		case "fetch.max.bytes":
			opts = append(opts, kgo.FetchMaxBytes(int32(n)))
		case "fetch.max.wait.ms":
			opts = append(opts, kgo.FetchMaxWait(time.Duration(n)*time.Millisecond))
		}
	}
	if o.include != "" {
		// Java's Pattern subscription matches whole topic names; franz-go's regex finds.
		opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics("^(?:"+o.include+")$"))
	} else {
		opts = append(opts, kgo.ConsumeTopics(o.topic))
	}
	return opts, nil
}

// runConsumerPerfTest is kafka-consumer-perf-test.sh.
func runConsumerPerfTest(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, fs, err := parseConsumerPerfArgs(args, stderr)
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	if !o.hideHeader {
		fmt.Fprintln(stdout, consumerPerfHeader(o.detailed))
	}
	// ConsumerPerfRebListener: the time from start (or the last revocation) to the first
	// assignment counts as rebalance time, not fetch time.
	var mu sync.Mutex
	joinStart := nowMs()
	var joinTime, joinRound time.Duration
	assigned := false
	onAssigned := func() {
		mu.Lock()
		defer mu.Unlock()
		if !assigned {
			d := nowMs().Sub(joinStart)
			joinTime += d
			joinRound += d
		}
		assigned = true
	}
	opts, err := consumerPerfClientOpts(o, onAssigned)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	opts = append(opts, kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, _ map[string][]int32) {
		// A revoke callback replaces franz-go's default one, and with it the commit of
		// what was consumed; KafkaConsumer commits it on rebalance and on close when
		// enable.auto.commit is on, so a second run on the same --group starts after it.
		if o.autoCommit() {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				fmt.Fprintf(stderr, "WARN offset commit failed: %v\n", err)
			}
		}
		mu.Lock()
		assigned, joinStart = false, nowMs()
		mu.Unlock()
	}))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	start := nowMs()
	var bytes, msgs, lastBytes, lastMsgs int64
	lastReport, lastConsumed := start, start
	for msgs < o.messages && time.Since(lastConsumed) <= o.timeout {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		fetches := cl.PollFetches(ctx)
		cancel()
		now := nowMs()
		for _, fe := range fetches.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) {
				fmt.Fprintf(stderr, "WARN fetch %s-%d: %v\n", fe.Topic, fe.Partition, fe.Err)
			}
		}
		if fetches.NumRecords() > 0 {
			lastConsumed = now
		}
		fetches.EachRecord(func(r *kgo.Record) {
			msgs++
			bytes += int64(len(r.Key) + len(r.Value))
			if now.Sub(lastReport) >= o.reportingInterval {
				if o.detailed {
					mu.Lock()
					jr := joinRound
					joinRound = 0
					mu.Unlock()
					fmt.Fprintln(stdout, formatConsumerProgress(bytes, lastBytes, msgs, lastMsgs, lastReport, now, jr, o.dateFormat))
				}
				lastReport, lastMsgs, lastBytes = now, msgs, bytes
			}
		})
	}
	if msgs < o.messages {
		fmt.Fprintf(stdout, "WARNING: Exiting before consuming the expected number of messages: timeout (%d ms) exceeded. You can use the --timeout option to increase the timeout.\n", o.timeout.Milliseconds())
	}
	end := nowMs()
	// The rebalance time is what the consume loop saw: Close may still finish a join (and
	// call onAssigned) that Kafka's consumer, which joins only inside poll, never made.
	mu.Lock()
	jt := joinTime
	mu.Unlock()
	cl.Close()
	if !o.detailed {
		fmt.Fprintln(stdout, formatConsumerPerf(consumerPerfResult{Start: start, End: end, Bytes: bytes, Messages: msgs, JoinTime: jt}, o.dateFormat))
	}
	return 0
}
