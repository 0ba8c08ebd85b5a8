package integration

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestCmdTools drives the samsa binary's tools the way an operator uses Kafka's scripts:
// topics --create/--list/--describe, a console-producer to console-consumer round trip, and
// dump-log on the segment that round trip wrote.
func TestCmdTools(t *testing.T) {
	c := StartCluster(t, ClusterConfig{Brokers: 1, Process: true})
	bs := c.Bootstrap()[0]
	const topic = "tools"

	out, err := samsaCmd(t, "", "topics", "--bootstrap-server", bs, "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "1")
	if err != nil || !strings.Contains(out, "Created topic "+topic+".") {
		t.Fatalf("topics --create: %v\n%s", err, out)
	}
	out, err = samsaCmd(t, "", "topics", "--bootstrap-server", bs, "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "1")
	if err == nil || !strings.Contains(out, "already exists") {
		t.Errorf("topics --create of an existing topic: err %v, output %q; want a failure saying it already exists", err, out)
	}

	out, err = samsaCmd(t, "", "topics", "--bootstrap-server", bs, "--list")
	if err != nil || !containsLine(out, topic) {
		t.Errorf("topics --list: %v, output %q; want a line %q", err, out, topic)
	}

	head := regexp.MustCompile(`(?m)^Topic:\s*` + topic + `\s+TopicId:\s*\S+\s+PartitionCount:\s*3\s+ReplicationFactor:\s*1\s+Configs:`)
	part := regexp.MustCompile(`(?m)^\s+Topic:\s*` + topic + `\s+Partition:\s*(\d+)\s+Leader:\s*0\s+Replicas:\s*0\s+Isr:\s*0\b`)
	waitFor(t, 20*time.Second, func() error {
		out, err := samsaCmd(t, "", "topics", "--bootstrap-server", bs, "--describe", "--topic", topic)
		if err != nil {
			return fmt.Errorf("topics --describe: %v\n%s", err, out)
		}
		var parts []string
		for _, m := range part.FindAllStringSubmatch(out, -1) {
			parts = append(parts, m[1])
		}
		sort.Strings(parts)
		if !head.MatchString(out) || strings.Join(parts, ",") != "0,1,2" {
			return fmt.Errorf("topics --describe printed:\n%s\nwant Kafka's Topic:/TopicId:/PartitionCount: 3/ReplicationFactor: 1/Configs: line and Partition: 0..2 Leader: 0 Replicas: 0 Isr: 0 lines", out)
		}
		return nil
	})

	var in strings.Builder
	want := map[string]bool{}
	for i := range 50 {
		fmt.Fprintf(&in, "key-%d:value-%d\n", i, i)
		want[fmt.Sprintf("key-%d\tvalue-%d", i, i)] = true
	}
	out, err = samsaCmd(t, in.String(), "console-producer", "--bootstrap-server", bs, "--topic", topic,
		"--property", "parse.key=true", "--property", "key.separator=:")
	if err != nil {
		t.Fatalf("console-producer: %v\n%s", err, out)
	}
	stdout, err := samsaStdout(t, "console-consumer", "--bootstrap-server", bs, "--topic", topic, "--from-beginning",
		"--max-messages", "50", "--property", "print.key=true")
	if err != nil {
		t.Fatalf("console-consumer: %v", err)
	}
	got := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		if got[l] {
			t.Errorf("console-consumer printed %q twice", l)
		}
		got[l] = true
	}
	if len(got) != len(want) {
		t.Errorf("console-consumer printed %d distinct lines, want %d:\n%s", len(got), len(want), stdout)
	}
	for l := range want {
		if !got[l] {
			t.Errorf("console-consumer did not print %q", l)
		}
	}

	// Some partition got records; its first segment starts at offset 0.
	var seg string
	for p := 0; p < 3; p++ {
		f := filepath.Join(c.Brokers[0].Dir, fmt.Sprintf("%s-%d", topic, p), "00000000000000000000.log")
		if out, err := samsaCmd(t, "", "dump-log", "--files", f); err == nil && strings.Contains(out, "baseOffset: 0") {
			seg = f
			if !strings.Contains(out, "Dumping "+f) {
				t.Errorf("dump-log --files %s: want Kafka's \"Dumping <file>\" line:\n%s", f, out)
			}
			break
		}
	}
	if seg == "" {
		t.Errorf("dump-log printed no batch at baseOffset 0 for any partition of %s", topic)
	}
}

func containsLine(out, line string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// samsaCmd runs the samsa binary with stdin and returns its combined output.
func samsaCmd(t testing.TB, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, samsaBinary(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	t.Logf("$ samsa %s\n%s", strings.Join(args, " "), out)
	return string(out), err
}

// samsaStdout runs the samsa binary and returns its standard output (stderr goes to t.Log).
func samsaStdout(t testing.TB, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, samsaBinary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("$ samsa %s\n%s%s", strings.Join(args, " "), stdout.Bytes(), stderr.Bytes())
	if err != nil {
		return stdout.String(), fmt.Errorf("%w: %s", err, stderr.Bytes())
	}
	return stdout.String(), nil
}
