package main

import (
	"bytes"
	"context"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/broker"
	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/zktest"
)

func TestReassignThrottleLists(t *testing.T) {
	cur := map[string]map[int32][]int32{"a": {0: {1, 2}, 1: {2, 3}}, "b": {0: {1}}}
	entries := []reassignEntry{
		{Topic: "a", Partition: 0, Replicas: []int32{2, 3}},
		{Topic: "a", Partition: 1, Replicas: []int32{3, 2}}, // reordered only: nothing moves
		{Topic: "b", Partition: 0, Replicas: []int32{4}},
	}
	// An ongoing move of c-0 from 5 to 6 is throttled too (calculateCurrentMoveMap).
	active := map[string]kmsg.ListPartitionReassignmentsResponseTopicPartition{
		"c-0": {Partition: 0, Replicas: []int32{5, 6}, AddingReplicas: []int32{6}},
	}
	moves := proposedMoveMap(active, map[string]string{"c-0": "c"}, entries, cur)
	leader, follower := throttleLists(moves)
	want := map[string][2]string{"a": {"0:1,0:2,1:2,1:3", "0:3"}, "b": {"0:1", "0:4"}, "c": {"0:5", "0:6"}}
	for topic, w := range want {
		if leader[topic] != w[0] || follower[topic] != w[1] {
			t.Errorf("%s: leader %q follower %q, want %q %q", topic, leader[topic], follower[topic], w[0], w[1])
		}
	}
	if got := joinIDs(reassigningBrokers(moves)); got != "1,2,3,4,5,6" {
		t.Errorf("reassigning brokers %s", got)
	}
}

func TestReassignThrottleArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		err  string
	}{
		{args: []string{"--bootstrap-server", "x:1", "--reassignment-json-file", "f", "--execute", "--throttle", "1000", "--additional",
			"--replica-alter-log-dirs-throttle", "5", "--timeout", "100"}},
		{args: []string{"--bootstrap-server", "x:1", "--reassignment-json-file", "f", "--verify", "--preserve-throttles"}},
		{args: []string{"--bootstrap-server", "x:1", "--reassignment-json-file", "f", "--cancel", "--preserve-throttles"}},
		{args: []string{"--bootstrap-server", "x:1", "--reassignment-json-file", "f", "--verify", "--throttle", "10"},
			err: `Option "[throttle]" can't be used with action "[verify]"`},
		{args: []string{"--bootstrap-server", "x:1", "--list", "--preserve-throttles"},
			err: `Option "[preserve-throttles]" can't be used with action "[list]"`},
		{args: []string{"--bootstrap-server", "x:1", "--reassignment-json-file", "f", "--execute", "--preserve-throttles"},
			err: `Option "[preserve-throttles]" can't be used with action "[execute]"`},
		{args: []string{"--bootstrap-server", "x:1", "--reassignment-json-file", "f", "--execute", "--throttle", "x"}, err: "not a number"},
	} {
		o, _, err := parseReassignArgs(c.args, io.Discard)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%v: %v", c.args, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%v: %v, want %q", c.args, err, c.err)
		case c.err == "" && o.execute && (o.throttle.v != 1000 || o.logDirThrottle.v != 5 || !o.additional):
			t.Errorf("%v: %+v", c.args, o)
		}
	}
	o, _, err := parseReassignArgs([]string{"--bootstrap-server", "x:1", "--reassignment-json-file", "f", "--execute"}, io.Discard)
	if err != nil || o.throttle.v != -1 || o.logDirThrottle.v != -1 {
		t.Fatalf("defaults: %+v %v", o, err)
	}
}

// startThrottleBrokers starts n in-process brokers (ids 0..n-1) against their own
// ZooKeeper with small replica fetches, so a throttled move proceeds in small steps.
func startThrottleBrokers(t *testing.T, n int) []string {
	t.Helper()
	zk := zktest.Start(t)
	var addrs []string
	for id := 0; id < n; id++ {
		cfg, _, err := config.FromMap(map[string]string{
			"broker.id":                        strconv.Itoa(id),
			"listeners":                        "PLAINTEXT://127.0.0.1:0",
			"log.dirs":                         t.TempDir(),
			"zookeeper.connect":                zk.Connect("/throttle"),
			"offsets.topic.replication.factor": "1",
			"controlled.shutdown.enable":       "false",
			"replica.fetch.max.bytes":          "65536",
			"replica.fetch.wait.max.ms":        "100",
			"replica.fetch.backoff.ms":         "100",
		})
		if err != nil {
			t.Fatal(err)
		}
		b, err := broker.New(cfg, testLog(t).WithField("broker", id))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = b.Start(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Shutdown)
		addrs = append(addrs, b.Addr("PLAINTEXT"))
	}
	return addrs
}

