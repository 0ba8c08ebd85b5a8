package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

func writeProps(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// adminToolArgs are valid arguments for each admin tool with its client property file
// option set to file; the bootstrap server is never reached when the file is refused.
func adminToolArgs(file string) []struct {
	tool, flag string
	args       []string
} {
	const bs = "127.0.0.1:1"
	return []struct {
		tool, flag string
		args       []string
	}{
		{"topics", "command-config", []string{"--bootstrap-server", bs, "--list", "--command-config", file}},
		{"configs", "command-config", []string{"--bootstrap-server", bs, "--describe", "--entity-type", "topics", "--entity-name", "t", "--command-config", file}},
		{"consumer-groups", "command-config", []string{"--bootstrap-server", bs, "--list", "--command-config", file}},
		{"leader-election", "admin.config", []string{"--bootstrap-server", bs, "--election-type", "preferred", "--all-topic-partitions", "--admin.config", file}},
		{"reassign-partitions", "command-config", []string{"--bootstrap-server", bs, "--list", "--command-config", file}},
		{"transactions", "command-config", []string{"--bootstrap-server", bs, "--command-config", file, "list"}},
		{"transactions", "command-config", []string{"--bootstrap-server", bs, "list", "--command-config", file}},
	}
}

func TestAdminClientPropsClassify(t *testing.T) {
	for _, tt := range []struct {
		name, text       string
		refused, ignored []string
	}{
		{"empty", "# nothing\n", nil, nil},
		{"plaintext is honoured", "security.protocol = plaintext \nclient.id=x\n", nil, []string{"client.id"}},
		{"ignored sorted", "request.timeout.ms=5000\nclient.id=x\nretries=3\n", nil, []string{"client.id", "request.timeout.ms", "retries"}},
		{"protocol first, no secret values", "ssl.truststore.password=hunter2\nsasl.jaas.config=secret\nsecurity.protocol=SASL_SSL\nacks=all\n",
			[]string{"security.protocol=SASL_SSL", "sasl.jaas.config", "ssl.truststore.password"}, []string{"acks"}},
		{"ssl key without protocol", "ssl.endpoint.identification.algorithm=\n", []string{"ssl.endpoint.identification.algorithm"}, nil},
		{"unknown protocol", "security.protocol=FOO\n", []string{"security.protocol=FOO"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			refused, ignored, err := adminClientProps(writeProps(t, tt.text))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(refused, tt.refused) || !reflect.DeepEqual(ignored, tt.ignored) {
				t.Fatalf("refused %q ignored %q, want %q %q", refused, ignored, tt.refused, tt.ignored)
			}
		})
	}
	if _, _, err := adminClientProps(writeProps(t, `a=\u12`)); err == nil {
		t.Fatal("malformed \\u escape accepted")
	}
}

// TestAdminClientPropsWarning runs topics against kfake with a file of keys samsa ignores:
// one warning line on stderr, and the command runs.
func TestAdminClientPropsWarning(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	file := writeProps(t, "security.protocol=PLAINTEXT\nrequest.timeout.ms=5000\nclient.id=tool\n")
	var out, errb bytes.Buffer
	code := runTopics([]string{"--bootstrap-server", c.ListenAddrs()[0], "--list", "--command-config", file}, nil, &out, &errb)
	if code != 0 || out.String() != "a\n" || errb.String() != "samsa topics: ignoring --command-config keys: client.id, request.timeout.ms\n" {
		t.Fatalf("code %d stdout %q stderr %q", code, out.String(), errb.String())
	}
	// Without the option, or with an empty file, nothing is printed.
	for _, args := range [][]string{{}, {"--command-config", writeProps(t, "")}} {
		out.Reset()
		errb.Reset()
		code = runTopics(append([]string{"--bootstrap-server", c.ListenAddrs()[0], "--list"}, args...), nil, &out, &errb)
		if code != 0 || errb.String() != "" {
			t.Fatalf("%v: code %d stderr %q", args, code, errb.String())
		}
	}
}

// TestAdminClientPropsRefused: every admin tool fails before connecting when its property
// file asks for security samsa's tools do not have.
func TestAdminClientPropsRefused(t *testing.T) {
	for _, text := range []struct{ props, want string }{
		{"security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"hunter2\";\nclient.id=x\n",
			"--%s sets security.protocol=SASL_SSL, sasl.jaas.config, sasl.mechanism, which samsa's tools do not support yet\n"},
		{"ssl.truststore.location=/etc/ts.jks\n", "--%s sets ssl.truststore.location, which samsa's tools do not support yet\n"},
	} {
		file := writeProps(t, text.props)
		for _, tt := range adminToolArgs(file) {
			var out, errb bytes.Buffer
			start := time.Now()
			code := dispatch(append([]string{tt.tool}, tt.args...), nil, &out, &errb)
			want := "samsa " + tt.tool + ": " + strings.Replace(text.want, "%s", tt.flag, 1)
			if code != 1 || out.Len() != 0 || errb.String() != want {
				t.Errorf("%s %v: code %d stdout %q stderr %q, want %q", tt.tool, tt.args, code, out.String(), errb.String(), want)
			}
			if strings.Contains(errb.String(), "hunter2") {
				t.Errorf("%s: a secret was printed: %q", tt.tool, errb.String())
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("%s took %v: it tried to connect", tt.tool, d)
			}
		}
	}
}

// TestAdminClientPropsMissingFile: an unreadable file is an error, as Kafka's Utils.loadProps
// throws.
func TestAdminClientPropsMissingFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "absent.properties")
	for _, tt := range adminToolArgs(file) {
		var out, errb bytes.Buffer
		code := dispatch(append([]string{tt.tool}, tt.args...), nil, &out, &errb)
		prefix := "samsa " + tt.tool + ": --" + tt.flag + ": open " + file + ": "
		if code != 1 || !strings.HasPrefix(errb.String(), prefix) || !strings.HasSuffix(errb.String(), "no such file or directory\n") {
			t.Errorf("%s: code %d stderr %q, want prefix %q", tt.tool, code, errb.String(), prefix)
		}
	}
}
