package main

import (
	"io"
	"strings"
	"testing"
)

func TestParseAddConfig(t *testing.T) {
	got, err := parseAddConfig("retention.ms=1000,cleanup.policy=[compact,delete],segment.bytes=1024")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"retention.ms": "1000", "cleanup.policy": "compact,delete", "segment.bytes": "1024"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s = %q, want %q", k, got[k], v)
		}
	}
	if _, err := parseAddConfig("retention.ms"); err == nil {
		t.Fatal("a pair without = accepted")
	}
}

func TestParseReassignmentJSON(t *testing.T) {
	for _, c := range []struct{ in, err string }{
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}`, ""},
		{`{"version":1,"partitions":[]}`, "cannot be empty"},
		{`{"version":2,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}`, "Not supported version"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}`, "duplicate topic partitions"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}`, "duplicate replicas"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[]}]}`, "cannot be empty"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["/d","any"]}]}`, "log dirs list"},
		{`{"version":1,"partitions":[{"topic":`, "Unable to parse"},
	} {
		_, err := parseReassignmentJSON([]byte(c.in))
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: err %v, want %q", c.in, err, c.err)
		}
	}
}

func TestOpsArgs(t *testing.T) {
	for _, args := range [][]string{
		{"--bootstrap-server", "x:1", "--entity-type", "topics", "--alter"},                                     // no name
		{"--bootstrap-server", "x:1", "--entity-type", "groups", "--describe"},                                  // bad type
		{"--bootstrap-server", "x:1", "--entity-type", "topics", "--entity-name", "t", "--alter"},               // nothing to alter
		{"--bootstrap-server", "x:1", "--entity-type", "topics", "--describe", "--alter", "--entity-name", "t"}, // two actions
	} {
		if _, _, err := parseConfigsArgs(args, io.Discard); err == nil {
			t.Errorf("configs %v accepted", args)
		}
	}
	for _, args := range [][]string{
		{"--bootstrap-server", "x:1", "--execute"},
		{"--bootstrap-server", "x:1", "--reassignment-json-file", "f", "--execute", "--verify"},
		{"--bootstrap-server", "x:1", "--generate", "--broker-list", "1,2"},
	} {
		if _, _, err := parseReassignArgs(args, io.Discard); err == nil {
			t.Errorf("reassign-partitions %v accepted", args)
		}
	}
	for _, args := range [][]string{
		{"--bootstrap-server", "x:1", "--election-type", "preferred"},
		{"--bootstrap-server", "x:1", "--election-type", "fast", "--all-topic-partitions"},
		{"--bootstrap-server", "x:1", "--election-type", "preferred", "--topic", "t"},
		{"--bootstrap-server", "x:1", "--election-type", "preferred", "--topic", "t", "--partition", "0", "--all-topic-partitions"},
	} {
		if _, _, err := parseLeaderElectionArgs(args, io.Discard); err == nil {
			t.Errorf("leader-election %v accepted", args)
		}
	}
	if _, _, err := parseLeaderElectionArgs([]string{"--bootstrap-server", "x:1", "--election-type", "UNCLEAN", "--topic", "t", "--partition", "0"}, io.Discard); err != nil {
		t.Errorf("valid leader-election args: %v", err)
	}
}
