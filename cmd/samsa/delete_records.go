package main

// delete-records mirrors Kafka 3.7's kafka-delete-records.sh (org.apache.kafka.tools.
// DeleteRecordsCommand): it reads {"partitions":[{"topic","partition","offset"}],"version":1}
// and asks each partition's leader to move its log start offset there, as the Admin client's
// deleteRecords does (DeleteRecordsHandler with PartitionLeaderStrategy: leaders looked up in
// Metadata, retried on stale metadata and retriable errors until default.api.timeout.ms).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	commands["delete-records"] = command{runDeleteRecords, "delete records of partitions up to an offset (kafka-delete-records.sh)"}
}

const deleteRecordsUsage = "This tool helps to delete records of the given partitions down to the specified offset."

type deleteRecordsOpts struct {
	bootstrap, offsetJSONFile, commandConfig optString
}

func parseDeleteRecordsArgs(args []string, stderr io.Writer) (*deleteRecordsOpts, *flag.FlagSet, error) {
	o := &deleteRecordsOpts{}
	fs := newFlagSet("samsa delete-records", stderr)
	fs.Var(&o.bootstrap, "bootstrap-server", "REQUIRED: The server to connect to.")
	fs.Var(&o.offsetJSONFile, "offset-json-file", "REQUIRED: The JSON file with offset per partition. The format to use is:\n"+
		"{\"partitions\":\n  [{\"topic\": \"foo\", \"partition\": 1, \"offset\": 1}],\n \"version\":1\n}")
	fs.Var(&o.commandConfig, "command-config", "A property file containing configs to be passed to Admin Client.")
	if len(args) == 0 {
		return nil, fs, usageErr(deleteRecordsUsage)
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, fs, err
	}
	if !o.bootstrap.set {
		return nil, fs, usageErr("Missing required argument \"[bootstrap-server]\"")
	}
	if !o.offsetJSONFile.set {
		return nil, fs, usageErr("Missing required argument \"[offset-json-file]\"")
	}
	return o, fs, nil
}

// javaMainException is an exception escaping a Java tool's main: the JVM prints it on stderr
// as `Exception in thread "main" <class>: <message>` and exits 1.
type javaMainException struct{ class, msg string }

func (e *javaMainException) Error() string { return e.class + ": " + e.msg }

func adminOperationErr(format string, a ...any) error {
	return &javaMainException{"org.apache.kafka.server.common.AdminOperationException", fmt.Sprintf(format, a...)}
}

// tpKey is a topic-partition.
type tpKey struct {
	topic     string
	partition int32
}

func (tp tpKey) String() string { return fmt.Sprintf("%s-%d", tp.topic, tp.partition) }

// deleteRecordsEntry is one partition of the offset JSON, in file order.
type deleteRecordsEntry struct {
	tp     tpKey
	offset int64
}

// parseDeleteRecordsJSON is DeleteRecordsCommand.parseOffsetJsonStringWithoutDedup followed by
// the duplicate check.
func parseDeleteRecordsJSON(data []byte) ([]deleteRecordsEntry, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var top any
	if err := dec.Decode(&top); err != nil {
		return nil, adminOperationErr("The input string is not a valid JSON")
	}
	// Like Jackson's readTree, anything after the first value is ignored.
	obj, ok := top.(map[string]any)
	if !ok {
		return nil, jsonMappingErr("Expected JSON object, received %s", jsonText(top))
	}
	version := int64(1)
	if v, ok := obj["version"]; ok {
		n, err := jsonInt(v, 32)
		if err != nil {
			return nil, err
		}
		version = n
	}
	if version != 1 {
		return nil, adminOperationErr("Not supported version field value %d", version)
	}
	parts, ok := obj["partitions"]
	if !ok {
		return nil, adminOperationErr("Missing partitions field")
	}
	list, ok := parts.([]any)
	if !ok {
		return nil, jsonMappingErr("Expected JSON array, received %s", jsonText(parts))
	}
	var out []deleteRecordsEntry
	seen := map[tpKey]int{}
	var dups []tpKey
	for _, item := range list {
		po, ok := item.(map[string]any)
		if !ok {
			return nil, jsonMappingErr("Expected JSON object, received %s", jsonText(item))
		}
		field := func(name string) (any, error) {
			v, ok := po[name]
			if !ok {
				return nil, jsonMappingErr("No such field exists: `%s`", name)
			}
			return v, nil
		}
		tv, err := field("topic")
		if err != nil {
			return nil, err
		}
		topic, ok := tv.(string)
		if !ok {
			return nil, jsonMappingErr("Expected `String` value, received %s", jsonText(tv))
		}
		pv, err := field("partition")
		if err != nil {
			return nil, err
		}
		p, err := jsonInt(pv, 32)
		if err != nil {
			return nil, err
		}
		ov, err := field("offset")
		if err != nil {
			return nil, err
		}
		off, err := jsonInt(ov, 64)
		if err != nil {
			return nil, err
		}
		tp := tpKey{topic, int32(p)}
		seen[tp]++
		if seen[tp] == 2 {
			dups = append(dups, tp)
		}
		if seen[tp] == 1 {
			out = append(out, deleteRecordsEntry{tp, off})
		}
	}
	if len(dups) > 0 {
		names := make([]string, len(dups))
		for i, d := range dups {
			names[i] = d.String()
		}
		return nil, &javaMainException{"org.apache.kafka.server.common.AdminCommandFailedException",
			"Offset json file contains duplicate topic partitions: " + strings.Join(names, ",")}
	}
	return out, nil
}

