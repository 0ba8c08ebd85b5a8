package main

import (
	"bytes"
	"io"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func strp(s string) *string { return &s }

func TestTopicDescriptionFormat(t *testing.T) {
	id := [16]byte{0x3d, 0x8b, 0x5e, 0xcc, 0x3f, 0x6f, 0x4a, 0x1c, 0x9c, 0x12, 0xf1, 0x2d, 0x29, 0x3a, 0x11, 0xff}
	tests := []struct {
		name string
		d    topicDescription
		want string
	}{
		{"with id and overrides", topicDescription{
			Topic: "orders", ID: id, PartitionCount: 3, ReplicationFactor: 2,
			Configs: []kadm.Config{
				{Key: "cleanup.policy", Value: strp("compact"), Source: kmsg.ConfigSourceDynamicTopicConfig},
				{Key: "segment.bytes", Value: strp("1073741824"), Source: kmsg.ConfigSourceDefaultConfig},
				{Key: "retention.ms", Value: strp("1000"), Source: kmsg.ConfigSourceStaticBrokerConfig},
				{Key: "secret", Value: nil, Sensitive: true, Source: kmsg.ConfigSourceDynamicTopicConfig},
			},
		}, "Topic: orders\tTopicId: PYtezD9vShycEvEtKToR_w\tPartitionCount: 3\tReplicationFactor: 2\tConfigs: cleanup.policy=compact,retention.ms=1000,secret=null"},
		{"zero id, no configs", topicDescription{Topic: "t", PartitionCount: 1, ReplicationFactor: 1},
			"Topic: t\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: "},
		{"marked for deletion", topicDescription{Topic: "t", PartitionCount: 1, ReplicationFactor: 1, MarkedForDeletion: true},
			"Topic: t\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \tMarkedForDeletion: true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.d.String(); got != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestPartitionDescriptionFormat(t *testing.T) {
	tests := []struct {
		name string
		p    partitionDescription
		want string
	}{
		{"leader", partitionDescription{Topic: "orders", Partition: 0, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}},
			"\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3"},
		{"no leader, empty isr", partitionDescription{Topic: "orders", Partition: 7, Leader: -1, Replicas: []int32{2}, ISR: nil},
			"\tTopic: orders\tPartition: 7\tLeader: none\tReplicas: 2\tIsr: "},
		{"reassigning", partitionDescription{Topic: "t", Partition: 1, Leader: 2, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2},
			Reassignment: &reassignment{Replicas: []int32{1, 2, 3}, Adding: []int32{3}, Removing: []int32{1}}},
			"\tTopic: t\tPartition: 1\tLeader: 2\tReplicas: 1,2,3\tIsr: 1,2\tAdding Replicas: 3\tRemoving Replicas: 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.String(); got != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestDescribeFilter(t *testing.T) {
	live := map[int32]bool{1: true, 2: true}
	healthy := partitionDescription{Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinISR: 2}
	under := partitionDescription{Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1}, MinISR: 2}
	deadLeader := partitionDescription{Leader: 3, Replicas: []int32{3}, ISR: []int32{3}, MinISR: 1}
	tests := []struct {
		name string
		o    topicsOpts
		p    partitionDescription
		want bool
	}{
		{"plain describe prints all", topicsOpts{}, healthy, true},
		{"under-replicated hides healthy", topicsOpts{underReplicated: true}, healthy, false},
		{"under-replicated shows under", topicsOpts{underReplicated: true}, under, true},
		{"unavailable shows dead leader", topicsOpts{unavailable: true}, deadLeader, true},
		{"unavailable hides healthy", topicsOpts{unavailable: true}, healthy, false},
		{"under-min-isr", topicsOpts{underMinIsr: true}, under, true},
		{"at-min-isr healthy", topicsOpts{atMinIsr: true}, healthy, true},
		{"at-min-isr under", topicsOpts{atMinIsr: true}, under, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			f := describeFilter{o: &o, live: live}
			if got := f.shouldPrint(tt.p); got != tt.want {
				t.Fatalf("got %v", got)
			}
		})
	}
	if (describeFilter{o: &topicsOpts{underReplicated: true}}).describeConfigs() {
		t.Fatal("report options must hide the topic line")
	}
	if (describeFilter{o: &topicsOpts{topicsWithOverrides: true}}).describePartitions() {
		t.Fatal("--topics-with-overrides hides partitions")
	}
	if rf := replicationFactor([]int32{1, 2, 3, 4}, &reassignment{Replicas: []int32{1, 2, 3, 4}, Adding: []int32{4}}); rf != 3 {
		t.Fatalf("rf during reassignment %d", rf)
	}
}

func TestParseTopicsArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, o *topicsOpts)
	}{
		{"create", []string{"--bootstrap-server", "h:9092", "--create", "--topic", "t", "--partitions", "3", "--replication-factor", "2", "--config", "cleanup.policy=compact", "--config", "retention.ms = 5"}, "",
			func(t *testing.T, o *topicsOpts) {
				if !o.create || o.partitions.v != 3 || o.replicationFactor.v != 2 ||
					!reflect.DeepEqual(o.parsedConfigs, map[string]string{"cleanup.policy": "compact", "retention.ms": "5"}) {
					t.Fatalf("%+v", o)
				}
			}},
		{"list needs no topic", []string{"--bootstrap-server=h:9092", "--list"}, "", nil},
		{"describe with report", []string{"--bootstrap-server", "h:9092", "--describe", "--under-replicated-partitions"}, "", nil},
		{"replica assignment", []string{"--bootstrap-server", "h:1", "--create", "--topic", "t", "--replica-assignment", "1:2,2:3"}, "",
			func(t *testing.T, o *topicsOpts) {
				if !reflect.DeepEqual(o.parsedAssignment, [][]int32{{1, 2}, {2, 3}}) {
					t.Fatal(o.parsedAssignment)
				}
			}},
		{"no action", []string{"--bootstrap-server", "h:1"}, "exactly one action", nil},
		{"two actions", []string{"--bootstrap-server", "h:1", "--list", "--describe"}, "exactly one action", nil},
		{"no bootstrap", []string{"--list"}, "bootstrap-server", nil},
		{"create without topic", []string{"--bootstrap-server", "h:1", "--create"}, "topic", nil},
		{"alter needs partitions", []string{"--bootstrap-server", "h:1", "--alter", "--topic", "t"}, "partitions", nil},
		{"alter with config", []string{"--bootstrap-server", "h:1", "--alter", "--topic", "t", "--partitions", "2", "--config", "a=b"}, "kafka-configs", nil},
		{"rf with describe", []string{"--bootstrap-server", "h:1", "--describe", "--replication-factor", "2"}, "replication-factor", nil},
		{"report with list", []string{"--bootstrap-server", "h:1", "--list", "--under-replicated-partitions"}, "under-replicated-partitions", nil},
		{"bad config", []string{"--bootstrap-server", "h:1", "--create", "--topic", "t", "--config", "a=b=c"}, "requirement failed: Invalid topic config", nil},
		{"dup assignment", []string{"--bootstrap-server", "h:1", "--create", "--topic", "t", "--replica-assignment", "1:1"}, "duplicate entries: 1", nil},
		{"uneven assignment", []string{"--bootstrap-server", "h:1", "--create", "--topic", "t", "--replica-assignment", "1:2,3"}, "Partition 1 has different replication factor", nil},
		{"assignment with partitions", []string{"--bootstrap-server", "h:1", "--create", "--topic", "t", "--replica-assignment", "1", "--partitions", "1"}, "replica-assignment", nil},
		{"partitions not a number", []string{"--bootstrap-server", "h:1", "--create", "--topic", "t", "--partitions", "x"}, "not a number", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, _, err := parseTopicsArgs(tt.args, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil {
				tt.check(t, o)
			}
		})
	}
}

