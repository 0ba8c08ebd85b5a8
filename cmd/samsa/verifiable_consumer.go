package main

// verifiable-consumer mirrors Kafka 3.7's kafka-verifiable-consumer.sh
// (org.apache.kafka.tools.VerifiableConsumer): a group member subscribed to one topic that
// prints its events as JSON lines, in the field order Jackson writes them, as Kafka's system
// tests (tests/kafkatest/services/verifiable_consumer.py) parse them: startup_complete,
// partitions_revoked, partitions_assigned, records_consumed (one per poll, with a summary per
// partition), record_data (--verbose), offsets_committed (after each poll's synchronous commit,
// unless --enable-autocommit) and shutdown_complete.
//
// Rebalance callbacks run between polls (kgo.BlockRebalanceOnPoll), as the Java consumer runs
// its listener inside poll(): a records_consumed event never follows the revocation of its
// partitions. Like the Java eager protocol, the first join reports an empty revocation before
// its assignment.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const verifiableConsumerUsage = "usage: verifiable-consumer [-h] (--bootstrap-server HOST1:PORT1[,HOST2:PORT2[...]] | --broker-list HOST1:PORT1[,HOST2:PORT2[...]]) --topic TOPIC --group-id GROUP_ID [--group-instance-id GROUP_INSTANCE_ID] [--max-messages MAX-MESSAGES] [--session-timeout TIMEOUT_MS] [--verbose] [--enable-autocommit] [--reset-policy RESETPOLICY] [--assignment-strategy ASSIGNMENTSTRATEGY] [--consumer.config CONFIG_FILE]"

func init() {
	commands["verifiable-consumer"] = command{runVerifiableConsumer, "consume a topic in a group and print JSON events (kafka-verifiable-consumer.sh)"}
}

type verifiableConsumerOpts struct {
	bootstrap, topic, group string
	instanceID              optString
	maxMessages             int64
	sessionTimeout          int64
	verbose, autoCommit     bool
	resetPolicy             string
	assignmentStrategy      string
	configFile              optString
}

func parseVerifiableConsumerArgs(args []string) (*verifiableConsumerOpts, error) {
	o := &verifiableConsumerOpts{}
	fs := flag.NewFlagSet("verifiable-consumer", flag.ContinueOnError)
	var bootstrap, brokerList, topic, group optString
	maxMessages, sessionTimeout := optInt{v: -1}, optInt{v: 30000}
	resetPolicy := optString{v: "earliest"}
	strategy := optString{v: "org.apache.kafka.clients.consumer.RangeAssignor"}
	fs.Var(&bootstrap, "bootstrap-server", "The server(s) to connect to.")
	fs.Var(&brokerList, "broker-list", "DEPRECATED, use --bootstrap-server instead.")
	fs.Var(&topic, "topic", "Consumes messages from this topic.")
	fs.Var(&group, "group-id", "The groupId shared among members of the consumer group")
	fs.Var(&o.instanceID, "group-instance-id", "A unique identifier of the consumer instance")
	fs.Var(&maxMessages, "max-messages", "Consume this many messages. If -1 (the default), the consumer will consume until the process is killed externally")
	fs.Var(&sessionTimeout, "session-timeout", "Set the consumer's session timeout")
	fs.BoolVar(&o.verbose, "verbose", false, "Enable to log individual consumed records")
	fs.BoolVar(&o.autoCommit, "enable-autocommit", false, "Enable offset auto-commit on consumer")
	fs.Var(&resetPolicy, "reset-policy", "Set reset policy (must be either 'earliest', 'latest', or 'none'")
	fs.Var(&strategy, "assignment-strategy", "Set assignment strategy (e.g. org.apache.kafka.clients.consumer.RoundRobinAssignor)")
	fs.Var(&o.configFile, "consumer.config", "Consumer config properties file (config options shared with command line parameters will be overridden).")
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
	case !group.set:
		return nil, argparseErrorf("argument --group-id is required")
	}
	o.bootstrap, o.topic, o.group = bootstrap.v, topic.v, group.v
	if !bootstrap.set {
		o.bootstrap = brokerList.v
	}
	o.maxMessages, o.sessionTimeout, o.resetPolicy, o.assignmentStrategy = maxMessages.v, sessionTimeout.v, resetPolicy.v, strategy.v
	return o, nil
}

