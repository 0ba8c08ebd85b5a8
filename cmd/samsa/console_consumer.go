package main

// console-consumer mirrors Kafka 3.7's kafka-console-consumer.sh (kafka.tools.ConsoleConsumer
// and DefaultMessageFormatter): flags, checks, output format and the closing
// "Processed a total of N messages" on stderr, over a franz-go consumer.
//
// Without --group, Kafka joins a throwaway group (console-consumer-NNNNN, auto-commit off)
// and starts at auto.offset.reset; samsa consumes the topic's partitions directly from the
// same starting point, which reads the same records and needs no group coordinator.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-kafka/samsa/internal/config"
)

// Kafka's ListOffsetsRequest.EARLIEST_TIMESTAMP / LATEST_TIMESTAMP as --offset values.
const (
	offsetEarliest = -2
	offsetLatest   = -1
)

type consumerOpts struct {
	bootstrap      string
	topic          string
	include        string
	partition      int32
	hasPartition   bool
	offset         int64 // offsetEarliest, offsetLatest or a position
	fromBeginning  bool
	maxMessages    int64 // -1: unlimited
	timeoutMs      int64 // -1: none
	group          string
	isolationLevel string
	skipOnError    bool
	consumerProps  map[string]string
	format         messageFormat
	security       []kgo.Opt // from consumerProps' security settings
}

// messageFormat is DefaultMessageFormatter's configuration.
type messageFormat struct {
	printTimestamp, printKey, printValue, printPartition, printOffset, printHeaders bool
	keySeparator, lineSeparator, headersSeparator, nullLiteral                      string
}

func newMessageFormat(props map[string]string) messageFormat {
	f := messageFormat{printValue: true, keySeparator: "\t", lineSeparator: "\n", headersSeparator: ",", nullLiteral: "null"}
	boolProp := func(k string, dst *bool) {
		if v, ok := props[k]; ok {
			*dst = isTrue(v)
		}
	}
	strProp := func(k string, dst *string) {
		if v, ok := props[k]; ok {
			*dst = v
		}
	}
	boolProp("print.timestamp", &f.printTimestamp)
	boolProp("print.key", &f.printKey)
	boolProp("print.offset", &f.printOffset)
	boolProp("print.partition", &f.printPartition)
	boolProp("print.headers", &f.printHeaders)
	boolProp("print.value", &f.printValue)
	strProp("key.separator", &f.keySeparator)
	strProp("line.separator", &f.lineSeparator)
	strProp("headers.separator", &f.headersSeparator)
	strProp("null.literal", &f.nullLiteral)
	return f
}

