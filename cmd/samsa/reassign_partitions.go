package main

// reassign-partitions mirrors Kafka 3.7's kafka-reassign-partitions.sh
// (kafka.admin.ReassignPartitionsCommand) over AlterPartitionReassignments (45) and
// ListPartitionReassignments (46): --execute starts the moves in --reassignment-json-file and
// prints the current assignment for rollback, --verify reports each partition, --cancel
// reverts the named in-flight moves, --list shows the ones in progress, and --generate
// proposes an assignment of --topics-to-move-json-file over --broker-list with Kafka's
// assignment algorithm. --throttle sets replication throttles for the moves and --verify or
// --cancel clears them (reassign_throttle.go). log_dirs entries other than "any" move
// replicas between the log dirs of their broker (reassign_log_dirs.go), throttled by
// --replica-alter-log-dirs-throttle.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/controller"
)

type reassignOpts struct {
	bootstrap, jsonFile, topicsFile, brokerList, commandConfig          optString
	throttle, logDirThrottle                                            optInt // -1 (Kafka's default) when not given
	logDirTimeout                                                       optInt // --timeout: for log-dir moves to start (10 s)
	execute, verify, cancel, generate, list, disableRackAware, preserve bool
	additional                                                          bool
	timeout                                                             time.Duration
}

// reassignEntry is one partition of the tool's JSON.
type reassignEntry struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

type reassignJSON struct {
	Version    int             `json:"version"`
	Partitions []reassignEntry `json:"partitions"`
}

func parseReassignArgs(args []string, stderr io.Writer) (*reassignOpts, *flag.FlagSet, error) {
	o := &reassignOpts{timeout: 30 * time.Second, throttle: optInt{v: -1}, logDirThrottle: optInt{v: -1}}
	fs := newFlagSet("samsa reassign-partitions", stderr)
	fs.Var(&o.bootstrap, "bootstrap-server", "REQUIRED: the server(s) to use for bootstrapping.")
	fs.Var(&o.commandConfig, "command-config", "Property file containing configs to be passed to Admin Client.")
	fs.Var(&o.jsonFile, "reassignment-json-file", "The JSON file with the partition reassignment configuration.")
	fs.Var(&o.topicsFile, "topics-to-move-json-file", "Generate a reassignment configuration to move the partitions of the specified topics to the list of brokers specified by --broker-list.")
	fs.Var(&o.brokerList, "broker-list", "The list of brokers to which the partitions need to be reassigned in the form \"0,1,2\".")
	fs.Var(&o.throttle, "throttle", "The movement of partitions between brokers will be throttled to this value (bytes/sec). This option can be included with --execute when a reassignment is started, and it can be altered by resubmitting the current reassignment along with the --additional flag. The throttle rate should be at least 1 KB/s.")
	fs.Var(&o.logDirThrottle, "replica-alter-log-dirs-throttle", "The movement of replicas between log directories on the same broker will be throttled to this value (bytes/sec). This option can be included with --execute when a reassignment is started, and it can be altered by resubmitting the current reassignment along with the --additional flag. The throttle rate should be at least 1 KB/s.")
	fs.Var(&o.logDirTimeout, "timeout", "The maximum time in ms to wait for log directory replica assignment to begin.")
	fs.BoolVar(&o.additional, "additional", false, "Execute this reassignment in addition to any other ongoing ones. This option can also be used to change the throttle of an ongoing reassignment.")
	fs.BoolVar(&o.execute, "execute", false, "Kick off the reassignment as specified by the --reassignment-json-file option.")
	fs.BoolVar(&o.verify, "verify", false, "Verify if the reassignment completed as specified by the --reassignment-json-file option.")
	fs.BoolVar(&o.cancel, "cancel", false, "Cancel an active reassignment.")
	fs.BoolVar(&o.generate, "generate", false, "Generate a candidate partition reassignment configuration.")
	fs.BoolVar(&o.list, "list", false, "List all active partition reassignments.")
	fs.BoolVar(&o.disableRackAware, "disable-rack-aware", false, "Disable rack aware replica assignment.")
	fs.BoolVar(&o.preserve, "preserve-throttles", false, "Do not modify broker or topic throttles.")
	if len(args) == 0 {
		return nil, fs, usageErr("This tool helps to move topic partitions between replicas.")
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, fs, err
	}
	if countSet(o.execute, o.verify, o.cancel, o.generate, o.list) != 1 {
		return nil, fs, usageErr("Command must include exactly one action: --execute, --verify, --generate, --cancel, or --list")
	}
	if !o.bootstrap.set {
		return nil, fs, usageErr("Please specify --bootstrap-server")
	}
	if (o.execute || o.verify || o.cancel) && !o.jsonFile.set {
		return nil, fs, usageErr("Missing required argument \"[reassignment-json-file]\"")
	}
	if o.generate && (!o.topicsFile.set || !o.brokerList.set) {
		return nil, fs, usageErr("Missing required argument \"[topics-to-move-json-file]\" or \"[broker-list]\"")
	}
	if err := reassignPermittedArgs(fs, o); err != nil {
		return nil, fs, err
	}
	return o, fs, nil
}

