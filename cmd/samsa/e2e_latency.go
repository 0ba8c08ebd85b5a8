package main

// e2e-latency mirrors Kafka 3.7's kafka-e2e-latency.sh (org.apache.kafka.tools.EndToEndLatency):
// positional broker_list topic num_messages producer_acks message_size_bytes [properties_file].
// For each message it sends one record synchronously and polls until it is read back by a
// consumer assigned to every partition of the topic from its end, timing the round trip;
// it prints "i<TAB>ms" every 1000 messages, then the average and the 50th/99th/99.9th
// percentiles, and commits the consumer's positions for a group test-group-<ms>. The topic is
// created with one partition and replication factor 1 when it does not exist. The payloads
// are Kafka's: message i is one letter repeated, drawn from java.util.Random(0).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-kafka/samsa/internal/javafmt"
)

const e2ePollTimeout = 60 * time.Second // EndToEndLatency.POLL_TIMEOUT_MS

func init() {
	commands["e2e-latency"] = command{runE2ELatency, "measure produce-to-consume latency one message at a time (kafka-e2e-latency.sh)"}
}

// javaRandom is java.util.Random's linear congruential generator, so the payloads are the
// ones Kafka's tool sends.
type javaRandom struct{ seed int64 }

func newJavaRandom(seed int64) *javaRandom {
	return &javaRandom{(seed ^ 0x5DEECE66D) & (1<<48 - 1)}
}

func (r *javaRandom) next(bits uint) int32 {
	r.seed = (r.seed*0x5DEECE66D + 0xB) & (1<<48 - 1)
	return int32(r.seed >> (48 - bits))
}

// nextInt is Random.nextInt(bound) for a positive bound.
func (r *javaRandom) nextInt(bound int32) int32 {
	if bound&(-bound) == bound {
		return int32((int64(bound) * int64(r.next(31))) >> 31)
	}
	for {
		bits := r.next(31)
		val := bits % bound
		if bits-val+(bound-1) >= 0 { // no int overflow: the draw is unbiased
			return val
		}
	}
}

type e2eOpts struct {
	brokers, topic string
	numMessages    int
	acks           string
	messageSize    int
	propsFile      string
}

func parseE2EArgs(args []string) (*e2eOpts, error) {
	if len(args) != 5 && len(args) != 6 {
		return nil, errors.New("USAGE: java org.apache.kafka.tools.EndToEndLatency broker_list topic num_messages producer_acks message_size_bytes [optional] properties_file")
	}
	o := &e2eOpts{brokers: args[0], topic: args[1], acks: args[3]}
	var err error
	if o.numMessages, err = javaParseInt(args[2]); err != nil {
		return nil, err
	}
	if o.messageSize, err = javaParseInt(args[4]); err != nil {
		return nil, err
	}
	if len(args) == 6 && strings.TrimSpace(args[5]) != "" {
		o.propsFile = args[5]
	}
	if o.acks != "1" && o.acks != "all" {
		return nil, errors.New("Latency testing requires synchronous acknowledgement. Please use 1 or all")
	}
	if o.numMessages <= 0 {
		// Java would index an empty latency array; say so instead.
		return nil, fmt.Errorf("Index 0 out of bounds for length %d", max(o.numMessages, 0))
	}
	if o.messageSize < 0 {
		return nil, fmt.Errorf("%d", o.messageSize) // NegativeArraySizeException's message
	}
	return o, nil
}

// javaParseInt is Integer.parseInt with its NumberFormatException message.
func javaParseInt(s string) (int, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("For input string: \"%s\"", s)
	}
	return int(n), nil
}

func runE2ELatency(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, err := parseE2EArgs(args)
	if err != nil {
		fmt.Fprintln(stderr, err.Error())
		return 1
	}
	if err := e2eLatency(context.Background(), o, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, err.Error())
		return 1
	}
	return 0
}