// kgoBalancers maps partition.assignment.strategy class names to franz-go's balancers.
func kgoBalancers(classes string) ([]kgo.GroupBalancer, bool, error) {
	var out []kgo.GroupBalancer
	// ConsumerCoordinator picks COOPERATIVE only when every assignor supports it.
	cooperative := true
	for _, c := range strings.Split(classes, ",") {
		switch strings.TrimSpace(c) {
		case "org.apache.kafka.clients.consumer.RangeAssignor", "range":
			out, cooperative = append(out, kgo.RangeBalancer()), false
		case "org.apache.kafka.clients.consumer.RoundRobinAssignor", "roundrobin":
			out, cooperative = append(out, kgo.RoundRobinBalancer()), false
		case "org.apache.kafka.clients.consumer.StickyAssignor", "sticky":
			out, cooperative = append(out, kgo.StickyBalancer()), false
		case "org.apache.kafka.clients.consumer.CooperativeStickyAssignor", "cooperative-sticky":
			out = append(out, kgo.CooperativeStickyBalancer())
		case "":
		default:
			return nil, false, fmt.Errorf("Invalid value %s for configuration partition.assignment.strategy: Class %s cannot be found", classes, strings.TrimSpace(c))
		}
	}
	if len(out) == 0 {
		return nil, false, fmt.Errorf("Invalid value %s for configuration partition.assignment.strategy: no assignor", classes)
	}
	return out, cooperative, nil
}

// verifiableConsumerProps lays the tool's settings over the --consumer.config file, as
// createFromArgs does.
func verifiableConsumerProps(o *verifiableConsumerOpts) (map[string]string, error) {
	props := map[string]string{}
	if o.configFile.set {
		var err error
		if props, err = loadPropsFile(o.configFile.v); err != nil {
			return nil, err
		}
	}
	props["group.id"] = o.group
	if o.instanceID.set {
		props["group.instance.id"] = o.instanceID.v
	}
	props["bootstrap.servers"] = o.bootstrap
	props["enable.auto.commit"] = strconv.FormatBool(o.autoCommit)
	props["auto.offset.reset"] = o.resetPolicy
	props["session.timeout.ms"] = strconv.FormatInt(o.sessionTimeout, 10)
	props["partition.assignment.strategy"] = o.assignmentStrategy
	return props, nil
}

