package main

// verifiable-producer mirrors Kafka 3.7's kafka-verifiable-producer.sh
// (org.apache.kafka.tools.VerifiableProducer): it sends increasing integers as string values
// (optionally "<prefix>.<n>", with keys cycling 0..n-1) and prints one JSON object per line
// for every event, in the field order Jackson writes them, so Kafka's system tests
// (tests/kafkatest/services/verifiable_producer.py) can tell which values were acknowledged:
// startup_complete, producer_send_success, producer_send_error, shutdown_complete and a
// closing tool_data summary. As in Kafka, the producer does not retry (retries=0, which also
// turns idempotence off unless --producer.config sets it) and runs until --max-messages are
// sent or it is signalled; either way it flushes what it sent before shutdown_complete.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/javafmt"
)

const verifiableProducerUsage = "usage: verifiable-producer [-h] --topic TOPIC (--bootstrap-server HOST1:PORT1[,HOST2:PORT2[...]] | --broker-list HOST1:PORT1[,HOST2:PORT2[...]]) [--max-messages MAX-MESSAGES] [--throughput THROUGHPUT] [--acks ACKS] [--producer.config CONFIG_FILE] [--message-create-time CREATETIME] [--value-prefix VALUE-PREFIX] [--repeating-keys REPEATING-KEYS]"

func init() {
	commands["verifiable-producer"] = command{runVerifiableProducer, "produce increasing integers and print JSON events for each send (kafka-verifiable-producer.sh)"}
}

type verifiableProducerOpts struct {
	topic         string
	bootstrap     string
	maxMessages   int64
	throughput    int64
	acks          int64
	configFile    optString
	createTime    int64 // -1: let the producer stamp records
	valuePrefix   optInt
	repeatingKeys optInt
}

// argparseError is an argparse4j failure: the tool prints its usage line and
// "<prog>: error: <message>" and exits 1 (ArgumentParser.handleError).
type argparseError struct{ msg string }

func (e *argparseError) Error() string { return e.msg }

func argparseErrorf(format string, a ...any) error {
	return &argparseError{fmt.Sprintf(format, a...)}
}

// badFlagValueRE matches the flag package's error for a value its flag.Value refused.
var badFlagValueRE = regexp.MustCompile(`^invalid value "(.*)" for flag -([^:]+): `)

// parseArgparse parses args with fs, turning the flag package's errors into argparse4j's
// wording where the two differ.
func parseArgparse(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
			return argparseErrorf("unrecognized arguments: '%s'", strings.TrimLeft(name, "-"))
		}
		if m := badFlagValueRE.FindStringSubmatch(msg); m != nil {
			typ := "Integer"
			if m[2] == "message-create-time" {
				typ = "Long"
			}
			return argparseErrorf("argument --%s: could not convert '%s' to %s (For input string: \"%s\")", m[2], m[1], typ, m[1])
		}
		return argparseErrorf("%s", msg)
	}
	if fs.NArg() > 0 {
		return argparseErrorf("unrecognized arguments: '%s'", strings.Join(fs.Args(), " "))
	}
	return nil
}

// reportArgparse prints err as argparse4j does and returns the exit code: 0 for -h, else 1.
func reportArgparse(stderr io.Writer, prog, usage string, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stderr, usage)
		return 0
	}
	fmt.Fprintln(stderr, usage)
	fmt.Fprintf(stderr, "%s: error: %s\n", prog, err.Error())
	return 1
}

func parseVerifiableProducerArgs(args []string) (*verifiableProducerOpts, error) {
	o := &verifiableProducerOpts{}
	fs := flag.NewFlagSet("verifiable-producer", flag.ContinueOnError)
	var topic, bootstrap, brokerList optString
	maxMessages, throughput, acks, createTime := optInt{v: -1}, optInt{v: -1}, optInt{v: -1}, optInt{v: -1}
	fs.Var(&topic, "topic", "Produce messages to this topic.")
	fs.Var(&bootstrap, "bootstrap-server", "REQUIRED: The server(s) to connect to.")
	fs.Var(&brokerList, "broker-list", "DEPRECATED, use --bootstrap-server instead.")
	fs.Var(&maxMessages, "max-messages", "Produce this many messages. If -1, produce messages until the process is killed externally.")
	fs.Var(&throughput, "throughput", "If set >= 0, throttle maximum message throughput to *approximately* THROUGHPUT messages/sec.")
	fs.Var(&acks, "acks", "Acks required on each produced message.")
	fs.Var(&o.configFile, "producer.config", "Producer config properties file.")
	fs.Var(&createTime, "message-create-time", "Send messages with creation time starting at the arguments value, in milliseconds since epoch")
	fs.Var(&o.valuePrefix, "value-prefix", "If specified, each produced value will have this prefix with a dot separator")
	fs.Var(&o.repeatingKeys, "repeating-keys", "If specified, each produced record will have a key starting at 0 increment by 1 up to the number specified (exclusive), then the key is set to 0 again")
	if err := parseArgparse(fs, args); err != nil {
		return nil, err
	}
	switch {
	case bootstrap.set && brokerList.set:
		return nil, argparseErrorf("argument --broker-list: not allowed with argument --bootstrap-server")
	case !bootstrap.set && !brokerList.set:
		return nil, argparseErrorf("one of the arguments --bootstrap-server --broker-list is required")
	case !topic.set:
		return nil, argparseErrorf("argument --topic is required")
	case acks.v != 0 && acks.v != 1 && acks.v != -1:
		return nil, argparseErrorf("argument --acks: invalid choice: '%d' (choose from {0,1,-1})", acks.v)
	case o.repeatingKeys.set && o.repeatingKeys.v <= 0:
		// Kafka would divide its key counter by zero or never wrap; refuse instead.
		return nil, argparseErrorf("argument --repeating-keys: must be positive")
	}
	o.topic, o.bootstrap = topic.v, bootstrap.v
	if !bootstrap.set {
		o.bootstrap = brokerList.v
	}
	o.maxMessages, o.throughput, o.acks, o.createTime = maxMessages.v, throughput.v, acks.v, createTime.v
	return o, nil
}

