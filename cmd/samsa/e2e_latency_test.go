package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestJavaRandom(t *testing.T) {
	// new java.util.Random(0).nextInt(10), ten times.
	want := []int32{0, 8, 9, 7, 5, 3, 1, 1, 9, 4}
	r := newJavaRandom(0)
	for i, w := range want {
		if got := r.nextInt(10); got != w {
			t.Fatalf("draw %d: %d, want %d", i, got, w)
		}
	}
}

func TestE2ELatencyArgs(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"h:1", "t", "10", "1"}, "USAGE: java org.apache.kafka.tools.EndToEndLatency broker_list topic num_messages producer_acks message_size_bytes [optional] properties_file"},
		{[]string{"h:1", "t", "10", "0", "100"}, "Latency testing requires synchronous acknowledgement. Please use 1 or all"},
		{[]string{"h:1", "t", "ten", "1", "100"}, `For input string: "ten"`},
	} {
		var out, errb bytes.Buffer
		if code := dispatch(append([]string{"e2e-latency"}, tt.args...), nil, &out, &errb); code != 1 || strings.TrimSpace(errb.String()) != tt.want {
			t.Errorf("%v: exit %d, stderr %q, want %q", tt.args, code, errb.String(), tt.want)
		}
	}
}

// Against a live broker: the missing topic is created, every message comes back, the output
// has Kafka's lines, and the consumer's positions are committed for its test group.
func TestE2ELatencyEndToEnd(t *testing.T) {
	t.Parallel()
	addrs, _ := startTxnBrokers(t, 1)
	var out, errb bytes.Buffer
	if code := dispatch([]string{"e2e-latency", addrs[0], "e2e", "5", "all", "64"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errb.String(), out.String())
	}
	re := regexp.MustCompile(`^Topic "e2e" does not exist\. Will create topic with 1 partition\(s\) and replication factor = 1
0\t\d+\.\d+(E-?\d+)?
Avg latency: \d+\.\d{4} ms
Percentiles: 50th = \d+, 99th = \d+, 99\.9th = \d+
$`)
	if !re.MatchString(out.String()) {
		t.Fatalf("output:\n%s", out.String())
	}
	// As tests/kafkatest/services/performance/end_to_end_latency.py reads it.
	parsed := 0
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		num := func(s string) {
			if _, err := strconv.ParseFloat(s, 64); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			parsed++
		}
		if strings.HasPrefix(line, "Avg latency:") {
			num(f[2])
		}
		if strings.HasPrefix(line, "Percentiles") {
			num(f[3][:len(f[3])-1])
			num(f[6][:len(f[6])-1])
			num(f[9])
		}
	}
	if parsed != 4 {
		t.Fatalf("parsed %d numbers", parsed)
	}
	// Again on the existing topic, with acks=1 and a properties file.
	out.Reset()
	props := writeProps(t, "client.id=e2e-test\n")
	if code := dispatch([]string{"e2e-latency", addrs[0], "e2e", "3", "1", "10", props}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if strings.Contains(out.String(), "does not exist") || !strings.Contains(out.String(), "Avg latency: ") {
		t.Fatalf("second run:\n%s", out.String())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs[0]), kgo.ConsumeTopics("e2e"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var values []string
	for len(values) < 8 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("after %d records: %v", len(values), err)
		}
		fs.EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
	}
	r := newJavaRandom(0)
	for i, v := range values {
		if i == 5 {
			r = newJavaRandom(0) // each run starts its own Random(0)
		}
		size := 64
		if i >= 5 {
			size = 10
		}
		if want := strings.Repeat(string(rune(r.nextInt(26)+65)), size); v != want {
			t.Fatalf("record %d: %q, want %q", i, v, want)
		}
	}
	adm := kadm.NewClient(cl)
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var committed []int64
	for _, g := range groups.Groups() {
		if !strings.HasPrefix(g, "test-group-") {
			continue
		}
		offs, err := adm.FetchOffsets(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := offs.Lookup("e2e", 0)
		committed = append(committed, o.At)
	}
	if len(committed) != 2 || committed[0]+committed[1] != 5+8 {
		t.Fatalf("test groups' committed offsets %v, want 5 and 8", committed)
	}
}
