package main

// log-dirs mirrors Kafka 3.7's kafka-log-dirs.sh (org.apache.kafka.tools.LogDirsCommand): it
// asks each broker (all, or those of --broker-list) for its log directories with
// DescribeLogDirs and prints them as Jackson writes the tool's nested HashMaps, keys and list
// entries in Java's HashMap iteration order.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	commands["log-dirs"] = command{runLogDirs, "describe the log directories of brokers (kafka-log-dirs.sh)"}
}

const logDirsUsage = "This tool helps to query log directory usage on the specified brokers."

type logDirsOpts struct {
	bootstrap, commandConfig optString
	describe                 bool
	topicList, brokerList    optString
}

func parseLogDirsArgs(args []string, stderr io.Writer) (*logDirsOpts, *flag.FlagSet, error) {
	o := &logDirsOpts{}
	fs := newFlagSet("samsa log-dirs", stderr)
	fs.Var(&o.bootstrap, "bootstrap-server", "REQUIRED: the server(s) to use for bootstrapping")
	fs.Var(&o.commandConfig, "command-config", "Property file containing configs to be passed to Admin Client.")
	fs.BoolVar(&o.describe, "describe", false, "Describe the specified log directories on the specified brokers.")
	fs.Var(&o.topicList, "topic-list", "The list of topics to be queried in the form \"topic1,topic2,topic3\". All topics will be queried if no topic list is specified")
	fs.Var(&o.brokerList, "broker-list", "The list of brokers to be queried in the form \"0,1,2\". All brokers in the cluster will be queried if no broker list is specified")
	if len(args) == 0 {
		return nil, fs, usageErr(logDirsUsage)
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, fs, err
	}
	if !o.bootstrap.set {
		return nil, fs, usageErr("Missing required argument \"[bootstrap-server]\"")
	}
	if !o.describe {
		return nil, fs, usageErr("Missing required argument \"[describe]\"")
	}
	return o, fs, nil
}

// splitNonEmpty is splitAtCommasAndFilterOutEmpty.
func splitNonEmpty(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

func runLogDirs(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, fs, err := parseLogDirsArgs(args, stderr)
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	topics := map[string]bool{}
	for _, t := range splitNonEmpty(o.topicList.v) {
		topics[t] = true
	}
	var inputBrokers []int32
	seenInput := map[int32]bool{}
	for _, b := range splitNonEmpty(o.brokerList.v) {
		n, err := strconv.ParseInt(b, 10, 32)
		if err != nil {
			// Integer.valueOf's NumberFormatException escapes to mainNoExit.
			fmt.Fprintf(stderr, "For input string: \"%s\"\n", b)
			return 1
		}
		if !seenInput[int32(n)] {
			seenInput[int32(n)] = true
			inputBrokers = append(inputBrokers, int32(n))
		}
	}
	ap, ok := loadAdminProps("log-dirs", "command-config", o.commandConfig, stderr)
	if !ok {
		return 1
	}
	err = withAdminClient(o.bootstrap.v, ap.clientID("log-dirs-tool"), ap.apiTimeout, ap.opts, func(ctx context.Context, cl *kgo.Client) error {
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{}
		md, err := req.RequestWith(ctx, cl)
		if err != nil {
			return fmt.Errorf("org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment. Call: listNodes (%v)", err)
		}
		cluster := map[int32]bool{}
		var clusterIDs []int32
		for _, b := range md.Brokers {
			cluster[b.NodeID] = true
			clusterIDs = append(clusterIDs, b.NodeID)
		}
		var existing, missing []int32
		if len(inputBrokers) == 0 {
			existing = clusterIDs
		}
		for _, b := range inputBrokers {
			if cluster[b] {
				existing = append(existing, b)
			} else {
				missing = append(missing, b)
			}
		}
		if len(missing) > 0 {
			return &terseError{fmt.Sprintf("ERROR: The given brokers do not exist from --broker-list: %s. Current existent brokers: %s",
				joinIDs(javaIntSetOrderCap(missing, hashSetCap(len(inputBrokers)))), joinIDs(javaIntSetOrderCap(clusterIDs, 16)))}
		}
		fmt.Fprintln(stdout, "Querying brokers for log directories information")
		descs := map[int32]*kmsg.DescribeLogDirsResponse{}
		for _, b := range existing {
			req := kmsg.NewPtrDescribeLogDirsRequest() // Topics nil: every partition of every dir
			resp, err := req.RequestWith(ctx, cl.Broker(int(b)))
			if err != nil {
				return fmt.Errorf("org.apache.kafka.common.errors.TimeoutException: Call(callName=describeLogDirs) timed out: %v", err)
			}
			if len(resp.Dirs) == 0 {
				// Up to v3 the response had no error code: no directories means not authorized.
				code := resp.ErrorCode
				if code == 0 {
					code = kerr.ClusterAuthorizationFailed.Code
				}
				return fmt.Errorf("org.apache.kafka.common.errors.%s", strings.TrimPrefix(javaErrText(kerr.ErrorForCode(code)), "org.apache.kafka.common.errors."))
			}
			descs[b] = resp
		}
		fmt.Fprintf(stdout, "Received log directory information from brokers %s\n", joinIDs(javaIntSetOrderCap(existing, hashSetCap(len(existing)))))
		fmt.Fprintln(stdout, logDirsJSON(existing, descs, topics))
		return nil
	})
	if err != nil {
		fmt.Fprintln(stderr, err.Error())
		return 1
	}
	return 0
}

// terseError is a TerseException: the tool prints its message alone.
type terseError struct{ msg string }

func (e *terseError) Error() string { return e.msg }

// hashSetCap is the table size new HashSet<>(collection) starts with.
func hashSetCap(n int) int {
	c := int(float32(n)/0.75) + 1
	if c < 16 {
		c = 16
	}
	return c
}

// javaIntSetOrderCap orders ids as a HashSet<Integer> made with capacity c iterates them.
func javaIntSetOrderCap(ids []int32, c int) []int32 {
	order := javaHashMapOrder(ids, c)
	out := make([]int32, len(ids))
	for i, j := range order {
		out[i] = ids[j]
	}
	return out
}

// jsonObj is a Java HashMap<String, Object> being written by Jackson: entries in the map's
// iteration order.
type jsonObj []struct {
	key string
	val any
}

func (o jsonObj) ordered() jsonObj {
	hashes := make([]int32, len(o))
	for i, e := range o {
		hashes[i] = javaStringHash(e.key)
	}
	out := make(jsonObj, 0, len(o))
	for _, i := range javaHashMapOrder(hashes, 16) {
		out = append(out, o[i])
	}
	return out
}

// writeJSON writes v compactly as Jackson does (no HTML escaping).
func writeJSON(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case jsonObj:
		b.WriteByte('{')
		for i, e := range x.ordered() {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, e.key)
			b.WriteByte(':')
			writeJSON(b, e.val)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	default:
		var s bytes.Buffer
		enc := json.NewEncoder(&s)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(x)
		b.Write(bytes.TrimRight(s.Bytes(), "\n"))
	}
}

