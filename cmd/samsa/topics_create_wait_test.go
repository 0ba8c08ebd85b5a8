package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// A describe issued right after `topics --create` returned finds the topic with its leaders,
// whichever broker it asks (the tool waits for every live broker's metadata, as Kafka's
// admin-client users do).
func TestTopicsCreateThenDescribeThroughAnyBroker(t *testing.T) {
	t.Parallel()
	addrs, _ := startTxnBrokers(t, 3)
	for i := 0; i < 20; i++ {
		topic := fmt.Sprintf("cd-%d", i)
		var out, errOut bytes.Buffer
		if rc := runTopics([]string{"--bootstrap-server", addrs[i%3], "--create", "--topic", topic,
			"--partitions", "3", "--replication-factor", "2"}, nil, &out, &errOut); rc != 0 {
			t.Fatalf("create %s: rc %d: %s%s", topic, rc, out.String(), errOut.String())
		}
		// Each broker in turn, and the tool's own choice of broker, must know the topic.
		for _, addr := range []string{addrs[(i+1)%3], addrs[(i+2)%3], strings.Join(addrs, ",")} {
			out.Reset()
			errOut.Reset()
			rc := runTopics([]string{"--bootstrap-server", addr, "--describe", "--topic", topic}, nil, &out, &errOut)
			if rc != 0 || !strings.Contains(out.String(), "PartitionCount: 3") ||
				strings.Count(out.String(), "\tLeader: ") != 3 || strings.Contains(out.String(), "Leader: none") {
				t.Fatalf("describe %s through %s right after create: rc %d:\n%s%s", topic, addr, rc, out.String(), errOut.String())
			}
		}
	}
}
