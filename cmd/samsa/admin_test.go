package main

import (
	"bytes"
	"os"
	"path/filepath"
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
		{"acls", "command-config", []string{"--bootstrap-server", bs, "--list", "--command-config", file}},
	}
}

// TestAdminClientPropsWarning runs topics against kfake with a file of keys samsa ignores:
// one warning line on stderr, and the command runs. security.protocol=PLAINTEXT is honoured,
// ssl.* keys do nothing on a plaintext connection and are warned about.
func TestAdminClientPropsWarning(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	file := writeProps(t, "security.protocol=PLAINTEXT\nrequest.timeout.ms=5000\nclient.id=tool\nssl.truststore.location=/nowhere\n")
	var out, errb bytes.Buffer
	code := runTopics([]string{"--bootstrap-server", c.ListenAddrs()[0], "--list", "--command-config", file}, nil, &out, &errb)
	if code != 0 || out.String() != "a\n" || errb.String() != "samsa topics: ignoring --command-config keys: client.id, request.timeout.ms, ssl.truststore.location\n" {
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
// file asks for security samsa's tools cannot honour, without printing secrets.
func TestAdminClientPropsRefused(t *testing.T) {
	for _, text := range []struct{ props, want string }{
		{"security.protocol=SASL_SSL\nsasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required password=\"hunter2\";\nclient.id=x\n",
			"--%s: sasl.mechanism GSSAPI (Kerberos, the default when sasl.mechanism is unset) is not supported by samsa's tools; use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER\n"},
		{"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.login.class=com.example.Login\nsasl.jaas.config=x required password=\"hunter2\";\n",
			"--%s: sasl.login.class is set: a custom login class is not supported by samsa's tools\n"},
		{"security.protocol=FOO\n", "--%s: Invalid value FOO for configuration security.protocol: String must be one of: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL\n"},
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