// verifiableConsumerClientOpts maps the Java consumer properties to kgo options; unknown keys
// are returned for a warning.
func verifiableConsumerClientOpts(props map[string]string) (opts []kgo.Opt, cooperative bool, unknown []string, err error) {
	sec, err := clientSecurityOpts(props)
	if err != nil {
		return nil, false, nil, err
	}
	opts = append(opts, sec.opts...)
	balancers, cooperative, err := kgoBalancers(props["partition.assignment.strategy"])
	if err != nil {
		return nil, false, nil, err
	}
	opts = append(opts, kgo.Balancers(balancers...))
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := strings.TrimSpace(props[k])
		if sec.used[k] {
			continue
		}
		ms := func() (time.Duration, error) {
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("Invalid value %s for configuration %s: Not a number of type INT", v, k)
			}
			return time.Duration(n) * time.Millisecond, nil
		}
		n32 := func() (int32, error) {
			d, err := ms()
			return int32(d / time.Millisecond), err
		}
		var err error
		switch k {
		case "bootstrap.servers":
			opts = append(opts, kgo.SeedBrokers(splitServers(v)...))
		case "group.id":
			opts = append(opts, kgo.ConsumerGroup(v))
		case "group.instance.id":
			opts = append(opts, kgo.InstanceID(v))
		case "client.id":
			opts = append(opts, kgo.ClientID(v))
		case "client.rack":
			opts = append(opts, kgo.Rack(v))
		case "enable.auto.commit":
			if !isTrue(v) {
				opts = append(opts, kgo.DisableAutoCommit())
			}
		case "auto.offset.reset":
			switch v {
			case "earliest":
				opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			case "latest":
				opts = append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
			case "none":
				opts = append(opts, kgo.ConsumeResetOffset(kgo.NoResetOffset()))
			default:
				return nil, false, nil, fmt.Errorf("Invalid value %s for configuration auto.offset.reset: String must be one of: latest, earliest, none", v)
			}
		case "isolation.level":
			if v == "read_committed" {
				opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
			}
		case "allow.auto.create.topics":
			if !strings.EqualFold(v, "false") {
				opts = append(opts, kgo.AllowAutoTopicCreation())
			}
		case "session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms", "auto.commit.interval.ms", "fetch.max.wait.ms":
			var d time.Duration
			if d, err = ms(); err == nil {
				opts = append(opts, map[string]func(time.Duration) kgo.Opt{
					"session.timeout.ms":      func(d time.Duration) kgo.Opt { return kgo.SessionTimeout(d) },
					"heartbeat.interval.ms":   func(d time.Duration) kgo.Opt { return kgo.HeartbeatInterval(d) },
					"max.poll.interval.ms":    func(d time.Duration) kgo.Opt { return kgo.RebalanceTimeout(d) },
					"auto.commit.interval.ms": func(d time.Duration) kgo.Opt { return kgo.AutoCommitInterval(d) },
					"fetch.max.wait.ms":       func(d time.Duration) kgo.Opt { return kgo.FetchMaxWait(max(d, 10*time.Millisecond)) }, // franz-go's floor
				}[k](d))
			}
		case "fetch.min.bytes", "fetch.max.bytes", "max.partition.fetch.bytes":
			var n int32
			if n, err = n32(); err == nil {
				opts = append(opts, map[string]func(int32) kgo.Opt{
					"fetch.min.bytes":           func(n int32) kgo.Opt { return kgo.FetchMinBytes(n) },
					"fetch.max.bytes":           func(n int32) kgo.Opt { return kgo.FetchMaxBytes(n) },
					"max.partition.fetch.bytes": func(n int32) kgo.Opt { return kgo.FetchMaxPartitionBytes(n) },
				}[k](n))
			}
		case "max.poll.records", "partition.assignment.strategy", "key.deserializer", "value.deserializer",
			"receive.buffer.bytes", "send.buffer.bytes":
			// max.poll.records: franz-go returns what one poll has buffered; the summaries stay per poll.
		default:
			unknown = append(unknown, k)
		}
		if err != nil {
			return nil, false, nil, err
		}
	}
	if _, ok := props["client.id"]; !ok {
		opts = append(opts, kgo.ClientID("consumer-"+props["group.id"]+"-1")) // the Java consumer's default
	}
	if _, ok := props["allow.auto.create.topics"]; !ok {
		opts = append(opts, kgo.AllowAutoTopicCreation())
	}
	return opts, cooperative, unknown, nil
}

type vcPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

type vcPartitionsEvent struct {
	Timestamp  int64         `json:"timestamp"`
	Name       string        `json:"name"`
	Partitions []vcPartition `json:"partitions"`
}

type vcSummary struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Count     int64  `json:"count"`
	MinOffset int64  `json:"minOffset"`
	MaxOffset int64  `json:"maxOffset"`
}

type vcRecordsConsumed struct {
	Timestamp  int64       `json:"timestamp"`
	Name       string      `json:"name"`
	Count      int64       `json:"count"`
	Partitions []vcSummary `json:"partitions"`
}

