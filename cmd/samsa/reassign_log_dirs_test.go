package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-kafka/samsa/broker"
	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/zktest"
)

// TestReassignLogDirs moves a replica to another log dir of its broker with
// reassign-partitions: --execute starts the move (and sets the log-dir throttle), --verify
// reports it as Kafka does and clears the throttle once done, and a dir the broker does not
// have fails the command.
func TestReassignLogDirs(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	cfg, _, err := config.FromMap(map[string]string{
		"broker.id":                        "0",
		"listeners":                        "PLAINTEXT://127.0.0.1:0",
		"log.dirs":                         dirA + "," + dirB,
		"zookeeper.connect":                zktest.Start(t).Connect("/logdirs"),
		"offsets.topic.replication.factor": "1",
		"controlled.shutdown.enable":       "false",
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(cfg, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	startCtx, startCancel := context.WithTimeout(context.Background(), 30*time.Second)
	err = b.Start(startCtx)
	startCancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Shutdown)
	boot := b.Addr("PLAINTEXT")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(boot), kgo.DefaultProduceTopic("ld"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "ld"); err != nil {
		t.Fatal(err)
	}
	var cur string
	waitFor(t, 15*time.Second, func() error {
		ds, err := adm.DescribeBrokerLogDirs(ctx, 0, kadm.TopicsSet{"ld": {0: {}}})
		if err != nil {
			return err
		}
		ds.Each(func(d kadm.DescribedLogDir) {
			if _, ok := d.Topics.Lookup("ld", 0); ok {
				cur = d.Dir
			}
		})
		if cur == "" {
			return io.ErrUnexpectedEOF
		}
		return nil
	})
	for i := 0; i < 100; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint("v", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	target := dirB
	if cur == dirB {
		target = dirA
	}

	dir := t.TempDir()
	write := func(logDir string) string {
		p := filepath.Join(dir, "plan.json")
		os.WriteFile(p, []byte(fmt.Sprintf(`{"version":1,"partitions":[{"topic":"ld","partition":0,"replicas":[0],"log_dirs":[%q]}]}`, logDir)), 0o644)
		return p
	}
	run := func(plan string, args ...string) (string, int) {
		var out, errOut bytes.Buffer
		code := runReassignPartitions(append([]string{"--bootstrap-server", boot, "--reassignment-json-file", plan}, args...), nil, &out, &errOut)
		return out.String() + errOut.String(), code
	}

	// A dir the broker does not have.
	if out, code := run(write(filepath.Join(target, "nope")), "--execute"); code != 1 || !strings.Contains(out, "Failed to alter dir for ld-0-0") ||
		!strings.Contains(out, "LOG_DIR_NOT_FOUND") {
		t.Fatalf("--execute to an unknown dir: %d\n%s", code, out)
	}
	// log_dirs and replicas of different lengths.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"version":1,"partitions":[{"topic":"ld","partition":0,"replicas":[0],"log_dirs":["any","any"]}]}`), 0o644)
	if out, code := run(bad, "--execute"); code != 1 || !strings.Contains(out, "Size of replicas list [0] is different from size of log dirs list [any any] for partition ld-0") {
		t.Fatalf("--execute with a bad log_dirs: %d\n%s", code, out)
	}

	plan := write(target)
	out, code := run(plan, "--execute", "--replica-alter-log-dirs-throttle", "50000000")
	for _, want := range []string{
		`"log_dirs":["any"]`, // the rollback JSON
		"Warning: You must run --verify periodically",
		"The replica-alter-dir throttle limit was set to 50000000 B/s",
		"Successfully started partition reassignment for ld-0",
		"Successfully started log directory move for: ld-0-0",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("--execute: %d, want %q in\n%s", code, want, out)
		}
	}
	waitFor(t, 30*time.Second, func() error {
		out, code := run(plan, "--verify")
		if code != 0 || !strings.Contains(out, "Reassignment of replica ld-0-0 completed successfully.") {
			return fmt.Errorf("--verify: %d\n%s", code, out)
		}
		if !strings.Contains(out, "Clearing broker-level throttles on broker 0") {
			return fmt.Errorf("--verify did not clear the throttles:\n%s", out)
		}
		return nil
	})
	waitFor(t, 10*time.Second, func() error { // the broker applies the removal asynchronously
		bc, err := adm.DescribeBrokerConfigs(ctx, 0)
		if err != nil {
			return err
		}
		for _, rc := range bc {
			for _, c := range rc.Configs {
				if c.Key == "replica.alter.log.dirs.io.max.bytes.per.second" && c.Value != nil && *c.Value != "9223372036854775807" {
					return fmt.Errorf("log-dir throttle left at %s", *c.Value)
				}
			}
		}
		return nil
	})

	// Asked for the old dir now: not being moved there.
	if out, code := run(write(cur), "--verify"); code != 0 || // cancelled counts as done, as in Kafka
		!strings.Contains(out, fmt.Sprintf("Partition ld-0 on broker 0 is not being moved from log dir %s to %s.", target, cur)) {
		t.Fatalf("--verify of a move not made: %d\n%s", code, out)
	}
	// --cancel with nothing moving.
	if out, code := run(plan, "--cancel"); code != 0 || !strings.Contains(out, "None of the specified partition moves are active.") {
		t.Fatalf("--cancel: %d\n%s", code, out)
	}

	// The records are all there, in the new dir.
	cons, err := kgo.NewClient(kgo.SeedBrokers(boot), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"ld": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	n := 0
	for n < 100 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 100 records", n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != fmt.Sprint("v", n) {
				t.Fatalf("record %d is %q", n, r.Value)
			}
			n++
		})
	}
}