// verifiableProducerProps builds the producer's properties as createFromArgs does: the
// bootstrap servers, acks and retries=0, then the --producer.config file on top.
func verifiableProducerProps(o *verifiableProducerOpts) (map[string]string, error) {
	props := map[string]string{
		"bootstrap.servers": o.bootstrap,
		"acks":              strconv.FormatInt(o.acks, 10),
		"retries":           "0",
		"key.serializer":    "org.apache.kafka.common.serialization.StringSerializer",
		"value.serializer":  "org.apache.kafka.common.serialization.StringSerializer",
	}
	if o.configFile.set {
		file, err := loadPropsFile(o.configFile.v)
		if err != nil {
			return nil, err
		}
		for k, v := range file {
			props[k] = v
		}
	}
	// ProducerConfig: with retries=0 and enable.idempotence not set explicitly, the Java
	// producer turns idempotence off; set explicitly with retries=0 it refuses to start.
	if v, set := props["enable.idempotence"]; !set {
		if props["retries"] == "0" {
			props["enable.idempotence"] = "false"
		}
	} else if isTrue(v) && strings.TrimSpace(props["retries"]) == "0" {
		return nil, errors.New("Must set retries to non-zero when using the idempotent producer.")
	}
	return props, nil
}

// Events, with fields in the order Jackson writes VerifiableProducer's event classes.
type vpEvent struct {
	Timestamp int64  `json:"timestamp"`
	Name      string `json:"name"`
}

type vpSendSuccess struct {
	Timestamp int64   `json:"timestamp"`
	Name      string  `json:"name"`
	Key       *string `json:"key"`
	Value     string  `json:"value"`
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
}

type vpSendError struct {
	Timestamp int64   `json:"timestamp"`
	Name      string  `json:"name"`
	Topic     string  `json:"topic"`
	Key       *string `json:"key"`
	Value     string  `json:"value"`
	Exception string  `json:"exception"`
	Message   string  `json:"message"`
}

type vpToolData struct {
	Timestamp        int64           `json:"timestamp"`
	Name             string          `json:"name"`
	Sent             int64           `json:"sent"`
	Acked            int64           `json:"acked"`
	TargetThroughput int64           `json:"target_throughput"`
	AvgThroughput    json.RawMessage `json:"avg_throughput"`
}

// jsonLines prints one JSON object per line; safe for concurrent use, as Kafka's tools
// synchronize on System.out.
type jsonLines struct {
	mu sync.Mutex
	w  io.Writer
}

func (j *jsonLines) print(v any) {
	b, err := json.Marshal(v)
	j.mu.Lock()
	defer j.mu.Unlock()
	if err != nil {
		fmt.Fprintln(j.w, "Bad data can't be written as json: "+err.Error())
		return
	}
	j.w.Write(append(b, '\n'))
}

// javaClientException names the Java exception a send failure would surface as, for the
// "exception" field: "class " + the exception's class name, as Exception.getClass().toString().
func javaClientException(err error) string {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		return "class org.apache.kafka.common.errors." + javaExceptionName(ke)
	case errors.Is(err, kgo.ErrRecordTimeout), errors.Is(err, context.DeadlineExceeded):
		return "class org.apache.kafka.common.errors.TimeoutException"
	case errors.Is(err, kgo.ErrClientClosed):
		return "class java.lang.IllegalStateException"
	case errors.Is(err, kgo.ErrMaxBuffered):
		return "class org.apache.kafka.common.errors.BufferExhaustedException"
	}
	return "class org.apache.kafka.common.KafkaException"
}

