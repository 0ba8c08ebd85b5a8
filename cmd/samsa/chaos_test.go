package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestChaosUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string // in stderr
	}{
		{nil, "--bootstrap-server or --start-local is required"},
		{[]string{"--bootstrap-server", "b:9092", "--start-local", "3", "--zookeeper", "z:2181"}, "cannot be combined"},
		{[]string{"--bootstrap-server", "b:9092", "--faults", "kill-everything", "--local-cluster", "/x"}, `unknown fault "kill-everything"`},
		{[]string{"--bootstrap-server", "b:9092", "--faults", "kill-leader"}, "--faults needs a way to apply them"},
		{[]string{"--bootstrap-server", "b:9092", "--producers", "0", "--transactional", "0"}, "one must be positive"},
		{[]string{"--bootstrap-server", "b:9092", "--duration", "0s"}, "must be positive"},
		{[]string{"--bootstrap-server", "b:9092", "extra"}, `unrecognized argument "extra"`},
		{[]string{"--no-such-flag"}, "flag provided but not defined"},
	} {
		var out, errb bytes.Buffer
		code := dispatch(append([]string{"chaos"}, tt.args...), strings.NewReader(""), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("chaos %v: exit %d, stderr %q; want 2 and %q", tt.args, code, errb.String(), tt.want)
		}
	}
	var out, errb bytes.Buffer
	if code := dispatch([]string{"chaos", "--help"}, nil, &out, &errb); code != 0 || !strings.Contains(errb.String(), "usage: samsa chaos") ||
		!strings.Contains(errb.String(), "expire-zk-session") {
		t.Errorf("chaos --help: exit %d, stderr %q", code, errb.String())
	}
}