type vcRecordData struct {
	Timestamp int64   `json:"timestamp"`
	Name      string  `json:"name"`
	Key       *string `json:"key"`
	Value     *string `json:"value"`
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
}

type vcCommit struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

type vcOffsetsCommitted struct {
	Timestamp int64      `json:"timestamp"`
	Name      string     `json:"name"`
	Offsets   []vcCommit `json:"offsets"`
	Error     *string    `json:"error,omitempty"`
	Success   bool       `json:"success"`
}

// sortedPartitions lists a callback's partitions in TopicPartitionComparator order.
func sortedPartitions(m map[string][]int32) []vcPartition {
	out := []vcPartition{}
	for t, ps := range m {
		for _, p := range ps {
			out = append(out, vcPartition{t, p})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

func strOrNull(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

func runVerifiableConsumer(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, verifiableConsumerUsage)
		return 0
	}
	o, err := parseVerifiableConsumerArgs(args)
	if err != nil {
		return reportArgparse(stderr, "verifiable-consumer", verifiableConsumerUsage, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return verifiableConsume(ctx, o, stdout, stderr)
}

// verifiableConsume runs the consumer until o.maxMessages are consumed or ctx ends, then
// closes it (leaving the group) and prints shutdown_complete.
func verifiableConsume(ctx context.Context, o *verifiableConsumerOpts, stdout, stderr io.Writer) int {
	props, err := verifiableConsumerProps(o)
	if err != nil {
		fmt.Fprintln(stderr, "verifiable-consumer: error: "+err.Error())
		return 1
	}
	opts, cooperative, unknown, err := verifiableConsumerClientOpts(props)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, k := range unknown {
		fmt.Fprintf(stderr, "WARN The configuration '%s' was supplied but isn't a known config.\n", k)
	}
	out := &jsonLines{w: stdout}
	now := func() int64 { return time.Now().UnixMilli() }
	var mu sync.Mutex
	revokedSinceAssign := false
	closing := false
	var cl *kgo.Client
	opts = append(opts,
		kgo.ConsumeTopics(o.topic),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsRevoked(func(ctx context.Context, c *kgo.Client, m map[string][]int32) {
			if o.autoCommit {
				// kgo's default revoke callback commits; a custom one must do it itself,
				// as the Java consumer commits before revoking with auto-commit on.
				_ = c.CommitUncommittedOffsets(ctx)
			}
			mu.Lock()
			defer mu.Unlock()
			if closing && len(m) == 0 {
				return // Java's onLeavePrepare revokes only partitions it owns
			}
			if cooperative && len(m) == 0 {
				return // the cooperative protocol revokes only when something is taken away
			}
			revokedSinceAssign = true
			out.print(vcPartitionsEvent{now(), "partitions_revoked", sortedPartitions(m)})
		}),
	)
	opts = append(opts, kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
		mu.Lock()
		defer mu.Unlock()
		if !cooperative && !revokedSinceAssign {
			// ConsumerCoordinator.onJoinPrepare revokes all owned partitions, none on the
			// first join, before every eager join.
			out.print(vcPartitionsEvent{now(), "partitions_revoked", []vcPartition{}})
		}
		revokedSinceAssign = false
		out.print(vcPartitionsEvent{now(), "partitions_assigned", sortedPartitions(m)})
	}))

	out.print(vcEvent(now(), "startup_complete"))
	cl, err = kgo.NewClient(opts...)
	if err != nil {
		fmt.Fprintln(stderr, err)
		out.print(vcEvent(now(), "shutdown_complete"))
		return 1
	}
	var consumed int64
	finished := func() bool { return o.maxMessages >= 0 && consumed >= o.maxMessages }
	for !finished() {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil || fetches.IsClientClosed() {
			break
		}
		var fatal error
		fetches.EachError(func(t string, p int32, err error) {
			if fatal == nil && !kgoRetriable(err) {
				fatal = fmt.Errorf("%s-%d: %w", t, p, err)
			}
		})
		if fatal != nil {
			// The Java tool logs the error and terminates normally (its catch of Throwable).
			fmt.Fprintln(stderr, "ERROR Error during processing, terminating consumer process: "+fatal.Error())
			break
		}
		offsets := map[string]map[int32]kgo.EpochOffset{}
		var summaries []vcSummary
		var count int64
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			count += int64(len(p.Records))
			recs := p.Records
			if finished() || len(recs) == 0 {
				return
			}
			if o.maxMessages >= 0 && consumed+int64(len(recs)) > o.maxMessages {
				recs = recs[:o.maxMessages-consumed]
			}
			first, last := recs[0], recs[len(recs)-1]
			if offsets[p.Topic] == nil {
				offsets[p.Topic] = map[int32]kgo.EpochOffset{}
			}
			offsets[p.Topic][p.Partition] = kgo.EpochOffset{Epoch: last.LeaderEpoch, Offset: last.Offset + 1}
			summaries = append(summaries, vcSummary{p.Topic, p.Partition, int64(len(recs)), first.Offset, last.Offset})
			if o.verbose {
				for _, r := range recs {
					out.print(vcRecordData{now(), "record_data", strOrNull(r.Key), strOrNull(r.Value), r.Topic, r.Partition, r.Offset})
				}
			}
			consumed += int64(len(recs))
		})
		if count == 0 {
			cl.AllowRebalance() // Java's poll(MAX) returns only with records
			continue
		}
		if summaries == nil {
			summaries = []vcSummary{}
		}
		out.print(vcRecordsConsumed{now(), "records_consumed", count, summaries})
		if !o.autoCommit {
			commitAndReport(ctx, cl, offsets, out, now)
		}
		cl.AllowRebalance()
	}
	mu.Lock()
	closing = true
	mu.Unlock()
	cl.AllowRebalance() // a poll cut short by the stop may still hold the rebalance back
	cl.Close()
	out.print(vcEvent(now(), "shutdown_complete"))
	return 0
}