// write is DefaultMessageFormatter.writeTo.
func (f messageFormat) write(w io.Writer, r *kgo.Record) error {
	var b strings.Builder
	sep := func(column bool) {
		if column {
			b.WriteString(f.keySeparator)
		} else {
			b.WriteString(f.lineSeparator)
		}
	}
	bytesOrNull := func(v []byte) string {
		if v == nil {
			return f.nullLiteral
		}
		return string(v)
	}
	if f.printTimestamp {
		switch r.Attrs.TimestampType() {
		case 0:
			b.WriteString("CreateTime:" + strconv.FormatInt(r.Timestamp.UnixMilli(), 10))
		case 1:
			b.WriteString("LogAppendTime:" + strconv.FormatInt(r.Timestamp.UnixMilli(), 10))
		default:
			b.WriteString("NO_TIMESTAMP")
		}
		sep(f.printOffset || f.printPartition || f.printHeaders || f.printKey || f.printValue)
	}
	if f.printPartition {
		b.WriteString("Partition:" + strconv.Itoa(int(r.Partition)))
		sep(f.printOffset || f.printHeaders || f.printKey || f.printValue)
	}
	if f.printOffset {
		b.WriteString("Offset:" + strconv.FormatInt(r.Offset, 10))
		sep(f.printHeaders || f.printKey || f.printValue)
	}
	if f.printHeaders {
		if len(r.Headers) == 0 {
			b.WriteString("NO_HEADERS")
		}
		for i, h := range r.Headers {
			b.WriteString(h.Key + ":" + bytesOrNull(h.Value))
			if i < len(r.Headers)-1 {
				b.WriteString(f.headersSeparator)
			}
		}
		sep(f.printKey || f.printValue)
	}
	if f.printKey {
		b.WriteString(bytesOrNull(r.Key))
		sep(f.printValue)
	}
	if f.printValue {
		b.WriteString(bytesOrNull(r.Value))
		b.WriteString(f.lineSeparator)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func parseConsumerArgs(args []string, stderr io.Writer) (*consumerOpts, *flag.FlagSet, error) {
	fs := newFlagSet("samsa console-consumer", stderr)
	var topic, whitelist, include, offset, group, bootstrap, consumerConfig, formatter, formatterConfig optString
	var partition, maxMessages, timeoutMs optInt
	var props, consumerProps multiFlag
	o := &consumerOpts{}
	fs.Var(&topic, "topic", "The topic to consume on.")
	fs.Var(&whitelist, "whitelist", "DEPRECATED, use --include instead; ignored if --include specified.")
	fs.Var(&include, "include", "Regular expression specifying list of topics to include for consumption.")
	fs.Var(&partition, "partition", "The partition to consume from. Consumption starts from the end of the partition unless '--offset' is specified.")
	fs.Var(&offset, "offset", "The offset to consume from (a non-negative number), or 'earliest' which means from beginning, or 'latest' which means from end (default: latest)")
	fs.Var(&consumerProps, "consumer-property", "A mechanism to pass user-defined properties in the form key=value to the consumer (repeatable).")
	fs.Var(&consumerConfig, "consumer.config", "Consumer config properties file. Note that --consumer-property takes precedence over this config.")
	fs.Var(&formatter, "formatter", "The name of a class to use for formatting kafka messages for display (only the default is supported).")
	fs.Var(&props, "property", "The properties to initialize the message formatter: print.timestamp, print.key, print.offset, print.partition, print.headers, print.value, key.separator, line.separator, headers.separator, null.literal (repeatable).")
	fs.Var(&formatterConfig, "formatter-config", "Config properties file to initialize the message formatter. Note that --property takes precedence over this config.")
	fs.BoolVar(&o.fromBeginning, "from-beginning", false, "If the consumer does not already have an established offset to consume from, start with the earliest message present in the log rather than the latest message.")
	fs.Var(&maxMessages, "max-messages", "The maximum number of messages to consume before exiting. If not set, consumption is continual.")
	fs.Var(&timeoutMs, "timeout-ms", "If specified, exit if no message is available for consumption for the specified interval.")
	fs.BoolVar(&o.skipOnError, "skip-message-on-error", false, "If there is an error when processing a message, skip it instead of halt.")
	fs.Var(&bootstrap, "bootstrap-server", "REQUIRED: The server(s) to connect to.")
	fs.String("key-deserializer", "", "deserializer for key (accepted; bytes are printed as they are)")
	fs.String("value-deserializer", "", "deserializer for values (accepted; bytes are printed as they are)")
	fs.Bool("enable-systest-events", false, "Log lifecycle events of the consumer (accepted)")
	fs.StringVar(&o.isolationLevel, "isolation-level", "read_uncommitted", "Set to read_committed in order to filter out transactional messages which are not committed. Set to read_uncommitted to read all messages.")
	fs.Var(&group, "group", "The consumer group id of the consumer.")
	if err := parseFlags(fs, args); err != nil {
		return nil, fs, err
	}
	if formatter.set && formatter.v != "kafka.tools.DefaultMessageFormatter" && formatter.v != "org.apache.kafka.tools.consumer.DefaultMessageFormatter" {
		return nil, fs, usageErr("--formatter %s is not supported; only kafka.tools.DefaultMessageFormatter is", formatter.v)
	}
	formatterArgs, err := propsFileThenArgs(formatterConfig, props)
	if err != nil {
		return nil, fs, err
	}
	o.format = newMessageFormat(formatterArgs)
	if o.consumerProps, err = propsFileThenArgs(consumerConfig, consumerProps); err != nil {
		return nil, fs, err
	}

	o.topic = topic.v
	o.include = whitelist.v
	if include.set {
		o.include = include.v
	}
	if topic.set == (include.set || whitelist.set) {
		return nil, fs, usageErr("Exactly one of --include/--topic is required. ")
	}
	if partition.set {
		if !topic.set {
			return nil, fs, usageErr("The topic is required when partition is specified.")
		}
		if o.fromBeginning && offset.set {
			return nil, fs, usageErr("Options from-beginning and offset cannot be specified together.")
		}
		o.partition, o.hasPartition = int32(partition.v), true
	} else if offset.set {
		return nil, fs, usageErr("The partition is required when offset is specified.")
	}
	switch {
	case offset.set:
		switch strings.ToLower(offset.v) {
		case "earliest":
			o.offset = offsetEarliest
		case "latest":
			o.offset = offsetLatest
		default:
			n, err := strconv.ParseInt(offset.v, 10, 64)
			if err != nil || n < 0 {
				return nil, fs, usageErr("The provided offset value '%s' is incorrect. Valid values are 'earliest', 'latest', or a non-negative long.", offset.v)
			}
			o.offset = n
		}
	case o.fromBeginning:
		o.offset = offsetEarliest
	default:
		o.offset = offsetLatest
	}
	if !bootstrap.set {
		return nil, fs, usageErr("Missing required argument \"[bootstrap-server]\"")
	}
	o.bootstrap = bootstrap.v

	// Group ids given in several places must agree.
	groups := map[string]bool{}
	for _, g := range []struct {
		v  string
		ok bool
	}{{group.v, group.set}, {o.consumerProps["group.id"], o.consumerProps["group.id"] != ""}} {
		if g.ok {
			groups[g.v] = true
		}
	}
	if len(groups) > 1 {
		return nil, fs, usageErr("The group ids provided in different places (directly using '--group', via '--consumer-property', or via '--consumer.config') do not match.")
	}
	for g := range groups {
		o.group = g
	}
	if o.group != "" && o.hasPartition {
		return nil, fs, usageErr("Options group and partition cannot be specified together.")
	}
	if v, ok := o.consumerProps["auto.offset.reset"]; ok && o.fromBeginning && v != "earliest" {
		return nil, fs, usageErr("Can't simultaneously specify --from-beginning and 'auto.offset.reset=%s', please remove one option", v)
	}
	o.maxMessages = -1
	if maxMessages.set {
		o.maxMessages = maxMessages.v
	}
	o.timeoutMs = -1
	if timeoutMs.set {
		o.timeoutMs = timeoutMs.v
	}
	return o, fs, nil
}

func startOffset(off int64) kgo.Offset {
	switch off {
	case offsetEarliest:
		return kgo.NewOffset().AtStart()
	case offsetLatest:
		return kgo.NewOffset().AtEnd()
	}
	return kgo.NewOffset().At(off)
}

func consumerClientOpts(o *consumerOpts) []kgo.Opt {
	clientID := "console-consumer"
	if v, ok := o.consumerProps["client.id"]; ok {
		clientID = v
	}
	opts := []kgo.Opt{kgo.SeedBrokers(splitServers(o.bootstrap)...), kgo.ClientID(clientID)}
	opts = append(opts, o.security...)
	if !strings.EqualFold(o.consumerProps["allow.auto.create.topics"], "false") {
		opts = append(opts, kgo.AllowAutoTopicCreation()) // the Java consumer's default
	}
	if o.isolationLevel == "read_committed" || o.consumerProps["isolation.level"] == "read_committed" {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	reset := kgo.NewOffset().AtEnd()
	if o.fromBeginning || o.consumerProps["auto.offset.reset"] == "earliest" {
		reset = kgo.NewOffset().AtStart()
	}
	switch {
	case o.hasPartition:
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.topic: {o.partition: startOffset(o.offset)}}))
	case o.include != "":
		re := strings.TrimSpace(o.include)
		opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics("^(?:"+re+")$"), kgo.ConsumeResetOffset(reset))
	default:
		opts = append(opts, kgo.ConsumeTopics(o.topic), kgo.ConsumeResetOffset(reset))
	}
	if o.group != "" && !o.hasPartition {
		opts = append(opts, kgo.ConsumerGroup(o.group))
		if !isTrue(o.consumerProps["enable.auto.commit"]) && o.consumerProps["enable.auto.commit"] != "" {
			opts = append(opts, kgo.DisableAutoCommit())
		} else {
			// Commit only what was printed, as ConsoleConsumer.resetUnconsumedOffsets ensures.
			opts = append(opts, kgo.AutoCommitMarks())
		}
	}
	return opts
}