// reassignPermittedArgs is validateAndParseArgs' permittedArgs: each action takes only its
// own options.
func reassignPermittedArgs(fs *flag.FlagSet, o *reassignOpts) error {
	common := []string{"bootstrap-server", "command-config"}
	var action string
	var allowed []string
	switch {
	case o.verify:
		action, allowed = "verify", []string{"reassignment-json-file", "preserve-throttles"}
	case o.generate:
		action, allowed = "generate", []string{"topics-to-move-json-file", "broker-list", "disable-rack-aware"}
	case o.execute:
		action, allowed = "execute", []string{"reassignment-json-file", "additional", "throttle", "replica-alter-log-dirs-throttle", "timeout"}
	case o.cancel:
		action, allowed = "cancel", []string{"reassignment-json-file", "preserve-throttles", "timeout"}
	default:
		action = "list"
	}
	allowed = append(append(allowed, common...), action)
	var bad string
	fs.Visit(func(f *flag.Flag) {
		if bad == "" && !slices.Contains(allowed, f.Name) {
			bad = f.Name
		}
	})
	if bad != "" {
		return usageErr("Option \"[%s]\" can't be used with action \"[%s]\"", bad, action)
	}
	return nil
}

// parseReassignmentJSON is ReassignPartitionsCommand.parsePartitionReassignmentData with its checks.
func parseReassignmentJSON(data []byte) ([]reassignEntry, error) {
	var j reassignJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("Unable to parse the reassignment JSON: %v", err)
	}
	if j.Version != 1 {
		return nil, fmt.Errorf("Not supported version field value %d", j.Version)
	}
	if len(j.Partitions) == 0 {
		return nil, errors.New("Partition reassignment list cannot be empty")
	}
	seen := map[string]bool{}
	for _, e := range j.Partitions {
		key := e.Topic + "-" + strconv.Itoa(int(e.Partition))
		if seen[key] {
			return nil, fmt.Errorf("Partition reassignment contains duplicate topic partitions: %s", key)
		}
		seen[key] = true
		if len(e.Replicas) == 0 {
			return nil, fmt.Errorf("Partition replica list cannot be empty: %s", key)
		}
		dup := map[int32]bool{}
		for _, r := range e.Replicas {
			if dup[r] {
				return nil, fmt.Errorf("Partition reassignment contains duplicate replicas: %s", key)
			}
			dup[r] = true
		}
		if len(e.LogDirs) > 0 && len(e.LogDirs) != len(e.Replicas) {
			return nil, fmt.Errorf("Size of replicas list %v is different from size of log dirs list %v for partition %s", e.Replicas, e.LogDirs, key)
		}
	}
	return j.Partitions, nil
}

