package main

// consumer-perf-test mirrors Kafka 3.7's kafka-consumer-perf-test.sh
// (org.apache.kafka.tools.ConsumerPerformance): the same flags, header and result line, over
// a franz-go group consumer (group perf-consumer-<random> unless --group).
//
// Deviations: --show-detailed-stats prints the same per-interval columns; --print-metrics is
// accepted and ignored (franz-go has no Java metrics); --socket-buffer-size is accepted.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
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
	return fmt.Sprintf("%s, %s, %.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f",
		formatJavaDate(r.Start, layout), formatJavaDate(r.End, layout), mb, javaDiv(mb, elapsedSec), r.Messages,
		javaDiv(float64(r.Messages), elapsedSec), r.JoinTime.Milliseconds(), fetchMs,
		javaDiv(mb, float64(fetchMs)/1000), javaDiv(float64(r.Messages), float64(fetchMs)/1000))
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
	return fmt.Sprintf("%s, %d, %.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f",
		formatJavaDate(end, layout), 0, float64(bytes)/(1024*1024), javaDiv(1000*intervalMB, elapsedMs), msgs,
		javaDiv(float64(msgs-lastMsgs), elapsedMs)*1000, join.Milliseconds(), fetchMs, fetchMBs, fetchMsgs)
}

// javaDiv divides as Java doubles do: x/0 is ±Inf or NaN rather than a panic.
func javaDiv(a, b float64) float64 { return a / b }

func consumerPerfClientOpts(o *consumerPerfOpts, onAssigned func()) []kgo.Opt {
	reset := kgo.NewOffset().AtStart()
	if o.fromLatest {
		reset = kgo.NewOffset().AtEnd()
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(splitServers(o.bootstrap)...),
		kgo.ClientID("perf-consumer-client"),
		kgo.ConsumerGroup(o.group),
		kgo.ConsumeResetOffset(reset),
		kgo.FetchMaxPartitionBytes(int32(o.fetchSize)),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { onAssigned() }),
	}
	if o.include != "" {
		opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics(o.include))
	} else {
		opts = append(opts, kgo.ConsumeTopics(o.topic))
	}
	return opts
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
	joinStart := time.Now()
	var joinTime, joinRound time.Duration
	assigned := false
	onAssigned := func() {
		mu.Lock()
		defer mu.Unlock()
		if !assigned {
			d := time.Since(joinStart)
			joinTime += d
			joinRound += d
		}
		assigned = true
	}
	opts := append(consumerPerfClientOpts(o, onAssigned),
		kgo.OnPartitionsRevoked(func(context.Context, *kgo.Client, map[string][]int32) {
			mu.Lock()
			assigned, joinStart = false, time.Now()
			mu.Unlock()
		}))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	start := time.Now()
	var bytes, msgs, lastBytes, lastMsgs int64
	lastReport, lastConsumed := start, start
	for msgs < o.messages && time.Since(lastConsumed) <= o.timeout {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		fetches := cl.PollFetches(ctx)
		cancel()
		now := time.Now()
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
	end := time.Now()
	cl.Close()
	mu.Lock()
	jt := joinTime
	mu.Unlock()
	if !o.detailed {
		fmt.Fprintln(stdout, formatConsumerPerf(consumerPerfResult{Start: start, End: end, Bytes: bytes, Messages: msgs, JoinTime: jt}, o.dateFormat))
	}
	return 0
}