func jsonMappingErr(format string, a ...any) error {
	return &javaMainException{"com.fasterxml.jackson.databind.JsonMappingException", fmt.Sprintf(format, a...)}
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// jsonInt is DecodeJson.DecodeInteger / DecodeLong: an integral JSON number that fits.
func jsonInt(v any, bits int) (int64, error) {
	typ := "Int"
	if bits == 64 {
		typ = "Long"
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, jsonMappingErr("Expected `%s` value, received %s", typ, jsonText(v))
	}
	i, err := n.Int64()
	if err != nil || (bits == 32 && (i < -1<<31 || i > 1<<31-1)) {
		return 0, jsonMappingErr("Expected `%s` value, received %s", typ, n.String())
	}
	return i, nil
}

func runDeleteRecords(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, fs, err := parseDeleteRecordsArgs(args, stderr)
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	ap, ok := loadAdminProps("delete-records", "command-config", o.commandConfig, stderr)
	if !ok {
		return 1
	}
	data, err := os.ReadFile(o.offsetJSONFile.v)
	if err != nil {
		fmt.Fprintf(stderr, "Exception in thread \"main\" java.nio.file.NoSuchFileException: %s\n", o.offsetJSONFile.v)
		return 1
	}
	entries, err := parseDeleteRecordsJSON(data)
	if err != nil {
		fmt.Fprintf(stderr, "Exception in thread \"main\" %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "Executing records delete operation")
	var results map[tpKey]deleteRecordsResult
	err = withAdminClient(o.bootstrap.v, ap.clientID("adminclient-1"), ap.apiTimeout+5*time.Second, ap.opts, func(ctx context.Context, cl *kgo.Client) error {
		results = deleteRecords(ctx, cl, entries, ap.apiTimeout)
		return nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "Exception in thread \"main\" org.apache.kafka.common.KafkaException: Failed to create new KafkaAdminClient: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "Records delete operation completed:")
	// DeleteRecordsResult.lowWatermarks is a HashMap keyed by TopicPartition.
	hashes := make([]int32, len(entries))
	for i, e := range entries {
		hashes[i] = javaTopicPartitionHash(e.tp.topic, e.tp.partition)
	}
	for _, i := range javaHashMapOrder(hashes, 16) {
		tp := entries[i].tp
		r := results[tp]
		if r.err != "" {
			fmt.Fprintf(stdout, "partition: %s\terror: %s\n", tp, r.err)
		} else {
			fmt.Fprintf(stdout, "partition: %s\tlow_watermark: %d\n", tp, r.lowWatermark)
		}
	}
	return 0
}

type deleteRecordsResult struct {
	lowWatermark int64
	err          string // the ExecutionException's message: the cause's toString
}

// deleteRecords runs the Admin client's deleteRecords: look up leaders, send each leader its
// partitions, look up again after stale-metadata errors, retry retriable ones, until timeout.
func deleteRecords(ctx context.Context, cl *kgo.Client, entries []deleteRecordsEntry, timeout time.Duration) map[tpKey]deleteRecordsResult {
	deadline := time.Now().Add(timeout)
	offsets := map[tpKey]int64{}
	pending := map[tpKey]bool{}
	for _, e := range entries {
		offsets[e.tp], pending[e.tp] = e.offset, true
	}
	results := map[tpKey]deleteRecordsResult{}
	fail := func(tp tpKey, msg string) { results[tp] = deleteRecordsResult{err: msg}; delete(pending, tp) }
	stage := "METADATA"
	for len(pending) > 0 {
		if time.Now().After(deadline) || ctx.Err() != nil {
			for tp := range pending {
				fail(tp, fmt.Sprintf("org.apache.kafka.common.errors.TimeoutException: Call(callName=deleteRecords(api=%s)) timed out after %d ms", stage, timeout.Milliseconds()))
			}
			break
		}
		stage = "METADATA"
		leaders := lookupLeaders(ctx, cl, pending, fail)
		byLeader := map[int32][]tpKey{}
		for tp, l := range leaders {
			byLeader[l] = append(byLeader[l], tp)
		}
		for leader, tps := range byLeader {
			stage = "DELETE_RECORDS"
			req := kmsg.NewPtrDeleteRecordsRequest()
			req.TimeoutMillis = int32(timeout.Milliseconds())
			topics := map[string]int{}
			for _, tp := range tps {
				i, ok := topics[tp.topic]
				if !ok {
					i = len(req.Topics)
					topics[tp.topic] = i
					rt := kmsg.NewDeleteRecordsRequestTopic()
					rt.Topic = tp.topic
					req.Topics = append(req.Topics, rt)
				}
				rp := kmsg.NewDeleteRecordsRequestTopicPartition()
				rp.Partition, rp.Offset = tp.partition, offsets[tp]
				req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
			}
			resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
			if err != nil {
				continue // the partitions stay pending: looked up and sent again
			}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					tp := tpKey{t.Topic, p.Partition}
					if !pending[tp] {
						continue
					}
					if p.ErrorCode == 0 {
						results[tp] = deleteRecordsResult{lowWatermark: p.LowWatermark}
						delete(pending, tp)
						continue
					}
					perr := kerr.ErrorForCode(p.ErrorCode)
					var ke *kerr.Error
					if errors.As(perr, &ke) && ke.Retriable {
						continue // InvalidMetadataException or RetriableException: try again
					}
					fail(tp, javaErrText(perr))
				}
			}
		}
		if len(pending) > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond): // retry.backoff.ms
			}
		}
	}
	return results
}