func runReassignPartitions(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, fs, err := parseReassignArgs(args, stderr)
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	sec, ok := adminClientSecurity("reassign-partitions", "command-config", o.commandConfig, stderr)
	if !ok {
		return 1
	}
	err = withAdminClient(o.bootstrap.v, "reassign-partitions", o.timeout, sec, func(ctx context.Context, cl *kgo.Client) error {
		switch {
		case o.list:
			return reassignList(ctx, cl, stdout)
		case o.generate:
			return reassignGenerate(ctx, cl, o, stdout)
		}
		data, err := os.ReadFile(o.jsonFile.v)
		if err != nil {
			return err
		}
		entries, err := parseReassignmentJSON(data)
		if err != nil {
			return err
		}
		switch {
		case o.execute:
			return reassignExecute(ctx, cl, o, entries, stdout)
		case o.verify:
			return reassignVerify(ctx, cl, entries, o.preserve, stdout)
		case o.cancel:
			return reassignCancel(ctx, cl, entries, o.preserve, o.moveTimeout(), stdout)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(stderr, "Error: "+err.Error())
		return 1
	}
	return 0
}

// currentAssignment reads the replicas of topics from Metadata.
func currentAssignment(ctx context.Context, cl *kgo.Client, topics []string) (map[string]map[int32][]int32, []int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, mt)
	}
	r, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]map[int32][]int32{}
	for _, t := range r.Topics {
		if t.Topic == nil {
			continue
		}
		if err := kafkaErr(t.ErrorCode, nil); err != nil {
			return nil, nil, fmt.Errorf("topic %s: %w", *t.Topic, err)
		}
		m := map[int32][]int32{}
		for _, p := range t.Partitions {
			m[p.Partition] = p.Replicas
		}
		out[*t.Topic] = m
	}
	var brokers []int32
	for _, b := range r.Brokers {
		brokers = append(brokers, b.NodeID)
	}
	return out, brokers, nil
}

func encodeReassignment(entries []reassignEntry) string {
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].Topic != entries[j].Topic {
			return entries[i].Topic < entries[j].Topic
		}
		return entries[i].Partition < entries[j].Partition
	})
	for i := range entries {
		if len(entries[i].LogDirs) == 0 {
			entries[i].LogDirs = make([]string, len(entries[i].Replicas))
			for k := range entries[i].LogDirs {
				entries[i].LogDirs[k] = "any"
			}
		}
	}
	b, _ := json.Marshal(reassignJSON{Version: 1, Partitions: entries})
	return string(b)
}

func topicsOf(entries []reassignEntry) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range entries {
		if !seen[e.Topic] {
			seen[e.Topic] = true
			out = append(out, e.Topic)
		}
	}
	sort.Strings(out)
	return out
}

func alterReassignments(ctx context.Context, cl *kgo.Client, entries []reassignEntry, cancel bool) (map[string]error, error) {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	idx := map[string]int{}
	for _, e := range entries {
		i, ok := idx[e.Topic]
		if !ok {
			t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			t.Topic = e.Topic
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			idx[e.Topic] = i
		}
		p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		p.Partition = e.Partition
		if !cancel {
			p.Replicas = e.Replicas
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if err := kafkaErr(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return nil, err
	}
	out := map[string]error{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kafkaErr(p.ErrorCode, p.ErrorMessage); err != nil {
				out[fmt.Sprintf("%s-%d", t.Topic, p.Partition)] = err
			}
		}
	}
	return out, nil
}

// cannotExecuteMessage is Kafka's refusal to start a reassignment while another runs.
const cannotExecuteMessage = "Cannot execute because there is an existing partition assignment.  Use --additional to " +
	"override this and create a new partition assignment in addition to the existing one. The --additional flag can " +
	"also be used to change the throttle by resubmitting the current reassignment."

func reassignExecute(ctx context.Context, cl *kgo.Client, o *reassignOpts, entries []reassignEntry, stdout io.Writer) error {
	active, activeTopics, err := listReassignmentsWithTopics(ctx, cl)
	if err != nil {
		return err
	}
	if !o.additional && len(active) > 0 {
		return errors.New(cannotExecuteMessage)
	}
	cur, _, err := currentAssignment(ctx, cl, topicsOf(entries))
	if err != nil {
		return err
	}
	var rollback []reassignEntry
	var names []string
	for _, e := range entries {
		reps, ok := cur[e.Topic][e.Partition]
		if !ok {
			return fmt.Errorf("Topic %s not found or partition %d does not exist", e.Topic, e.Partition)
		}
		rollback = append(rollback, reassignEntry{Topic: e.Topic, Partition: e.Partition, Replicas: reps})
		names = append(names, fmt.Sprintf("%s-%d", e.Topic, e.Partition))
	}
	fmt.Fprintf(stdout, "Current partition replica assignment\n\n%s\n\nSave this to use as the --reassignment-json-file option during rollback\n", encodeReassignment(rollback))
	if o.throttle.v >= 0 || o.logDirThrottle.v >= 0 {
		fmt.Fprintln(stdout, "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.")
		if o.throttle.v >= 0 {
			moves := proposedMoveMap(active, activeTopics, entries, cur)
			if err := modifyReassignmentThrottle(ctx, cl, moves, o.throttle.v, stdout); err != nil {
				return err
			}
		}
		if o.logDirThrottle.v >= 0 {
			if err := modifyLogDirThrottle(ctx, cl, movingBrokers(replicaLogDirs(entries)), o.logDirThrottle.v, stdout); err != nil {
				return err
			}
		}
	}
	errs, err := alterReassignments(ctx, cl, entries, false)
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		var lines []string
		for _, n := range sortedKeysStr(errs) {
			lines = append(lines, fmt.Sprintf("%s: %v", n, errs[n]))
		}
		return fmt.Errorf("Error reassigning partition(s):\n%s", strings.Join(lines, "\n"))
	}
	sort.Strings(names)
	fmt.Fprintf(stdout, "Successfully started partition reassignment%s for %s\n", plural(len(names)), strings.Join(names, ","))
	if moves := replicaLogDirs(entries); len(moves) > 0 {
		return executeMoves(ctx, cl, moves, o.moveTimeout(), stdout)
	}
	return nil
}