// logDirsJSON is LogDirsCommand.formatAsJson.
func logDirsJSON(brokers []int32, descs map[int32]*kmsg.DescribeLogDirsResponse, topics map[string]bool) string {
	var brokerList []any
	// DescribeLogDirsResult.allDescriptions: a HashMap sized for the brokers asked.
	for _, i := range javaHashMapOrder(brokers, len(brokers)) {
		id := brokers[i]
		resp := descs[id]
		dirHashes := make([]int32, len(resp.Dirs))
		for j, d := range resp.Dirs {
			dirHashes[j] = javaStringHash(d.Dir)
		}
		var dirs []any
		for _, j := range javaHashMapOrder(dirHashes, len(resp.Dirs)) {
			d := resp.Dirs[j]
			var errVal any
			if d.ErrorCode != 0 {
				errVal = javaErrClass(d.ErrorCode)
			}
			dirs = append(dirs, jsonObj{{"logDir", d.Dir}, {"error", errVal}, {"partitions", logDirPartitions(d, topics)}})
		}
		if dirs == nil {
			dirs = []any{}
		}
		brokerList = append(brokerList, jsonObj{{"broker", id}, {"logDirs", dirs}})
	}
	if brokerList == nil {
		brokerList = []any{}
	}
	var b bytes.Buffer
	writeJSON(&b, jsonObj{{"version", 1}, {"brokers", brokerList}})
	return b.String()
}

// logDirPartitions lists a directory's replicas (of the topics asked for) in the order of
// the tool's HashMap, itself filled from the Admin client's HashMap.
func logDirPartitions(d kmsg.DescribeLogDirsResponseDir, topics map[string]bool) []any {
	type replica struct {
		topic string
		p     kmsg.DescribeLogDirsResponseDirTopicPartition
	}
	var all []replica
	for _, t := range d.Topics {
		for _, p := range t.Partitions {
			all = append(all, replica{t.Topic, p})
		}
	}
	byHash := func(rs []replica) []replica {
		hashes := make([]int32, len(rs))
		for i, r := range rs {
			hashes[i] = javaTopicPartitionHash(r.topic, r.p.Partition)
		}
		out := make([]replica, 0, len(rs))
		for _, i := range javaHashMapOrder(hashes, 16) {
			out = append(out, rs[i])
		}
		return out
	}
	var kept []replica
	for _, r := range byHash(all) {
		if len(topics) == 0 || topics[r.topic] {
			kept = append(kept, r)
		}
	}
	out := []any{}
	for _, r := range byHash(kept) {
		out = append(out, jsonObj{
			{"partition", fmt.Sprintf("%s-%d", r.topic, r.p.Partition)},
			{"size", r.p.Size},
			{"offsetLag", r.p.OffsetLag},
			{"isFuture", r.p.IsFuture},
		})
	}
	return out
}
