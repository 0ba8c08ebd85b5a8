package main

// topics mirrors Kafka 3.7's kafka-topics.sh (kafka.admin.TopicCommand, AdminClientTopicService)
// with its flags, checks, messages and output formats, over franz-go's kadm.

import (
	"context"
	"encoding/base64"
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

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type topicsOpts struct {
	bootstrap                                           string
	create, list, describe, del, alter                  bool
	topic                                               optString
	partitions, replicationFactor                       optInt
	configs                                             []string
	replicaAssignment                                   optString
	underReplicated, unavailable, underMinIsr, atMinIsr bool
	topicsWithOverrides, ifExists, ifNotExists, exclInt bool
	commandConfig                                       optString
	parsedConfigs                                       map[string]string
	parsedAssignment                                    [][]int32
	timeout                                             time.Duration
}

func parseTopicsArgs(args []string, stderr io.Writer) (*topicsOpts, *flag.FlagSet, error) {
	o := &topicsOpts{timeout: 30 * time.Second}
	fs := newFlagSet("samsa topics", stderr)
	var configs multiFlag
	var bootstrap optString
	fs.Var(&bootstrap, "bootstrap-server", "REQUIRED: The Kafka server to connect to.")
	fs.Var(&o.commandConfig, "command-config", "Property file containing configs to be passed to Admin Client.")
	fs.BoolVar(&o.list, "list", false, "List all available topics.")
	fs.BoolVar(&o.create, "create", false, "Create a new topic.")
	fs.BoolVar(&o.del, "delete", false, "Delete a topic")
	fs.BoolVar(&o.alter, "alter", false, "Alter the number of partitions and replica assignment.")
	fs.BoolVar(&o.describe, "describe", false, "List details for the given topics.")
	fs.Var(&o.topic, "topic", "The topic to create, alter, describe or delete. It also accepts a regular expression, except for --create option.")
	fs.Var(&configs, "config", "A topic configuration override for the topic being created (name=value, repeatable).")
	fs.Var(&o.partitions, "partitions", "The number of partitions for the topic being created or altered. If not supplied for create, defaults to the cluster default.")
	fs.Var(&o.replicationFactor, "replication-factor", "The replication factor for each partition in the topic being created. If not supplied, defaults to the cluster default.")
	fs.Var(&o.replicaAssignment, "replica-assignment", "A list of manual partition-to-broker assignments for the topic being created or altered (b1:b2,b3:b4,...).")
	fs.BoolVar(&o.underReplicated, "under-replicated-partitions", false, "if set when describing topics, only show under replicated partitions")
	fs.BoolVar(&o.unavailable, "unavailable-partitions", false, "if set when describing topics, only show partitions whose leader is not available")
	fs.BoolVar(&o.underMinIsr, "under-min-isr-partitions", false, "if set when describing topics, only show partitions whose isr count is less than the configured minimum.")
	fs.BoolVar(&o.atMinIsr, "at-min-isr-partitions", false, "if set when describing topics, only show partitions whose isr count is equal to the configured minimum.")
	fs.BoolVar(&o.topicsWithOverrides, "topics-with-overrides", false, "if set when describing topics, only show topics that have overridden configs")
	fs.BoolVar(&o.ifExists, "if-exists", false, "if set when altering or deleting or describing topics, the action will only execute if the topic exists.")
	fs.BoolVar(&o.ifNotExists, "if-not-exists", false, "if set when creating topics, the action will only execute if the topic does not already exist.")
	fs.BoolVar(&o.exclInt, "exclude-internal", false, "exclude internal topics when running list or describe command. The internal topics will be listed by default")
	var force, disableRackAware bool
	fs.BoolVar(&force, "force", false, "Suppress console prompts (kept for compatibility)")
	fs.BoolVar(&disableRackAware, "disable-rack-aware", false, "Disable rack aware replica assignment (accepted; the broker assigns)")
	if len(args) == 0 {
		return nil, fs, usageErr("Create, delete, describe, or change a topic.")
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, fs, err
	}
	o.bootstrap, o.configs = bootstrap.v, configs
	if err := o.check(); err != nil {
		return nil, fs, err
	}
	// Kafka parses these inside the command, so their errors print as command errors.
	var err error
	if o.parsedConfigs, err = parseTopicConfigs(o.configs); err != nil {
		return nil, fs, fmt.Errorf("%w%w", errCommand, err)
	}
	if o.replicaAssignment.set && o.replicaAssignment.v != "" {
		if o.parsedAssignment, err = parseReplicaAssignment(o.replicaAssignment.v); err != nil {
			return nil, fs, fmt.Errorf("%w%w", errCommand, err)
		}
	}
	return o, fs, nil
}

// check applies TopicCommandOptions.checkArgs.
func (o *topicsOpts) check() error {
	if countSet(o.create, o.list, o.alter, o.describe, o.del) != 1 {
		return usageErr("Command must include exactly one action: --list, --describe, --create, --alter or --delete")
	}
	if o.bootstrap == "" {
		return usageErr("Missing required argument \"[bootstrap-server]\"")
	}
	if o.describe && o.ifExists && !o.topic.set {
		return usageErr("Missing required argument \"[topic]\"")
	}
	if !o.list && !o.describe && !o.topic.set {
		return usageErr("Missing required argument \"[topic]\"")
	}
	if o.alter {
		if len(o.configs) > 0 {
			return usageErr("Option combination \"[bootstrap-server],[config]\" can't be used with option \"[alter]\" (the kafka-configs CLI supports altering topic configs with a --bootstrap-server option)")
		}
		if !o.partitions.set {
			return usageErr("Missing required argument \"[partitions]\"")
		}
	}
	invalid := func(opt string, has bool, allowedWith ...bool) error {
		if !has {
			return nil
		}
		for _, a := range allowedWith {
			if a {
				return nil
			}
		}
		return usageErr("Option \"[%s]\" can't be used with the given action", opt)
	}
	reports := countSet(o.underReplicated, o.unavailable, o.underMinIsr, o.atMinIsr)
	for _, err := range []error{
		invalid("config", len(o.configs) > 0, o.create, o.alter),
		invalid("partitions", o.partitions.set, o.create, o.alter),
		invalid("replication-factor", o.replicationFactor.set, o.create),
		invalid("replica-assignment", o.replicaAssignment.set, o.create, o.alter),
		invalid("under-replicated-partitions", o.underReplicated, o.describe),
		invalid("unavailable-partitions", o.unavailable, o.describe),
		invalid("under-min-isr-partitions", o.underMinIsr, o.describe),
		invalid("at-min-isr-partitions", o.atMinIsr, o.describe),
		invalid("topics-with-overrides", o.topicsWithOverrides, o.describe),
		invalid("if-exists", o.ifExists, o.alter, o.del, o.describe),
		invalid("if-not-exists", o.ifNotExists, o.create),
		invalid("exclude-internal", o.exclInt, o.list, o.describe),
	} {
		if err != nil {
			return err
		}
	}
	if o.create && o.replicaAssignment.set && (o.partitions.set || o.replicationFactor.set) {
		return usageErr("Option \"[replica-assignment]\" can't be used with option \"[partitions]\" or \"[replication-factor]\"")
	}
	if reports > 1 || (reports > 0 && o.topicsWithOverrides) {
		return usageErr("Only one of --under-replicated-partitions, --unavailable-partitions, --under-min-isr-partitions, --at-min-isr-partitions and --topics-with-overrides may be given")
	}
	return nil
}

// parseTopicConfigs parses --config name=value as TopicCommand.parseTopicConfigsToBeAdded:
// split on `\s*=\s*` into exactly two parts.
func parseTopicConfigs(pairs []string) (map[string]string, error) {
	m := make(map[string]string)
	re := regexp.MustCompile(`\s*=\s*`)
	for _, p := range pairs {
		kv := re.Split(p, -1)
		if len(kv) != 2 {
			// Scala's require() prefixes "requirement failed: ".
			return nil, errors.New("requirement failed: Invalid topic config: all configs to be added must be in the format \"key=val\".")
		}
		m[strings.TrimSpace(kv[0])] = strings.TrimSpace(kv[1])
	}
	return m, nil
}

// parseReplicaAssignment parses "b1:b2,b3:b4" (TopicCommand.parseReplicaAssignment).
func parseReplicaAssignment(s string) ([][]int32, error) {
	var out [][]int32
	for i, part := range strings.Split(s, ",") {
		var brokers []int32
		seen := map[int32]bool{}
		var dups []string
		for _, b := range strings.Split(part, ":") {
			n, err := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
			if err != nil {
				return nil, fmt.Errorf("For input string: \"%s\"", strings.TrimSpace(b))
			}
			if seen[int32(n)] {
				dups = append(dups, strconv.Itoa(int(n)))
			}
			seen[int32(n)] = true
			brokers = append(brokers, int32(n))
		}
		if len(dups) > 0 {
			return nil, fmt.Errorf("Partition replica lists may not contain duplicate entries: %s", strings.Join(dups, ","))
		}
		if len(out) > 0 && len(brokers) != len(out[0]) {
			return nil, fmt.Errorf("Partition %d has different replication factor: %v", i, brokers)
		}
		out = append(out, brokers)
	}
	return out, nil
}

func isInternalTopic(t string) bool { return t == "__consumer_offsets" || t == "__transaction_state" }

// includeList is Kafka's IncludeList topic filter: a Java regex that must match the whole
// name, commas meaning alternation, blanks and surrounding quotes dropped.
func includeList(raw string) (*regexp.Regexp, error) {
	r := strings.TrimSpace(raw)
	r = strings.ReplaceAll(r, ",", "|")
	r = strings.ReplaceAll(r, " ", "")
	r = strings.TrimLeft(r, `"'`)
	r = strings.TrimRight(r, `"'`)
	re, err := regexp.Compile("^(?:" + r + ")$")
	if err != nil {
		return nil, fmt.Errorf("%s is an invalid regex.", raw)
	}
	return re, nil
}

// filterTopics is TopicCommand.doGetTopics over a sorted list of all topics.
func filterTopics(all []string, topic *optString, excludeInternal bool) ([]string, error) {
	sorted := append([]string(nil), all...)
	sort.Strings(sorted)
	var re *regexp.Regexp
	if topic != nil && topic.set {
		var err error
		if re, err = includeList(topic.v); err != nil {
			return nil, err
		}
	}
	var out []string
	for _, t := range sorted {
		if excludeInternal && isInternalTopic(t) {
			continue
		}
		if re != nil && !re.MatchString(t) {
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

// hasCollisionChars is Topic.hasCollisionChars: '.' and '_' collide in metric names.
func hasCollisionChars(t string) bool { return strings.ContainsAny(t, "._") }

// kafkaUUID formats a topic id as Kafka's Uuid.toString: URL-safe base64 without padding.
func kafkaUUID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// topicDescription is TopicCommand.TopicDescription.
type topicDescription struct {
	Topic             string
	ID                [16]byte
	PartitionCount    int
	ReplicationFactor int
	Configs           []kadm.Config // non-default entries are printed
	MarkedForDeletion bool
}

func (d topicDescription) String() string {
	var cfgs []string
	for _, c := range d.Configs {
		if c.Source == kmsg.ConfigSourceDefaultConfig {
			continue
		}
		v := "null"
		if c.Value != nil {
			v = *c.Value
		}
		cfgs = append(cfgs, c.Key+"="+v)
	}
	var b strings.Builder
	b.WriteString("Topic: " + d.Topic)
	if d.ID != ([16]byte{}) {
		b.WriteString("\tTopicId: " + kafkaUUID(d.ID))
	}
	fmt.Fprintf(&b, "\tPartitionCount: %d", d.PartitionCount)
	fmt.Fprintf(&b, "\tReplicationFactor: %d", d.ReplicationFactor)
	b.WriteString("\tConfigs: " + strings.Join(cfgs, ","))
	if d.MarkedForDeletion {
		b.WriteString("\tMarkedForDeletion: true")
	}
	return b.String()
}

// reassignment is the part of a PartitionReassignment the description uses.
type reassignment struct {
	Replicas, Adding, Removing []int32
}

// partitionDescription is TopicCommand.PartitionDescription.
type partitionDescription struct {
	Topic             string
	Partition         int32
	Leader            int32 // -1: none
	Replicas, ISR     []int32
	MinISR            int // -1: unknown
	Reassignment      *reassignment
	MarkedForDeletion bool
}

func (p partitionDescription) hasLeader() bool { return p.Leader >= 0 }

func (p partitionDescription) replicationFactor() int {
	return replicationFactor(p.Replicas, p.Reassignment)
}

// replicationFactor is TopicCommand.getReplicationFactor: during a reassignment, the target
// replica count.
func replicationFactor(replicas []int32, ra *reassignment) int {
	if ra != nil {
		changing := map[int32]bool{}
		for _, r := range ra.Adding {
			changing[r] = true
		}
		for _, r := range ra.Removing {
			changing[r] = true
		}
		inProgress := false
		for _, r := range replicas {
			inProgress = inProgress || changing[r]
		}
		if inProgress {
			adding := map[int32]bool{}
			for _, r := range ra.Adding {
				adding[r] = true
			}
			n := 0
			for _, r := range ra.Replicas {
				if !adding[r] {
					n++
				}
			}
			return n
		}
	}
	return len(replicas)
}

func (p partitionDescription) isUnderReplicated() bool {
	return p.replicationFactor()-len(p.ISR) > 0
}

func (p partitionDescription) isUnderMinIsr() bool {
	return !p.hasLeader() || (p.MinISR >= 0 && len(p.ISR) < p.MinISR)
}

func (p partitionDescription) isAtMinIsr() bool { return p.MinISR >= 0 && len(p.ISR) == p.MinISR }

func (p partitionDescription) hasUnavailablePartitions(live map[int32]bool) bool {
	return !p.hasLeader() || !live[p.Leader]
}

func (p partitionDescription) String() string {
	var b strings.Builder
	b.WriteString("\tTopic: " + p.Topic)
	fmt.Fprintf(&b, "\tPartition: %d", p.Partition)
	if p.hasLeader() {
		fmt.Fprintf(&b, "\tLeader: %d", p.Leader)
	} else {
		b.WriteString("\tLeader: none")
	}
	b.WriteString("\tReplicas: " + joinIDs(p.Replicas))
	b.WriteString("\tIsr: " + joinIDs(p.ISR))
	if p.Reassignment != nil {
		b.WriteString("\tAdding Replicas: " + joinIDs(p.Reassignment.Adding))
		b.WriteString("\tRemoving Replicas: " + joinIDs(p.Reassignment.Removing))
	}
	if p.MarkedForDeletion {
		b.WriteString("\tMarkedForDeletion: true")
	}
	return b.String()
}

// describeFilter is TopicCommand.DescribeOptions.
type describeFilter struct {
	o    *topicsOpts
	live map[int32]bool
}

func (f describeFilter) describeConfigs() bool {
	return !f.o.unavailable && !f.o.underReplicated && !f.o.underMinIsr && !f.o.atMinIsr
}

func (f describeFilter) describePartitions() bool { return !f.o.topicsWithOverrides }

func (f describeFilter) shouldPrint(p partitionDescription) bool {
	return f.describeConfigs() ||
		(f.o.underReplicated && p.isUnderReplicated()) ||
		(f.o.unavailable && p.hasUnavailablePartitions(f.live)) ||
		(f.o.underMinIsr && p.isUnderMinIsr()) ||
		(f.o.atMinIsr && p.isAtMinIsr())
}

// runTopics is kafka-topics.sh.
func runTopics(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, fs, err := parseTopicsArgs(args, stderr)
	if err != nil {
		if errors.Is(err, errCommand) {
			fmt.Fprintln(stdout, "Error while executing topic command : "+strings.TrimPrefix(err.Error(), errCommand.Error()))
			return 1
		}
		return reportUsage(fs, stderr, err)
	}
	sec, ok := adminClientSecurity("topics", "command-config", o.commandConfig, stderr)
	if !ok {
		return 1
	}
	err = withAdminClient(o.bootstrap, "adminclient-1", o.timeout, sec, func(ctx context.Context, cl *kgo.Client) error {
		adm := kadm.NewClient(cl)
		adm.SetTimeoutMillis(30000) // request.timeout.ms of Kafka's admin client
		switch {
		case o.create:
			return topicsCreate(ctx, cl, o, stdout)
		case o.list:
			return topicsList(ctx, adm, o, stdout)
		case o.describe:
			return topicsDescribe(ctx, adm, o, stdout)
		case o.del:
			return topicsDelete(ctx, adm, o)
		case o.alter:
			return topicsAlter(ctx, cl, adm, o)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(stdout, "Error while executing topic command : "+err.Error())
		return 1
	}
	return 0
}

// errCommand marks errors TopicCommand raises while running (printed on stdout as "Error while
// executing topic command : ...") rather than as usage errors. Its text is empty so wrapping
// adds nothing to the message.
var errCommand = errors.New("")

func splitServers(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// kafkaErr renders a broker error as the Java exception message would: the broker's message
// if it sent one, else Kafka's default message for the code.
func kafkaErr(code int16, msg *string) error {
	if code == 0 {
		return nil
	}
	if msg != nil && *msg != "" {
		return errors.New(*msg)
	}
	if e := kerr.ErrorForCode(code); e != nil {
		var ke *kerr.Error
		if errors.As(e, &ke) && ke.Description != "" {
			return errors.New(ke.Description)
		}
		return e
	}
	return nil
}

func topicsCreate(ctx context.Context, cl *kgo.Client, o *topicsOpts, stdout io.Writer) error {
	name := o.topic.v
	if hasCollisionChars(name) {
		fmt.Fprintln(stdout, "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could collide. To avoid issues it is best to use either, but not both.")
	}
	if o.replicationFactor.set && (o.replicationFactor.v > math.MaxInt16 || o.replicationFactor.v < 1) {
		return fmt.Errorf("The replication factor must be between 1 and %d inclusive", math.MaxInt16)
	}
	if o.partitions.set && o.partitions.v < 1 {
		return errors.New("The partitions must be greater than 0")
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(o.timeout / time.Millisecond)
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic = name
	t.NumPartitions, t.ReplicationFactor = -1, -1 // the broker's defaults (KIP-464)
	if o.parsedAssignment != nil {
		for p, replicas := range o.parsedAssignment {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(p), replicas
			t.ReplicaAssignment = append(t.ReplicaAssignment, a)
		}
	} else {
		if o.partitions.set {
			t.NumPartitions = int32(o.partitions.v)
		}
		if o.replicationFactor.set {
			t.ReplicationFactor = int16(o.replicationFactor.v)
		}
	}
	keys := make([]string, 0, len(o.parsedConfigs))
	for k := range o.parsedConfigs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		v := o.parsedConfigs[k]
		c.Name, c.Value = k, &v
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, rt := range resp.Topics {
		if err := kafkaErr(rt.ErrorCode, rt.ErrorMessage); err != nil {
			if rt.ErrorCode == kerr.TopicAlreadyExists.Code && o.ifNotExists {
				return nil
			}
			return err
		}
		// Created: a describe through any broker must find it (topics_wait.go). Bounded by
		// the command's timeout; the topic exists either way.
		_ = waitTopicOnAllBrokers(ctx, cl, name, rt.NumPartitions)
	}
	fmt.Fprintf(stdout, "Created topic %s.\n", name)
	return nil
}

func getTopics(ctx context.Context, adm *kadm.Client, o *topicsOpts) ([]string, error) {
	var all kadm.TopicDetails
	var err error
	if o.exclInt {
		all, err = adm.ListTopics(ctx)
	} else {
		all, err = adm.ListTopicsWithInternal(ctx)
	}
	if err != nil {
		return nil, err
	}
	return filterTopics(all.Names(), &o.topic, o.exclInt)
}

// existingTopics is getTopics followed by ensureTopicExists, as TopicCommand's alter,
// describe and delete begin.
func existingTopics(ctx context.Context, adm *kadm.Client, o *topicsOpts) ([]string, error) {
	topics, err := getTopics(ctx, adm, o)
	if err != nil {
		return nil, err
	}
	if err := ensureTopicExists(topics, o); err != nil {
		return nil, err
	}
	return topics, nil
}

// ensureTopicExists is TopicCommand.ensureTopicExists.
func ensureTopicExists(found []string, o *topicsOpts) error {
	if o.topic.set && !o.ifExists && len(found) == 0 {
		return fmt.Errorf("Topic '%s' does not exist as expected", o.topic.v)
	}
	return nil
}

func topicsList(ctx context.Context, adm *kadm.Client, o *topicsOpts, stdout io.Writer) error {
	topics, err := getTopics(ctx, adm, o)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, strings.Join(topics, "\n"))
	return nil
}

func topicsDelete(ctx context.Context, adm *kadm.Client, o *topicsOpts) error {
	topics, err := existingTopics(ctx, adm, o)
	if err != nil || len(topics) == 0 {
		return err
	}
	resps, err := adm.DeleteTopics(ctx, topics...)
	if err != nil {
		return err
	}
	for _, t := range topics {
		if r, ok := resps[t]; ok && r.Err != nil {
			return errText(r.Err, r.ErrMessage)
		}
	}
	return nil
}

func topicsAlter(ctx context.Context, cl *kgo.Client, adm *kadm.Client, o *topicsOpts) error {
	topics, err := existingTopics(ctx, adm, o)
	if err != nil || len(topics) == 0 {
		return err
	}
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = int32(o.timeout / time.Millisecond)
	var existing kadm.TopicDetails
	if o.parsedAssignment != nil {
		if existing, err = adm.ListTopicsWithInternal(ctx, topics...); err != nil {
			return err
		}
	}
	for _, name := range topics {
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic, t.Count = name, int32(o.partitions.v)
		if o.parsedAssignment != nil {
			start := len(existing[name].Partitions)
			for i := start; i < len(o.parsedAssignment); i++ {
				a := kmsg.NewCreatePartitionsRequestTopicAssignment()
				a.Replicas = o.parsedAssignment[i]
				t.Assignment = append(t.Assignment, a)
			}
		}
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, rt := range resp.Topics {
		if err := kafkaErr(rt.ErrorCode, rt.ErrorMessage); err != nil {
			return err
		}
	}
	return nil
}

func errText(err error, msg string) error {
	if msg != "" {
		return errors.New(msg)
	}
	var ke *kerr.Error
	if errors.As(err, &ke) && ke.Description != "" {
		return errors.New(ke.Description)
	}
	return err
}

func topicsDescribe(ctx context.Context, adm *kadm.Client, o *topicsOpts, stdout io.Writer) error {
	topics, err := existingTopics(ctx, adm, o)
	if err != nil || len(topics) == 0 {
		return err
	}
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return err
	}
	for _, t := range topics {
		if td, ok := md.Topics[t]; ok && td.Err != nil {
			return errText(td.Err, "")
		}
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return err
	}
	configs := map[string][]kadm.Config{}
	for _, rc := range rcs {
		if rc.Err != nil {
			return errText(rc.Err, rc.ErrMessage)
		}
		configs[rc.Name] = rc.Configs
	}
	live := map[int32]bool{}
	for _, b := range md.Brokers {
		live[b.NodeID] = true
	}
	// Reassignments are optional: Kafka ignores UnsupportedVersion/ClusterAuthorization here.
	reassignments := map[string]map[int32]*reassignment{}
	if ras, err := adm.ListPartitionReassignments(ctx, md.Topics.TopicsSet()); err == nil {
		ras.Each(func(r kadm.ListPartitionReassignmentsResponse) {
			if reassignments[r.Topic] == nil {
				reassignments[r.Topic] = map[int32]*reassignment{}
			}
			reassignments[r.Topic][r.Partition] = &reassignment{Replicas: r.Replicas, Adding: r.AddingReplicas, Removing: r.RemovingReplicas}
		})
	}
	f := describeFilter{o: o, live: live}
	for _, t := range topics {
		td := md.Topics[t]
		parts := td.Partitions.Sorted()
		minISR := -1
		for _, c := range configs[t] {
			if c.Key == "min.insync.replicas" && c.Value != nil {
				if n, err := strconv.Atoi(*c.Value); err == nil {
					minISR = n
				}
			}
		}
		if f.describeConfigs() {
			hasNonDefault := false
			for _, c := range configs[t] {
				hasNonDefault = hasNonDefault || c.Source != kmsg.ConfigSourceDefaultConfig
			}
			if (!o.topicsWithOverrides || hasNonDefault) && len(parts) > 0 {
				desc := topicDescription{
					Topic:             t,
					ID:                td.ID,
					PartitionCount:    len(parts),
					ReplicationFactor: replicationFactor(parts[0].Replicas, reassignments[t][parts[0].Partition]),
					Configs:           configs[t],
				}
				fmt.Fprintln(stdout, desc.String())
			}
		}
		if f.describePartitions() {
			for _, p := range parts {
				pd := partitionDescription{
					Topic: t, Partition: p.Partition, Leader: p.Leader,
					Replicas: p.Replicas, ISR: p.ISR, MinISR: minISR,
					Reassignment: reassignments[t][p.Partition],
				}
				if pd.Leader >= 0 && !live[pd.Leader] {
					// The Java client's Node lookup fails for a leader it has no broker for.
					pd.Leader = -1
				}
				if f.shouldPrint(pd) {
					fmt.Fprintln(stdout, pd.String())
				}
			}
		}
	}
	return nil
}