// moveTimeout is --timeout: how long log-dir moves may take to start (10000 ms by default).
func (o *reassignOpts) moveTimeout() time.Duration {
	if o.logDirTimeout.set {
		return time.Duration(o.logDirTimeout.v) * time.Millisecond
	}
	return 10 * time.Second
}

func sortedKeysStr[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// listReassignments returns the in-flight reassignments by "topic-partition".
func listReassignments(ctx context.Context, cl *kgo.Client) (map[string]kmsg.ListPartitionReassignmentsResponseTopicPartition, error) {
	out, _, err := listReassignmentsWithTopics(ctx, cl)
	return out, err
}

// listReassignmentsWithTopics also returns each one's topic by "topic-partition".
func listReassignmentsWithTopics(ctx context.Context, cl *kgo.Client) (map[string]kmsg.ListPartitionReassignmentsResponseTopicPartition, map[string]string, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, nil, err
	}
	if err := kafkaErr(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return nil, nil, err
	}
	out, topics := map[string]kmsg.ListPartitionReassignmentsResponseTopicPartition{}, map[string]string{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			name := fmt.Sprintf("%s-%d", t.Topic, p.Partition)
			out[name], topics[name] = p, t.Topic
		}
	}
	return out, topics, nil
}

func reassignVerify(ctx context.Context, cl *kgo.Client, entries []reassignEntry, preserveThrottles bool, stdout io.Writer) error {
	active, err := listReassignments(ctx, cl)
	if err != nil {
		return err
	}
	cur, _, err := currentAssignment(ctx, cl, topicsOf(entries))
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "Status of partition reassignment:")
	sort.Slice(entries, func(i, j int) bool {
		return entries[i].Topic < entries[j].Topic || entries[i].Topic == entries[j].Topic && entries[i].Partition < entries[j].Partition
	})
	incomplete := false
	for _, e := range entries {
		name := fmt.Sprintf("%s-%d", e.Topic, e.Partition)
		switch reps := cur[e.Topic][e.Partition]; {
		case active[name].Replicas != nil:
			incomplete = true
			fmt.Fprintf(stdout, "Reassignment of partition %s is still in progress.\n", name)
		case equalIDs(reps, e.Replicas):
			fmt.Fprintf(stdout, "Reassignment of partition %s is completed.\n", name)
		default:
			incomplete = true
			fmt.Fprintf(stdout, "There is no active reassignment of partition %s, but replica set is %s rather than %s.\n",
				name, joinIDs(reps), joinIDs(e.Replicas))
		}
	}
	// The log-dir moves (verifyReplicaMoves prints a line, empty when there are none).
	movesOngoing, err := verifyReplicaMoves(ctx, cl, replicaLogDirs(entries), stdout)
	if err != nil {
		return err
	}
	incomplete = incomplete || movesOngoing
	// With no reassignment left anywhere in the cluster, every throttle goes: Kafka cannot
	// tell which brokers earlier moves involved.
	if len(active) == 0 && !movesOngoing && !preserveThrottles {
		if err := clearAllThrottles(ctx, cl, entries, stdout); err != nil {
			return err
		}
	}
	if incomplete {
		return errors.New("some reassignments are not complete")
	}
	return nil
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// reassignCancel is cancelAssignment: the JSON's partitions with a reassignment in progress
// (as Kafka picks them: none being added, or some being removed) are reverted, then their
// log-dir moves, then the throttles go.
func reassignCancel(ctx context.Context, cl *kgo.Client, entries []reassignEntry, preserveThrottles bool, moveTimeout time.Duration, stdout io.Writer) error {
	active, err := listReassignments(ctx, cl)
	if err != nil {
		return err
	}
	var cancel []reassignEntry
	var names []string
	for _, e := range entries {
		n := fmt.Sprintf("%s-%d", e.Topic, e.Partition)
		if a, ok := active[n]; ok && (len(a.AddingReplicas) == 0 || len(a.RemovingReplicas) > 0) {
			cancel = append(cancel, e)
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if len(cancel) > 0 {
		errs, err := alterReassignments(ctx, cl, cancel, true)
		if err != nil {
			return err
		}
		if len(errs) > 0 {
			var lines []string
			for _, n := range sortedKeysStr(errs) {
				lines = append(lines, fmt.Sprintf("%s: %v", n, errs[n]))
			}
			return fmt.Errorf("Error cancelling partition reassignment%s for:\n%s", plural(len(errs)), strings.Join(lines, "\n"))
		}
		fmt.Fprintf(stdout, "Successfully cancelled partition reassignment%s for: %s\n", plural(len(names)), strings.Join(names, ","))
	} else {
		fmt.Fprintln(stdout, "None of the specified partition reassignments are active.")
	}
	if err := cancelReplicaMoves(ctx, cl, replicaLogDirs(entries), moveTimeout, stdout); err != nil {
		return err
	}
	if !preserveThrottles {
		return clearAllThrottles(ctx, cl, entries, stdout)
	}
	return nil
}

func reassignList(ctx context.Context, cl *kgo.Client, stdout io.Writer) error {
	active, err := listReassignments(ctx, cl)
	if err != nil {
		return err
	}
	if len(active) == 0 {
		fmt.Fprintln(stdout, "No partition reassignments found.")
		return nil
	}
	fmt.Fprintln(stdout, "Current partition reassignments:")
	for _, n := range sortedKeysStr(active) {
		p := active[n]
		fmt.Fprintf(stdout, "%s: replicas: %s. adding: %s. removing: %s.\n", n, joinIDs(p.Replicas), joinIDs(p.AddingReplicas), joinIDs(p.RemovingReplicas))
	}
	return nil
}

func reassignGenerate(ctx context.Context, cl *kgo.Client, o *reassignOpts, stdout io.Writer) error {
	data, err := os.ReadFile(o.topicsFile.v)
	if err != nil {
		return err
	}
	var tj struct {
		Topics []struct {
			Topic string `json:"topic"`
		} `json:"topics"`
	}
	if err := json.Unmarshal(data, &tj); err != nil {
		return fmt.Errorf("Unable to parse the topics JSON: %v", err)
	}
	var topics []string
	for _, t := range tj.Topics {
		topics = append(topics, t.Topic)
	}
	if len(topics) == 0 {
		return errors.New("List of topics to reassign contains no topics")
	}
	var brokers []controller.BrokerMetadata
	seen := map[int32]bool{}
	for _, s := range strings.Split(o.brokerList.v, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		if err != nil {
			return fmt.Errorf("invalid --broker-list %q", o.brokerList.v)
		}
		if seen[int32(id)] {
			return fmt.Errorf("Duplicate brokers are not allowed: %s", o.brokerList.v)
		}
		seen[int32(id)] = true
		brokers = append(brokers, controller.BrokerMetadata{ID: int32(id)})
	}
	cur, _, err := currentAssignment(ctx, cl, topics)
	if err != nil {
		return err
	}
	var current, proposed []reassignEntry
	for _, t := range sortedKeysStr(cur) {
		parts := cur[t]
		rf := 0
		for p, reps := range parts {
			current = append(current, reassignEntry{Topic: t, Partition: p, Replicas: reps})
			rf = len(reps)
		}
		a, err := controller.AssignReplicasToBrokers(brokers, int32(len(parts)), int16(rf), -1, -1)
		if err != nil {
			return err
		}
		for p, reps := range a {
			proposed = append(proposed, reassignEntry{Topic: t, Partition: p, Replicas: reps})
		}
	}
	fmt.Fprintf(stdout, "Current partition replica assignment\n%s\n\nProposed partition reassignment configuration\n%s\n",
		encodeReassignment(current), encodeReassignment(proposed))
	return nil
}
