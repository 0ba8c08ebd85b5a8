package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-kafka/samsa/broker"
	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/zktest"
)

// toolCluster is n in-process brokers (ids 0..n-1) on one ZooKeeper chroot.
type toolCluster struct {
	addrs   []string
	logDirs [][]string // per broker
	connect string     // zookeeper.connect, chroot included
	zk      *zktest.Server
}

func (c *toolCluster) bootstrap() string { return strings.Join(c.addrs, ",") }

// startToolBrokers starts n brokers, each with dirsPerBroker log dirs.
func startToolBrokers(t *testing.T, n, dirsPerBroker int) *toolCluster {
	t.Helper()
	zk := zktest.Start(t)
	c := &toolCluster{connect: zk.Connect("/tools"), zk: zk}
	for id := 0; id < n; id++ {
		var dirs []string
		for i := 0; i < dirsPerBroker; i++ {
			dirs = append(dirs, t.TempDir())
		}
		cfg, _, err := config.FromMap(map[string]string{
			"broker.id":                        strconv.Itoa(id),
			"listeners":                        "PLAINTEXT://127.0.0.1:0",
			"log.dirs":                         strings.Join(dirs, ","),
			"zookeeper.connect":                c.connect,
			"offsets.topic.replication.factor": "1",
			"offsets.topic.num.partitions":     "1",
			"group.initial.rebalance.delay.ms": "0",
			"controlled.shutdown.enable":       "false",
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
		c.addrs, c.logDirs = append(c.addrs, b.Addr("PLAINTEXT")), append(c.logDirs, dirs)
	}
	return c
}

// createToolTopic creates topic with the given partitions and replication factor, waits for
// leaders, and produces perPartition records to each partition.
func createToolTopic(t *testing.T, c *toolCluster, topic string, partitions int32, rf int16, perPartition int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, partitions, rf, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
	waitFor(t, 20*time.Second, func() error {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		td := md.Topics[topic]
		if td.Err != nil || len(td.Partitions) != int(partitions) {
			return fmt.Errorf("metadata %v, %d partitions", td.Err, len(td.Partitions))
		}
		for _, p := range td.Partitions {
			if p.Leader < 0 || p.Err != nil {
				return fmt.Errorf("partition %d: leader %d %v", p.Partition, p.Leader, p.Err)
			}
		}
		return nil
	})
	var recs []*kgo.Record
	for p := int32(0); p < partitions; p++ {
		for i := 0; i < perPartition; i++ {
			recs = append(recs, &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("v%d-%d", p, i))})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseDeleteRecordsJSON(t *testing.T) {
	got, err := parseDeleteRecordsJSON([]byte(`{"partitions":[{"topic":"a","partition":1,"offset":5},{"topic":"b","partition":0,"offset":-1}]}`))
	if err != nil || len(got) != 2 || got[0].tp != (tpKey{"a", 1}) || got[0].offset != 5 || got[1].offset != -1 {
		t.Fatalf("%+v %v", got, err)
	}
	for _, tt := range []struct{ in, want string }{
		{`{`, "AdminOperationException: The input string is not a valid JSON"},
		{`{"version":2,"partitions":[]}`, "AdminOperationException: Not supported version field value 2"},
		{`{"version":1}`, "AdminOperationException: Missing partitions field"},
		{`{"partitions":[{"topic":"a","partition":1}]}`, "No such field exists: `offset`"},
		{`{"partitions":[{"topic":"a","partition":1,"offset":1},{"topic":"a","partition":1,"offset":2}]}`,
			"AdminCommandFailedException: Offset json file contains duplicate topic partitions: a-1"},
	} {
		_, err := parseDeleteRecordsJSON([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestDeleteRecordsUsage(t *testing.T) {
	code, _, errb := runTool("delete-records", "--bootstrap-server", "127.0.0.1:1")
	if code != 1 || !strings.Contains(errb, `Missing required argument "[offset-json-file]"`) {
		t.Fatalf("code %d stderr %q", code, errb)
	}
	code, _, errb = runTool("delete-records")
	if code != 1 || !strings.Contains(errb, deleteRecordsUsage) {
		t.Fatalf("code %d stderr %q", code, errb)
	}
}

// Against live brokers: offsets move the log start, an out-of-range offset and an unknown topic
// report Kafka's errors per partition, and the tool still exits 0 as Kafka's does.
func TestDeleteRecordsEndToEnd(t *testing.T) {
	t.Parallel()
	c := startToolBrokers(t, 2, 1)
	createToolTopic(t, c, "dr", 3, 2, 10)

	file := writeFile(t, `{"partitions":[
		{"topic":"dr","partition":0,"offset":4},
		{"topic":"dr","partition":1,"offset":-1},
		{"topic":"dr","partition":2,"offset":50},
		{"topic":"nope","partition":0,"offset":1}],"version":1}`)
	code, out, errb := runTool("delete-records", "--bootstrap-server", c.addrs[1], "--offset-json-file", file)
	if code != 0 {
		t.Fatalf("code %d\n%s\n%s", code, out, errb)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 6 || lines[0] != "Executing records delete operation" || lines[1] != "Records delete operation completed:" {
		t.Fatalf("output:\n%s", out)
	}
	want := map[string]string{
		"partition: dr-0\tlow_watermark: 4":  "",
		"partition: dr-1\tlow_watermark: 10": "",
		"partition: dr-2\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: The requested offset is not within the range of offsets maintained by the server.":                           "",
		"partition: nope-0\terror: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Failed to fetch metadata for partition nope-0 because metadata for topic `nope` could not be found": "",
	}
	for _, l := range lines[2:] {
		if _, ok := want[l]; !ok {
			t.Errorf("unexpected line %q", l)
		}
		delete(want, l)
	}
	for l := range want {
		t.Errorf("missing line %q", l)
	}
	// The log start offsets moved (ListOffsets earliest through the get-offsets tool).
	code, out, errb = runTool("get-offsets", "--bootstrap-server", c.addrs[0], "--topic", "dr", "--time", "-2")
	if code != 0 || out != "dr:0:4\ndr:1:10\ndr:2:0\n" {
		t.Fatalf("get-offsets earliest: code %d\n%s\n%s", code, out, errb)
	}
	// Duplicates: the Admin call is never made.
	dup := writeFile(t, `{"partitions":[{"topic":"dr","partition":0,"offset":5},{"topic":"dr","partition":0,"offset":6}]}`)
	code, out, errb = runTool("delete-records", "--bootstrap-server", c.addrs[0], "--offset-json-file", dup)
	if code != 1 || out != "" || !regexp.MustCompile(`^Exception in thread "main" org.apache.kafka.server.common.AdminCommandFailedException: Offset json file contains duplicate topic partitions: dr-0\n$`).MatchString(errb) {
		t.Fatalf("duplicates: code %d\n%s\n%s", code, out, errb)
	}
	// A partition the topic does not have is looked up until default.api.timeout.ms.
	cfg := writeFile(t, "default.api.timeout.ms=1500\n")
	missing := writeFile(t, `{"partitions":[{"topic":"dr","partition":7,"offset":1}]}`)
	code, out, errb = runTool("delete-records", "--bootstrap-server", c.addrs[0], "--offset-json-file", missing, "--command-config", cfg)
	if code != 0 || !strings.Contains(out, "partition: dr-7\terror: org.apache.kafka.common.errors.TimeoutException: ") || errb != "" {
		t.Fatalf("missing partition: code %d\n%s\n%s", code, out, errb)
	}
}
