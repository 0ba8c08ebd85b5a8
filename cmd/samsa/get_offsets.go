package main

// get-offsets mirrors Kafka 3.7's kafka-get-offsets.sh (org.apache.kafka.tools.GetOffsetShell):
// it lists the offsets of the partitions the filters select for a time spec (latest, earliest,
// max-timestamp or a timestamp) and prints "topic:partition:offset" lines sorted by the
// "topic-partition" string, as the tool's TreeMap does.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	commands["get-offsets"] = command{runGetOffsets, "print the offsets of topic partitions for a time (kafka-get-offsets.sh)"}
}

const getOffsetsUsage = "An interactive shell for getting topic-partition offsets."

// getOffsetsPattern is GetOffsetShell.TOPIC_PARTITION_PATTERN.
var getOffsetsPattern = regexp.MustCompile(`^([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?$`)

type getOffsetsOpts struct {
	brokerList, bootstrap, topicPartitions, topic, partitions, commandConfig optString
	time                                                                     optString
	excludeInternal                                                          bool
	servers                                                                  string
}

// errTerse marks GetOffsetShell's TerseException: "Error occurred: <message>", exit 1.
var errTerse = errors.New("terse")

func terseErr(format string, a ...any) error {
	return fmt.Errorf("%w%s", errTerse, fmt.Sprintf(format, a...))
}

func parseGetOffsetsArgs(args []string, stderr io.Writer) (*getOffsetsOpts, *flag.FlagSet, error) {
	o := &getOffsetsOpts{time: optString{v: "latest"}}
	fs := newFlagSet("samsa get-offsets", stderr)
	fs.Var(&o.brokerList, "broker-list", "DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server is specified. The server(s) to connect to in the form HOST1:PORT1,HOST2:PORT2.")
	fs.Var(&o.bootstrap, "bootstrap-server", "REQUIRED. The server(s) to connect to in the form HOST1:PORT1,HOST2:PORT2.")
	fs.Var(&o.topicPartitions, "topic-partitions", "Comma separated list of topic-partition patterns to get the offsets for, with the format of '"+
		`([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?`+"'. The first group is an optional regex for the topic name, if omitted, it matches any topic name. "+
		"The section after ':' describes a 'partition' pattern, which can be: a number, a range in the format of 'NUMBER-NUMBER' (lower inclusive, upper exclusive), "+
		"an inclusive lower bound in the format of 'NUMBER-', an exclusive upper bound in the format of '-NUMBER' or may be omitted to accept all partitions.")
	fs.Var(&o.topic, "topic", "The topic to get the offsets for. It also accepts a regular expression. If not present, all authorized topics are queried. Cannot be used if --topic-partitions is present.")
	fs.Var(&o.partitions, "partitions", "Comma separated list of partition ids to get the offsets for. If not present, all partitions of the authorized topics are queried. Cannot be used if --topic-partitions is present.")
	fs.Var(&o.time, "time", "timestamp of the offsets before that. [Note: No offset is returned, if the timestamp greater than recently committed record timestamp is given.] (<timestamp> / -1 or latest / -2 or earliest / -3 or max-timestamp; default: latest)")
	fs.Var(&o.commandConfig, "command-config", "Property file containing configs to be passed to Admin Client.")
	fs.BoolVar(&o.excludeInternal, "exclude-internal-topics", false, "By default, internal topics are included. If specified, internal topics are excluded.")
	if len(args) == 0 {
		return nil, fs, usageErr(getOffsetsUsage)
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, fs, err
	}
	switch {
	case o.bootstrap.set:
		o.servers = o.bootstrap.v
	case o.brokerList.set:
		o.servers = o.brokerList.v
	default:
		return nil, fs, usageErr("Missing required argument \"[broker-list]\"")
	}
	if err := validateBootstrapServer(o.servers); err != nil {
		return nil, fs, err
	}
	return o, fs, nil
}

// hostPortRe is Utils.HOST_PORT_PATTERN.
var hostPortRe = regexp.MustCompile(`^.*?\[?([0-9a-zA-Z\-%._:]*)\]?:([0-9]+)$`)

// validateBootstrapServer is ToolsUtils.validateBootstrapServer.
func validateBootstrapServer(s string) error {
	if strings.TrimSpace(s) == "" {
		return usageErr("Error while validating the bootstrap address\n")
	}
	for _, hp := range strings.Split(s, ",") {
		if !hostPortRe.MatchString(hp) {
			return usageErr("Please provide valid host:port like host1:9091,host2:9092\n")
		}
	}
	return nil
}

// tpFilter is a TopicPartitionFilter.
type tpFilter interface {
	topicAllowed(topic string) bool
	partitionAllowed(topic string, partition int32) bool
}

// topicAndPartitionFilter is TopicFilterAndPartitionFilter: an IncludeList regex and a
// partition test.
type topicAndPartitionFilter struct {
	topic     *regexp.Regexp
	partition func(int32) bool
}

