package main

import (
	"strings"
	"testing"
)

// The property file of delete-records, log-dirs, get-offsets, broker-api-versions and cluster:
// SCRAM over SASL_PLAINTEXT against kfake works, a wrong password does not, and a setting
// samsa cannot honour stops each tool before it connects.
func TestG1ToolsCommandConfig(t *testing.T) {
	c := saslCluster(t, nil)
	bs := c.ListenAddrs()[0]
	good := writeProps(t, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config="+scramJAAS+"\ndefault.api.timeout.ms=3000\nrequest.timeout.ms=3000\n")
	code, out, errb := runTool("get-offsets", "--bootstrap-server", bs, "--topic", "sec", "--command-config", good)
	if code != 0 || out != "sec:0:0\n" || errb != "" {
		t.Fatalf("get-offsets: code %d %q %q", code, out, errb)
	}
	code, out, errb = runTool("broker-api-versions", "--bootstrap-server", bs, "--command-config", good)
	if code != 0 || !strings.Contains(out, "(id: 0 rack: krack) -> (\n\tProduce(0): 3 to 13 [usable: 10],\n") || errb != "" {
		t.Fatalf("broker-api-versions: code %d %q %q", code, out, errb)
	}
	offsets := writeFile(t, `{"partitions":[{"topic":"sec","partition":0,"offset":0}]}`)
	code, out, errb = runTool("delete-records", "--bootstrap-server", bs, "--offset-json-file", offsets, "--command-config", good)
	if code != 0 || out != "Executing records delete operation\nRecords delete operation completed:\npartition: sec-0\tlow_watermark: 0\n" || errb != "" {
		t.Fatalf("delete-records: code %d %q %q", code, out, errb)
	}
	bad := writeProps(t, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config="+strings.Replace(scramJAAS, "admin-secret", "wrong", 1)+"\ndefault.api.timeout.ms=1000\nrequest.timeout.ms=1000\n")
	code, out, _ = runTool("get-offsets", "--bootstrap-server", bs, "--topic", "sec", "--command-config", bad)
	if code == 0 || out != "" {
		t.Fatalf("wrong password: code %d %q", code, out)
	}

	refused := writeProps(t, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n")
	for _, args := range [][]string{
		{"delete-records", "--bootstrap-server", bs, "--offset-json-file", offsets, "--command-config", refused},
		{"log-dirs", "--describe", "--bootstrap-server", bs, "--command-config", refused},
		{"get-offsets", "--bootstrap-server", bs, "--command-config", refused},
		{"broker-api-versions", "--bootstrap-server", bs, "--command-config", refused},
		{"cluster", "cluster-id", "--bootstrap-server", bs, "--config", refused},
	} {
		code, out, errb := runTool(args...)
		if code != 1 || out != "" || !strings.Contains(errb, "GSSAPI") {
			t.Errorf("%v: code %d %q %q", args, code, out, errb)
		}
	}
	warn := writeProps(t, "retries=3\n")
	code, _, errb = runTool("cluster", "cluster-id", "--bootstrap-server", "127.0.0.1:1", "--config", warn, "--bootstrap-controller", "x:1")
	if code != 1 || strings.Contains(errb, "retries") {
		t.Errorf("argument errors come first: %d %q", code, errb)
	}
}

func TestJavaErrClass(t *testing.T) {
	for code, want := range map[int16]string{
		56: "org.apache.kafka.common.errors.KafkaStorageException",
		7:  "org.apache.kafka.common.errors.TimeoutException",
		2:  "org.apache.kafka.common.errors.CorruptRecordException",
		17: "org.apache.kafka.common.errors.InvalidTopicException",
		-1: "org.apache.kafka.common.errors.UnknownServerException",
		1:  "org.apache.kafka.common.errors.OffsetOutOfRangeException",
	} {
		if got := javaErrClass(code); got != want {
			t.Errorf("%d: %s, want %s", code, got, want)
		}
	}
	if got := javaAPIErr(6, nil).Error(); got != "org.apache.kafka.common.errors.NotLeaderOrFollowerException: For requests intended only for the leader, this error indicates that the broker is not the current leader. For requests intended for any replica, this error indicates that the broker is not a replica of the topic partition." {
		t.Errorf("%s", got)
	}
}