func runVerifiableProducer(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, verifiableProducerUsage)
		return 0 // Kafka prints its help and exits 0
	}
	o, err := parseVerifiableProducerArgs(args)
	if err != nil {
		return reportArgparse(stderr, "verifiable-producer", verifiableProducerUsage, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return verifiableProduce(ctx, o, stdout, stderr)
}

// verifiableProduce runs the producer until o.maxMessages are sent or ctx ends (Kafka's
// shutdown hook), then flushes, prints shutdown_complete and tool_data.
func verifiableProduce(ctx context.Context, o *verifiableProducerOpts, stdout, stderr io.Writer) int {
	props, err := verifiableProducerProps(o)
	if err != nil {
		fmt.Fprintln(stderr, "verifiable-producer: error: "+err.Error())
		return 1
	}
	opts, unknown, err := perfProducerOpts(o.topic, props)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, k := range unknown {
		fmt.Fprintf(stderr, "WARN The configuration '%s' was supplied but isn't a known config.\n", k)
	}
	if _, ok := props["client.id"]; !ok {
		opts = append(opts, kgo.ClientID("producer-1"))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	out := &jsonLines{w: stdout}
	now := func() int64 { return time.Now().UnixMilli() }
	start := time.Now()
	var mu sync.Mutex
	var sent, acked int64

	out.print(vpEvent{now(), "startup_complete"})
	// The Java producer's first send waits up to max.block.ms for the topic's metadata,
	// auto-creating it; franz-go would count those waits against retries=0 instead.
	waitTopicLeaders(ctx, cl, o.topic, propMillis(props, "max.block.ms", 60000))
	maxMessages := o.maxMessages
	if maxMessages < 0 {
		maxMessages = 1<<63 - 1
	}
	throttler := newThroughputThrottler(float64(o.throughput), start)
	keyCounter := int64(0)
	createTime := o.createTime
	for i := int64(0); i < maxMessages && ctx.Err() == nil; i++ {
		sendStart := time.Now()
		var key *string
		if o.repeatingKeys.set {
			k := strconv.FormatInt(keyCounter, 10)
			key = &k
			if keyCounter++; keyCounter == o.repeatingKeys.v {
				keyCounter = 0
			}
		}
		value := strconv.FormatInt(i, 10)
		if o.valuePrefix.set {
			value = strconv.FormatInt(o.valuePrefix.v, 10) + "." + value
		}
		r := &kgo.Record{Topic: o.topic, Value: []byte(value)}
		if key != nil {
			r.Key = []byte(*key)
		}
		if createTime >= 0 {
			r.Timestamp = time.UnixMilli(createTime)
			// Kafka adds the time since start to the running create time after each send.
			createTime += time.Now().UnixMilli() - start.UnixMilli()
		}
		mu.Lock()
		sent++
		mu.Unlock()
		// The record is not tied to ctx: records accepted before a stop are flushed, as
		// KafkaProducer.close() does.
		cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
			if err != nil {
				out.print(vpSendError{now(), "producer_send_error", o.topic, key, value, javaClientException(err), err.Error()})
				return
			}
			mu.Lock()
			acked++
			mu.Unlock()
			out.print(vpSendSuccess{now(), "producer_send_success", key, value, r.Topic, r.Partition, r.Offset})
		})
		if throttler.shouldThrottle(i, sendStart) {
			if o.throughput == 0 {
				<-ctx.Done() // Kafka's throttler waits until woken, i.e. for shutdown
				break
			}
			throttler.throttle()
		}
	}
	if err := cl.Flush(context.Background()); err != nil {
		fmt.Fprintln(stderr, "verifiable-producer: flush: "+err.Error())
	}
	cl.Close()
	out.print(vpEvent{now(), "shutdown_complete"})
	elapsed := time.Now().UnixMilli() - start.UnixMilli()
	mu.Lock()
	s, a := sent, acked
	mu.Unlock()
	avg := 1000 * (float64(a) / float64(elapsed))
	avgJSON := javafmt.Double(avg)
	if math.IsNaN(avg) || math.IsInf(avg, 0) {
		avgJSON = strconv.Quote(avgJSON) // Jackson writes non-finite doubles as strings
	}
	out.print(vpToolData{now(), "tool_data", s, a, o.throughput, json.RawMessage(avgJSON)})
	return 0
}

// propMillis reads a duration property in ms, or def when it is unset or not a number.
func propMillis(props map[string]string, key string, def int64) time.Duration {
	if n, err := strconv.ParseInt(strings.TrimSpace(props[key]), 10, 64); err == nil && n >= 0 {
		return time.Duration(n) * time.Millisecond
	}
	return time.Duration(def) * time.Millisecond
}

// waitTopicLeaders asks for topic's metadata, allowing auto-creation, until every partition
// has a leader, ctx ends or timeout passes (KafkaProducer.waitOnMetadata).
func waitTopicLeaders(ctx context.Context, cl *kgo.Client, topic string, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		req.AllowAutoTopicCreation = true
		if resp, err := req.RequestWith(ctx, cl); err == nil && len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0 {
			ready := len(resp.Topics[0].Partitions) > 0
			for _, p := range resp.Topics[0].Partitions {
				ready = ready && p.Leader >= 0
			}
			if ready {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond): // the Java client's retry.backoff.ms
		}
	}
}