func TestFilterTopics(t *testing.T) {
	all := []string{"b", "a", "__consumer_offsets", "orders.v1", "ordersXv1"}
	tests := []struct {
		topic   *optString
		exclude bool
		want    []string
	}{
		{nil, false, []string{"__consumer_offsets", "a", "b", "orders.v1", "ordersXv1"}},
		{nil, true, []string{"a", "b", "orders.v1", "ordersXv1"}},
		{&optString{v: "a", set: true}, false, []string{"a"}},
		{&optString{v: "a,b", set: true}, false, []string{"a", "b"}},
		{&optString{v: `"orders\.v1"`, set: true}, false, []string{"orders.v1"}},
		{&optString{v: "orders.v1", set: true}, false, []string{"orders.v1", "ordersXv1"}},
		{&optString{v: "__.*", set: true}, true, nil},
		{&optString{v: "c", set: true}, false, nil},
	}
	for _, tt := range tests {
		got, err := filterTopics(all, tt.topic, tt.exclude)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%+v exclude=%v: got %q want %q", tt.topic, tt.exclude, got, tt.want)
		}
	}
}

// TestTopicsAgainstKfake runs the whole command against franz-go's in-memory Kafka.
func TestTopicsAgainstKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bs := c.ListenAddrs()[0]
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := runTopics(append([]string{"--bootstrap-server", bs}, args...), nil, &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, out, errs := run("--create", "--topic", "orders", "--partitions", "2", "--replication-factor", "1", "--config", "cleanup.policy=compact"); code != 0 || out != "Created topic orders.\n" {
		t.Fatalf("create: %d %q %q", code, out, errs)
	}
	if code, out, _ := run("--create", "--topic", "my_topic"); code != 0 || !strings.HasPrefix(out, "WARNING: Due to limitations in metric names") || !strings.HasSuffix(out, "Created topic my_topic.\n") {
		t.Fatalf("create with defaults: %d %q", code, out)
	}
	if code, out, _ := run("--create", "--topic", "orders"); code != 1 || !strings.HasPrefix(out, "Error while executing topic command : ") {
		t.Fatalf("create existing: %d %q", code, out)
	}
	if code, out, _ := run("--create", "--topic", "orders", "--if-not-exists"); code != 0 || out != "" {
		t.Fatalf("create existing --if-not-exists: %d %q", code, out)
	}
	if code, out, _ := run("--list"); code != 0 || out != "my_topic\norders\n" {
		t.Fatalf("list: %d %q", code, out)
	}
	code, out, _ := run("--describe", "--topic", "orders")
	want := regexp.MustCompile(`^Topic: orders\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 2\tReplicationFactor: 1\tConfigs: [^\n]*cleanup.policy=compact[^\n]*\n` +
		`\tTopic: orders\tPartition: 0\tLeader: \d+\tReplicas: \d+\tIsr: \d+\n` +
		`\tTopic: orders\tPartition: 1\tLeader: \d+\tReplicas: \d+\tIsr: \d+\n$`)
	if code != 0 || !want.MatchString(out) {
		t.Fatalf("describe: %d %q", code, out)
	}
	if code, out, _ := run("--describe", "--under-replicated-partitions"); code != 0 || out != "" {
		t.Fatalf("describe under-replicated: %d %q", code, out)
	}
	if code, out, _ := run("--alter", "--topic", "orders", "--partitions", "3"); code != 0 || out != "" {
		t.Fatalf("alter: %d %q", code, out)
	}
	if _, out, _ := run("--describe", "--topic", "orders"); !strings.Contains(out, "PartitionCount: 3") {
		t.Fatalf("after alter: %q", out)
	}
	if code, out, _ := run("--describe", "--topic", "nope"); code != 1 || out != "Error while executing topic command : Topic 'nope' does not exist as expected\n" {
		t.Fatalf("describe missing: %d %q", code, out)
	}
	if code, out, _ := run("--delete", "--topic", "orders"); code != 0 || out != "" {
		t.Fatalf("delete: %d %q", code, out)
	}
	if _, out, _ := run("--list"); out != "my_topic\n" {
		t.Fatalf("list after delete: %q", out)
	}
}