func e2eLatency(ctx context.Context, o *e2eOpts, stdout, stderr io.Writer) error {
	props := map[string]string{}
	if o.propsFile != "" {
		var err error
		if props, err = loadPropsFile(o.propsFile); err != nil {
			return err
		}
	}
	props["bootstrap.servers"] = o.brokers
	sec, err := clientSecurityOpts(props)
	if err != nil {
		return err
	}
	producerProps := map[string]string{}
	for k, v := range props {
		producerProps[k] = v
	}
	producerProps["linger.ms"] = "0"
	producerProps["acks"] = o.acks
	pOpts, _, err := perfProducerOpts(o.topic, producerProps)
	if err != nil {
		return err
	}
	if _, ok := props["client.id"]; !ok {
		pOpts = append(pOpts, kgo.ClientID("producer-1"))
	}
	producer, err := kgo.NewClient(pOpts...)
	if err != nil {
		return err
	}
	defer producer.Close()
	admCl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(splitServers(o.brokers)...), kgo.ClientID("adminclient-1")}, sec.opts...)...)
	if err != nil {
		return err
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)

	topics, err := adm.ListTopics(ctx, o.topic)
	if err != nil {
		return err
	}
	if !topics.Has(o.topic) {
		fmt.Fprintf(stdout, "Topic \"%s\" does not exist. Will create topic with %d partition(s) and replication factor = %d\n", o.topic, 1, 1)
		resp, err := adm.CreateTopic(ctx, 1, 1, nil, o.topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			fmt.Fprintf(stdout, "Creation of topic %s failed\n", o.topic)
			return err
		}
	}
	// setupConsumer: assign every partition at its current end, resolved before sending.
	var ends kadm.ListedOffsets
	for {
		if ends, err = adm.ListEndOffsets(ctx, o.topic); err == nil {
			err = ends.Error()
		}
		if err == nil || !kgoRetriable(err) || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond) // a new topic's leaders are still being elected
	}
	if err != nil {
		return err
	}
	position := map[int32]int64{}
	assign := map[int32]kgo.Offset{}
	ends.Each(func(lo kadm.ListedOffset) {
		position[lo.Partition] = lo.Offset
		assign[lo.Partition] = kgo.NewOffset().At(lo.Offset)
	})
	group := "test-group-" + strconv.FormatInt(time.Now().UnixMilli(), 10)
	cOpts := append([]kgo.Opt{
		kgo.SeedBrokers(splitServers(o.brokers)...),
		kgo.ClientID("consumer-" + group + "-1"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.topic: assign}),
		kgo.FetchMaxWait(10 * time.Millisecond), // Kafka sets fetch.max.wait.ms=0; franz-go's floor is 10 ms
	}, sec.opts...)
	if props["isolation.level"] == "read_committed" {
		cOpts = append(cOpts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	consumer, err := kgo.NewClient(cOpts...)
	if err != nil {
		return err
	}
	defer consumer.Close()
	commit := func() {
		offs := kadm.Offsets{}
		for p, at := range position {
			offs.Add(kadm.Offset{Topic: o.topic, Partition: p, At: at, LeaderEpoch: -1})
		}
		if _, err := adm.CommitOffsets(ctx, group, offs); err != nil {
			fmt.Fprintf(stderr, "commit of %s failed: %v\n", group, err)
		}
	}

	random := newJavaRandom(0)
	latencies := make([]int64, o.numMessages)
	var totalTime float64
	message := make([]byte, o.messageSize)
	for i := 0; i < o.numMessages; i++ {
		b := byte(random.nextInt(26) + 65)
		for j := range message {
			message[j] = b
		}
		begin := time.Now()
		value := make([]byte, len(message)) // never nil: Kafka sends an empty value, not a null one
		copy(value, message)
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: o.topic, Value: value}).FirstErr(); err != nil {
			return err
		}
		pollCtx, cancel := context.WithTimeout(ctx, e2ePollTimeout)
		fetches := consumer.PollFetches(pollCtx)
		cancel()
		elapsed := time.Since(begin)
		var recs []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		for _, r := range recs {
			position[r.Partition] = r.Offset + 1
		}
		// validate
		switch {
		case len(recs) == 0:
			if err := fetches.Err0(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			commit()
			return fmt.Errorf("poll() timed out before finding a result (timeout:[%d])", e2ePollTimeout.Milliseconds())
		case string(recs[0].Value) != string(message):
			commit()
			return fmt.Errorf("The message read [%s] did not match the message sent [%s]", recs[0].Value, message)
		case len(recs) != 1:
			commit()
			return fmt.Errorf("Only one result was expected during this test. We found [%d]", len(recs))
		}
		if i%1000 == 0 {
			fmt.Fprintf(stdout, "%d\t%s\n", i, javafmt.Double(float64(elapsed.Nanoseconds())/1000.0/1000.0))
		}
		totalTime += float64(elapsed.Nanoseconds())
		latencies[i] = elapsed.Nanoseconds() / 1000 / 1000
	}
	fmt.Fprintf(stdout, "Avg latency: %.4f ms\n", totalTime/float64(o.numMessages)/1000.0/1000.0)
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	n := float64(len(latencies))
	fmt.Fprintf(stdout, "Percentiles: 50th = %d, 99th = %d, 99.9th = %d\n",
		latencies[int(n*0.5)], latencies[int(n*0.99)], latencies[int(n*0.999)])
	commit()
	return nil
}