// runConsoleConsumer is kafka-console-consumer.sh.
func runConsoleConsumer(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, fs, err := parseConsumerArgs(args, stderr)
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	sec, err := clientSecurityOpts(o.consumerProps)
	if err != nil {
		fmt.Fprintf(stderr, "ERROR Invalid consumer security configuration: %v\n", err)
		return 1
	}
	o.security = sec.opts
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cl, err := kgo.NewClient(consumerClientOpts(o)...)
	if err != nil {
		fmt.Fprintf(stderr, "ERROR Unknown error when running consumer: %v\n", err)
		return 1
	}
	out := bufio.NewWriter(stdout)
	n, err := consume(ctx, cl, o, out, stderr)
	out.Flush()
	cl.Close()
	fmt.Fprintf(stderr, "Processed a total of %d messages\n", n)
	if err != nil {
		return 1
	}
	return 0
}

var errConsumeTimeout = errors.New("org.apache.kafka.common.errors.TimeoutException")

// poller is the part of *kgo.Client that consume uses.
type poller interface {
	PollFetches(ctx context.Context) kgo.Fetches
}

// marker is implemented by *kgo.Client: with a group, printed records are marked for commit.
type marker interface {
	MarkCommitRecords(rs ...*kgo.Record)
}

// consume is ConsoleConsumer.process: print records until max messages, a timeout without
// records, an error, or ctx's end (Ctrl-C). It returns how many it printed.
func consume(ctx context.Context, cl poller, o *consumerOpts, out *bufio.Writer, stderr io.Writer) (int64, error) {
	var n int64
	for o.maxMessages < 0 || n < o.maxMessages {
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if o.timeoutMs >= 0 {
			pollCtx, cancel = context.WithTimeout(ctx, time.Duration(o.timeoutMs)*time.Millisecond)
		}
		fetches := cl.PollFetches(pollCtx)
		timedOut := pollCtx.Err() != nil && ctx.Err() == nil
		cancel()
		if ctx.Err() != nil || fetches.IsClientClosed() {
			return n, nil // WakeupException: shut down quietly
		}
		var fatal error
		fetches.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			// kgo retries retriable errors itself; what reaches us here ends consumption.
			fmt.Fprintf(stderr, "ERROR Error processing message, terminating consumer process: %s-%d: %v\n", topic, p, err)
			fatal = err
		})
		if fatal != nil {
			return n, fatal
		}
		it := fetches.RecordIter()
		got := false
		for !it.Done() && (o.maxMessages < 0 || n < o.maxMessages) {
			r := it.Next()
			got = true
			n++
			if m, ok := cl.(marker); ok {
				m.MarkCommitRecords(r)
			}
			if err := o.format.write(out, r); err != nil {
				if !o.skipOnError {
					return n, err
				}
				fmt.Fprintf(stderr, "ERROR Error processing message, skipping this message: %v\n", err)
			}
		}
		if err := out.Flush(); err != nil {
			fmt.Fprintln(stderr, "Unable to write to standard out, closing consumer.")
			return n, err
		}
		if !got && timedOut {
			fmt.Fprintf(stderr, "ERROR Error processing message, terminating consumer process: %v\n", errConsumeTimeout)
			return n, nil
		}
	}
	return n, nil
}

// loadPropsFile reads a Java properties file (--consumer.config, --producer.config, ...).
func loadPropsFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return config.ParseProperties(string(b))
}