// kgoRetriable reports whether a fetch error is one the Java consumer handles inside poll
// (retries, reconnects) rather than throwing to the tool.
func kgoRetriable(err error) bool {
	var dataLoss *kgo.ErrDataLoss
	var ke *kerr.Error
	switch {
	case errors.Is(err, context.Canceled), errors.As(err, &dataLoss):
		return true
	case errors.As(err, &ke):
		return ke.Retriable
	}
	return true
}

func vcEvent(ts int64, name string) vpEvent { return vpEvent{ts, name} }

// commitAndReport commits offsets synchronously and prints offsets_committed with the
// outcome (VerifiableConsumer.commitSync / onComplete).
func commitAndReport(ctx context.Context, cl *kgo.Client, offsets map[string]map[int32]kgo.EpochOffset, out *jsonLines, now func() int64) {
	commits := []vcCommit{}
	for t, ps := range offsets {
		for p, eo := range ps {
			commits = append(commits, vcCommit{t, p, eo.Offset})
		}
	}
	sort.Slice(commits, func(i, j int) bool {
		if commits[i].Topic != commits[j].Topic {
			return commits[i].Topic < commits[j].Topic
		}
		return commits[i].Partition < commits[j].Partition
	})
	var firstErr error
	// A stop signal must not abandon the commit of records already reported as consumed.
	cl.CommitOffsetsSync(context.WithoutCancel(ctx), offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			firstErr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if e := kerr.ErrorForCode(p.ErrorCode); e != nil && firstErr == nil {
					firstErr = e
				}
			}
		}
	})
	ev := vcOffsetsCommitted{Timestamp: now(), Name: "offsets_committed", Offsets: commits, Success: firstErr == nil}
	if firstErr != nil {
		msg := firstErr.Error()
		ev.Error = &msg
	}
	out.print(ev)
}