// A reassignment with --throttle moves the data at about the throttle, and --verify removes
// every throttle once it is done.
func TestReassignThrottleEndToEnd(t *testing.T) {
	const (
		rate  = 1 << 20 // B/s
		total = 5 << 20 // bytes to move: about 5 s at the throttle
	)
	addrs := startThrottleBrokers(t, 2)
	boot := strings.Join(addrs, ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ProducerBatchMaxBytes(32<<10), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, "thr"); err != nil {
		t.Fatal(err)
	}
	var mr kadm.Metadata
	waitFor(t, 10*time.Second, func() error {
		mr, err = adm.Metadata(ctx, "thr")
		if err == nil && (len(mr.Topics["thr"].Partitions) != 1 || mr.Topics["thr"].Partitions[0].Leader < 0) {
			err = io.ErrUnexpectedEOF
		}
		return err
	})
	src := mr.Topics["thr"].Partitions[0].Leader
	dst := 1 - src
	value := make([]byte, 1000)
	rand.Read(value)
	for sent := 0; sent < total; sent += len(value) {
		cl.Produce(ctx, &kgo.Record{Topic: "thr", Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// The bytes to move: the partition's log on the source broker.
	lds, err := adm.DescribeBrokerLogDirs(ctx, src, kadm.TopicsSet{"thr": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	ldp, ok := lds.LookupPartition("thr", 0)
	if !ok || ldp.Size < total {
		t.Fatalf("source log: %+v %v", ldp, ok)
	}

	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.json")
	os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"thr","partition":0,"replicas":[`+strconv.Itoa(int(dst))+`]}]}`), 0o644)
	run := func(args ...string) (string, int) {
		var out, errOut bytes.Buffer
		code := runReassignPartitions(append([]string{"--bootstrap-server", boot, "--reassignment-json-file", plan}, args...), nil, &out, &errOut)
		return out.String() + errOut.String(), code
	}
	started := time.Now()
	out, code := run("--execute", "--throttle", strconv.Itoa(rate))
	if code != 0 || !strings.Contains(out, "The inter-broker throttle limit was set to 1048576 B/s") ||
		!strings.Contains(out, "Warning: You must run --verify periodically") {
		t.Fatalf("--execute: %d\n%s", code, out)
	}
	// A second --execute without --additional is refused while the move runs.
	if out, code := run("--execute"); code == 0 || !strings.Contains(out, "Cannot execute because there is an existing partition assignment") {
		t.Fatalf("second --execute: %d\n%s", code, out)
	}
	// The throttle is in place on the topic and on both brokers.
	tc, err := adm.DescribeTopicConfigs(ctx, "thr")
	if err != nil {
		t.Fatal(err)
	}
	lt, _ := tc.On("thr", nil)
	got := map[string]string{}
	for _, c := range lt.Configs {
		if c.Value != nil {
			got[c.Key] = *c.Value
		}
	}
	if got["leader.replication.throttled.replicas"] != "0:"+strconv.Itoa(int(src)) ||
		got["follower.replication.throttled.replicas"] != "0:"+strconv.Itoa(int(dst)) {
		t.Fatalf("topic throttles: %v", got)
	}
	// Measure: the move ends when --verify says so.
	var done time.Time
	waitFor(t, 40*time.Second, func() error {
		out, _ := run("--verify", "--preserve-throttles")
		if !strings.Contains(out, "Reassignment of partition thr-0 is completed.") {
			return io.ErrUnexpectedEOF
		}
		done = time.Now()
		return nil
	})
	took := done.Sub(started)
	moved := float64(ldp.Size)
	measured := moved / took.Seconds()
	t.Logf("moved %d bytes in %v: %.0f B/s against a throttle of %d B/s (%.1f%%)",
		ldp.Size, took.Round(time.Millisecond), measured, rate, 100*measured/rate)
	if measured > rate*1.15 || measured < rate*0.85 {
		t.Errorf("measured %.0f B/s, want %d B/s ±15%%", measured, rate)
	}

	// --verify now clears every throttle.
	out, code = run("--verify")
	if code != 0 || !strings.Contains(out, "Clearing broker-level throttles on brokers 0,1") ||
		!strings.Contains(out, "Clearing topic-level throttles on topic thr") {
		t.Fatalf("--verify: %d\n%s", code, out)
	}
	waitFor(t, 10*time.Second, func() error {
		tc, err := adm.DescribeTopicConfigs(ctx, "thr")
		if err != nil {
			return err
		}
		lt, _ := tc.On("thr", nil)
		for _, c := range lt.Configs {
			if strings.HasSuffix(c.Key, ".replication.throttled.replicas") && c.Value != nil && *c.Value != "" {
				return io.ErrUnexpectedEOF
			}
		}
		bc, err := adm.DescribeBrokerConfigs(ctx, 0, 1)
		if err != nil {
			return err
		}
		for _, rc := range bc {
			for _, c := range rc.Configs {
				if strings.HasSuffix(c.Key, ".replication.throttled.rate") && c.Source == kmsg.ConfigSourceDynamicBrokerConfig {
					return io.ErrUnexpectedEOF
				}
			}
		}
		return nil
	})
}