func (f topicAndPartitionFilter) topicAllowed(t string) bool { return f.topic.MatchString(t) }
func (f topicAndPartitionFilter) partitionAllowed(t string, p int32) bool {
	return f.topicAllowed(t) && f.partition(p)
}

// compositeFilter is CompositeTopicPartitionFilter: any rule.
type compositeFilter []tpFilter

func (c compositeFilter) topicAllowed(t string) bool {
	for _, f := range c {
		if f.topicAllowed(t) {
			return true
		}
	}
	return false
}

func (c compositeFilter) partitionAllowed(t string, p int32) bool {
	for _, f := range c {
		if f.partitionAllowed(t, p) {
			return true
		}
	}
	return false
}

// buildGetOffsetsFilter is createTopicPartitionFilterWithPatternList or
// createTopicPartitionFilterWithTopicAndPartitionPattern.
func buildGetOffsetsFilter(o *getOffsetsOpts) (tpFilter, error) {
	if o.topicPartitions.set {
		var rules compositeFilter
		for _, spec := range javaSplit(o.topicPartitions.v, ",") {
			m := getOffsetsPattern.FindStringSubmatch(spec)
			if m == nil {
				// A TerseException wrapped in a RuntimeException: its toString is the message.
				return nil, fmt.Errorf("org.apache.kafka.tools.TerseException: Invalid rule specification: %s", spec)
			}
			topic := m[1]
			if topic == "" {
				topic = ".*"
			}
			re, err := includeList(topic)
			if err != nil {
				return nil, err
			}
			num := func(s string, def int64) (int64, error) {
				if s == "" {
					return def, nil
				}
				n, err := strconv.ParseInt(s, 10, 32)
				if err != nil {
					return 0, fmt.Errorf("For input string: \"%s\"", s)
				}
				return n, nil
			}
			var part func(int32) bool
			if m[2] != "" {
				n, err := num(m[2], 0)
				if err != nil {
					return nil, err
				}
				part = func(p int32) bool { return int64(p) == n }
			} else {
				lo, err := num(m[3], 0)
				if err != nil {
					return nil, err
				}
				hi, err := num(m[4], math.MaxInt32)
				if err != nil {
					return nil, err
				}
				part = func(p int32) bool { return int64(p) >= lo && int64(p) < hi }
			}
			rules = append(rules, topicAndPartitionFilter{re, part})
		}
		return rules, nil
	}
	topic := ".*"
	if o.topic.set {
		topic = o.topic.v
	}
	re, err := includeList(topic)
	if err != nil {
		return nil, err
	}
	set := map[int32]bool{}
	if o.partitions.set && o.partitions.v != "" {
		for _, s := range javaSplit(o.partitions.v, ",") {
			n, err := strconv.ParseInt(s, 10, 32)
			if err != nil {
				return nil, terseErr("--partitions expects a comma separated list of numeric partition ids, but received: %s", o.partitions.v)
			}
			set[int32(n)] = true
		}
	}
	return topicAndPartitionFilter{re, func(p int32) bool { return len(set) == 0 || set[p] }}, nil
}

// javaSplit is String.split with a literal separator: trailing empty strings are dropped
// (all of them but the first when the input is empty).
func javaSplit(s, sep string) []string {
	parts := strings.Split(s, sep)
	for len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) == 1 && parts[0] == "" && s != "" {
		return nil
	}
	return parts
}

// parseOffsetSpec is GetOffsetShell.parseOffsetSpec: the ListOffsets timestamp to send.
func parseOffsetSpec(s string) (int64, error) {
	switch s {
	case "earliest":
		return -2, nil
	case "latest":
		return -1, nil
	case "max-timestamp":
		return -3, nil
	}
	ts, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, terseErr("Malformed time argument %s. Please use -1 or latest / -2 or earliest / -3 or max-timestamp, or a specified long format timestamp", s)
	}
	return ts, nil
}

func runGetOffsets(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, fs, err := parseGetOffsetsArgs(args, stderr)
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	report := func(err error) int {
		fmt.Fprintln(stderr, "Error occurred: "+strings.TrimPrefix(err.Error(), errTerse.Error()))
		return 1
	}
	if o.topicPartitions.set && (o.topic.set || o.partitions.set) {
		return report(terseErr("--topic-partitions cannot be used with --topic or --partitions"))
	}
	spec, err := parseOffsetSpec(o.time.v)
	if err != nil {
		return report(err)
	}
	filter, err := buildGetOffsetsFilter(o)
	if err != nil {
		return report(err)
	}
	ap, ok := loadAdminProps("get-offsets", "command-config", o.commandConfig, stderr)
	if !ok {
		return 1
	}
	var lines []string
	err = withAdminClient(o.servers, "GetOffsetShell", ap.apiTimeout, ap.opts, func(ctx context.Context, cl *kgo.Client) error {
		tps, err := listGetOffsetsPartitions(ctx, cl, filter, o.excludeInternal)
		if err != nil {
			return err
		}
		if len(tps) == 0 {
			return terseErr("Could not match any topic-partitions with the specified filters")
		}
		offsets, errs := listOffsetsFor(ctx, cl, tps, spec, ap.apiTimeout)
		for _, tp := range tps {
			if e, bad := errs[tp]; bad {
				// The ExecutionException's message is its cause's toString.
				fmt.Fprintf(stderr, "Skip getting offsets for topic-partition %s due to error: %s\n", tp, e)
				continue
			}
			if off, ok := offsets[tp]; ok && off != -1 { // ListOffsetsResponse.UNKNOWN_OFFSET
				lines = append(lines, fmt.Sprintf("%s\x00%s:%d:%d", tp, tp.topic, tp.partition, off))
			}
		}
		return nil
	})
	if err != nil {
		return report(err)
	}
	sort.Strings(lines) // TreeMap ordered by TopicPartition.toString
	for _, l := range lines {
		_, text, _ := strings.Cut(l, "\x00")
		fmt.Fprintln(stdout, text)
	}
	return 0
}