// lookupLeaders is PartitionLeaderStrategy: one Metadata request for the pending partitions'
// topics; partitions whose topic is unknown, unauthorized or invalid fail, those without a
// leader stay pending.
func lookupLeaders(ctx context.Context, cl *kgo.Client, pending map[tpKey]bool, fail func(tpKey, string)) map[tpKey]int32 {
	req := kmsg.NewPtrMetadataRequest()
	seen := map[string]bool{}
	for tp := range pending {
		if !seen[tp.topic] {
			seen[tp.topic] = true
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(tp.topic)
			req.Topics = append(req.Topics, rt)
		}
	}
	req.AllowAutoTopicCreation = false
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil
	}
	leaders := map[tpKey]int32{}
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		topic := *t.Topic
		forTopic := func(msg func(tp tpKey) string) {
			for tp := range pending {
				if tp.topic == topic {
					fail(tp, msg(tp))
				}
			}
		}
		switch terr := kerr.ErrorForCode(t.ErrorCode); terr {
		case nil:
		case kerr.LeaderNotAvailable, kerr.BrokerNotAvailable:
			continue
		case kerr.UnknownTopicOrPartition:
			forTopic(func(tp tpKey) string {
				return fmt.Sprintf("org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Failed to fetch metadata for partition %s because metadata for topic `%s` could not be found", tp, topic)
			})
			continue
		case kerr.TopicAuthorizationFailed:
			forTopic(func(tp tpKey) string {
				return fmt.Sprintf("org.apache.kafka.common.errors.TopicAuthorizationException: Failed to fetch metadata for partition %s due to topic authorization failure", tp)
			})
			continue
		case kerr.InvalidTopicException:
			forTopic(func(tp tpKey) string {
				return fmt.Sprintf("org.apache.kafka.common.errors.InvalidTopicException: Failed to fetch metadata for partition %s due to invalid topic `%s`", tp, topic)
			})
			continue
		default:
			forTopic(func(tp tpKey) string {
				name := strings.SplitN(javaErrText(terr), ":", 2)[0]
				return fmt.Sprintf("%s: Failed to fetch metadata for partition %s due to unexpected error for topic `%s`", name, tp, topic)
			})
			continue
		}
		for _, p := range t.Partitions {
			tp := tpKey{topic, p.Partition}
			if !pending[tp] {
				continue
			}
			switch perr := kerr.ErrorForCode(p.ErrorCode); perr {
			case nil:
			case kerr.NotLeaderForPartition, kerr.ReplicaNotAvailable, kerr.LeaderNotAvailable,
				kerr.BrokerNotAvailable, kerr.KafkaStorageError, kerr.UnknownTopicOrPartition:
				continue
			default:
				name := strings.SplitN(javaErrText(perr), ":", 2)[0]
				fail(tp, fmt.Sprintf("%s: Unexpected error during metadata lookup for %s", name, tp))
				continue
			}
			if p.Leader >= 0 {
				leaders[tp] = p.Leader
			}
		}
	}
	return leaders
}
