package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestGetOffsetsFilters(t *testing.T) {
	mk := func(args ...string) tpFilter {
		t.Helper()
		o, _, err := parseGetOffsetsArgs(append([]string{"--bootstrap-server", "h:1"}, args...), nil)
		if err != nil {
			t.Fatal(err)
		}
		f, err := buildGetOffsetsFilter(o)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := mk("--topic-partitions", "a.*:1-3,b,:5,c:-2,d:4-")
	for _, tt := range []struct {
		topic string
		p     int32
		want  bool
	}{
		{"ab", 0, false}, {"ab", 1, true}, {"ab", 3, false}, {"b", 9, true}, {"bb", 5, true}, {"zz", 5, true},
		{"c", 1, true}, {"c", 2, false}, {"d", 3, false}, {"d", 400, true},
	} {
		if got := f.partitionAllowed(tt.topic, tt.p); got != tt.want {
			t.Errorf("%s-%d: %v", tt.topic, tt.p, got)
		}
	}
	if f := mk("--topic-partitions", "ab:1,"); f.partitionAllowed("zz", 1) || !f.partitionAllowed("ab", 1) {
		t.Error("a trailing comma adds no rule (String.split)")
	}
	f = mk("--topic", "x,y", "--partitions", "0,2,")
	if !f.partitionAllowed("y", 2) || f.partitionAllowed("y", 1) || f.topicAllowed("xy") {
		t.Error("topic and partitions filter")
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--bootstrap-server", "h:1", "--topic", "t", "--topic-partitions", "t"}, "Error occurred: --topic-partitions cannot be used with --topic or --partitions\n"},
		{[]string{"--bootstrap-server", "h:1", "--time", "yesterday"}, "Error occurred: Malformed time argument yesterday. Please use -1 or latest / -2 or earliest / -3 or max-timestamp, or a specified long format timestamp\n"},
		{[]string{"--bootstrap-server", "h:1", "--partitions", "0,x"}, "Error occurred: --partitions expects a comma separated list of numeric partition ids, but received: 0,x\n"},
		{[]string{"--bootstrap-server", "h:1", "--topic-partitions", "a:b"}, "Error occurred: org.apache.kafka.tools.TerseException: Invalid rule specification: a:b\n"},
	} {
		code, out, errb := runTool(append([]string{"get-offsets"}, tt.args...)...)
		if code != 1 || out != "" || errb != tt.want {
			t.Errorf("%v: code %d out %q err %q", tt.args, code, out, errb)
		}
	}
	code, _, errb := runTool("get-offsets", "--topic", "t")
	if code != 1 || !strings.HasPrefix(errb, "Missing required argument \"[broker-list]\"\n") {
		t.Errorf("no server: %d %q", code, errb)
	}
	code, _, errb = runTool("get-offsets", "--bootstrap-server", "localhost")
	if code != 1 || !strings.HasPrefix(errb, "Please provide valid host:port like host1:9091,host2:9092\n\n") {
		t.Errorf("bad server: %d %q", code, errb)
	}
}

// Against live brokers: every time spec, the filters, Kafka's ordering (by "topic-partition"
// string: t-10 before t-2) and the empty-match error.
func TestGetOffsetsEndToEnd(t *testing.T) {
	t.Parallel()
	c := startToolBrokers(t, 2, 1)
	createToolTopic(t, c, "go", 11, 1, 0)
	createToolTopic(t, c, "gx", 1, 2, 2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i, ts := range []int64{1000, 3000, 5000} {
		recs = append(recs, &kgo.Record{Topic: "go", Partition: 2, Value: []byte{byte(i)}, Timestamp: time.UnixMilli(ts)})
	}
	recs = append(recs, &kgo.Record{Topic: "go", Partition: 10, Value: []byte("x"), Timestamp: time.UnixMilli(9000)})
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		code, out, errb := runTool(append([]string{"get-offsets", "--bootstrap-server", c.bootstrap()}, args...)...)
		if code != 0 || errb != "" {
			t.Fatalf("%v: code %d\n%s\n%s", args, code, out, errb)
		}
		return out
	}
	all := "go:0:0\ngo:1:0\ngo:10:1\ngo:2:3\ngo:3:0\ngo:4:0\ngo:5:0\ngo:6:0\ngo:7:0\ngo:8:0\ngo:9:0\ngx:0:2\n"
	if got := run(); got != all {
		t.Errorf("latest, all topics:\n%s", got)
	}
	if got := run("--topic", "go", "--partitions", "2,10", "--time", "-1"); got != "go:10:1\ngo:2:3\n" {
		t.Errorf("latest:\n%s", got)
	}
	if got := run("--topic-partitions", "go:2,gx", "--time", "earliest"); got != "go:2:0\ngx:0:0\n" {
		t.Errorf("earliest:\n%s", got)
	}
	if got := run("--topic-partitions", "go:2-3,go:10", "--time", "max-timestamp"); got != "go:10:0\ngo:2:2\n" {
		t.Errorf("max-timestamp:\n%s", got)
	}
	// The first offset at or after the timestamp; none after the last record: no line.
	if got := run("--topic", "go", "--partitions", "2,10", "--time", "2000"); got != "go:10:0\ngo:2:1\n" {
		t.Errorf("timestamp 2000:\n%s", got)
	}
	if got := run("--topic", "go", "--partitions", "2", "--time", "6000"); got != "" {
		t.Errorf("timestamp 6000:\n%s", got)
	}
	if got := run("--broker-list", c.addrs[0], "--topic", "g.", "--partitions", "0", "--exclude-internal-topics"); got != "go:0:0\ngx:0:2\n" {
		t.Errorf("regex, --broker-list:\n%s", got)
	}
	code, out, errb := runTool("get-offsets", "--bootstrap-server", c.bootstrap(), "--topic", "nothing")
	if code != 1 || out != "" || errb != "Error occurred: Could not match any topic-partitions with the specified filters\n" {
		t.Errorf("no match: code %d %q %q", code, out, errb)
	}
}