// listGetOffsetsPartitions is GetOffsetShell.listPartitionInfos: the topics (internal ones
// unless excluded) the filter allows, and their partitions it allows.
func listGetOffsetsPartitions(ctx context.Context, cl *kgo.Client, filter tpFilter, excludeInternal bool) ([]tpKey, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = nil // all topics
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("org.apache.kafka.common.errors.TimeoutException: %v", err)
	}
	var tps []tpKey
	for _, t := range resp.Topics {
		if t.Topic == nil || t.ErrorCode != 0 || (excludeInternal && t.IsInternal) || !filter.topicAllowed(*t.Topic) {
			continue
		}
		for _, p := range t.Partitions {
			if filter.partitionAllowed(*t.Topic, p.Partition) {
				tps = append(tps, tpKey{*t.Topic, p.Partition})
			}
		}
	}
	return tps, nil
}

// listOffsetsFor is Admin.listOffsets (ListOffsetsHandler): each leader is asked for its
// partitions; retriable errors are tried again until timeout. It returns the offsets and, for
// partitions that failed, the exception text.
func listOffsetsFor(ctx context.Context, cl *kgo.Client, tps []tpKey, ts int64, timeout time.Duration) (map[tpKey]int64, map[tpKey]string) {
	offsets, errs := map[tpKey]int64{}, map[tpKey]string{}
	pending := map[tpKey]bool{}
	for _, tp := range tps {
		pending[tp] = true
	}
	deadline := time.Now().Add(timeout)
	var lastErr string
	for len(pending) > 0 {
		if time.Now().After(deadline) || ctx.Err() != nil {
			for tp := range pending {
				msg := fmt.Sprintf("org.apache.kafka.common.errors.TimeoutException: Call(callName=listOffsets(api=LIST_OFFSETS)) timed out after %d ms", timeout.Milliseconds())
				if lastErr != "" {
					msg = lastErr
				}
				errs[tp] = msg
			}
			break
		}
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		byTopic := map[string]int{}
		for tp := range pending {
			i, ok := byTopic[tp.topic]
			if !ok {
				i = len(req.Topics)
				byTopic[tp.topic] = i
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = tp.topic
				req.Topics = append(req.Topics, rt)
			}
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.MaxNumOffsets = tp.partition, ts, 1
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		}
		for _, shard := range cl.RequestSharded(ctx, req) {
			if shard.Err != nil {
				sreq, ok := shard.Req.(*kmsg.ListOffsetsRequest)
				if !ok {
					continue
				}
				var ke *kerr.Error
				for _, t := range sreq.Topics {
					for _, p := range t.Partitions {
						tp := tpKey{t.Topic, p.Partition}
						if errors.As(shard.Err, &ke) && !ke.Retriable {
							errs[tp] = javaErrText(shard.Err)
							delete(pending, tp)
						} else if errors.Is(shard.Err, kerr.UnsupportedVersion) || strings.Contains(shard.Err.Error(), "max version") {
							errs[tp] = "org.apache.kafka.common.errors.UnsupportedVersionException: " + shard.Err.Error()
							delete(pending, tp)
						} else {
							lastErr = "org.apache.kafka.common.errors.TimeoutException: " + shard.Err.Error()
						}
					}
				}
				continue
			}
			resp := shard.Resp.(*kmsg.ListOffsetsResponse)
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					tp := tpKey{t.Topic, p.Partition}
					if !pending[tp] {
						continue
					}
					if p.ErrorCode == 0 {
						offsets[tp] = p.Offset
						if len(p.OldStyleOffsets) > 0 && resp.Version == 0 {
							offsets[tp] = p.OldStyleOffsets[0]
						}
						delete(pending, tp)
						continue
					}
					perr := kerr.ErrorForCode(p.ErrorCode)
					var ke *kerr.Error
					if errors.As(perr, &ke) && ke.Retriable {
						lastErr = javaErrText(perr)
						continue
					}
					errs[tp] = javaErrText(perr)
					delete(pending, tp)
				}
			}
		}
		if len(pending) > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return offsets, errs
}
