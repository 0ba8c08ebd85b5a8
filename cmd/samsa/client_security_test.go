package main

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/samsa-kafka/samsa/internal/security/testcerts"
)

const (
	plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";`
	scramJAAS = `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";`
)

// TestClientSecurityOpts: which properties are honoured, which fail, and which are left for
// the tool to warn about.
func TestClientSecurityOpts(t *testing.T) {
	for _, tt := range []struct {
		name    string
		props   map[string]string
		used    []string // nil: none
		nOpts   int
		wantErr string
	}{
		{"plaintext", map[string]string{"security.protocol": " plaintext ", "acks": "all"}, []string{"security.protocol"}, 0, ""},
		{"nothing", map[string]string{"client.id": "x"}, nil, 0, ""},
		{"sasl keys on plaintext do nothing", map[string]string{"sasl.mechanism": "PLAIN", "sasl.jaas.config": plainJAAS, "sasl.login.class": "x"}, nil, 0, ""},
		{"plain", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": plainJAAS, "ssl.truststore.location": "/x"},
			[]string{"sasl.jaas.config", "sasl.mechanism", "security.protocol"}, 1, ""},
		{"scram-512", map[string]string{"security.protocol": "sasl_plaintext", "sasl.mechanism": " SCRAM-SHA-512 ", "sasl.jaas.config": scramJAAS},
			[]string{"sasl.jaas.config", "sasl.mechanism", "security.protocol"}, 1, ""},
		{"oauthbearer unsecured", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
			"sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="alice";`},
			[]string{"sasl.jaas.config", "sasl.mechanism", "security.protocol"}, 1, ""},
		{"oauthbearer without sub", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
			"sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginLifetimeSeconds="60";`},
			nil, 0, "sasl.jaas.config: "},
		{"gssapi default", map[string]string{"security.protocol": "SASL_SSL"}, nil, 0, "sasl.mechanism GSSAPI"},
		{"unknown mechanism", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "AWS_MSK_IAM"}, nil, 0, "sasl.mechanism AWS_MSK_IAM is not supported"},
		{"no jaas", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, nil, 0, "sasl.jaas.config is required for sasl.mechanism PLAIN"},
		{"two modules", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": plainJAAS + " " + plainJAAS},
			nil, 0, "JAAS config property contains 2 login modules, should be 1 module"},
		{"wrong module", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
			"sasl.jaas.config": `com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;`}, nil, 0, "sasl.jaas.config: "},
		{"no password", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
			"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="a";`}, nil, 0, "password"},
		{"callback handler", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
			"sasl.login.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler"},
			nil, 0, "sasl.login.callback.handler.class is set: a custom SASL login callback handler is not supported"},
		{"ssl engine", map[string]string{"security.protocol": "SSL", "ssl.engine.factory.class": "x"}, nil, 0, "ssl.engine.factory.class is set"},
		{"ssl engine on plaintext", map[string]string{"ssl.engine.factory.class": "x"}, nil, 0, ""},
		{"jks trust store", map[string]string{"security.protocol": "SSL", "ssl.truststore.location": "/x.jks"}, nil, 0, "JKS"},
		{"bad protocol", map[string]string{"security.protocol": "TLS"}, nil, 0, "Invalid value TLS for configuration security.protocol"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := clientSecurityOpts(tt.props)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "admin-secret") {
					t.Fatalf("secret in %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var used []string
			for k := range cs.used {
				used = append(used, k)
			}
			sort.Strings(used)
			if !reflect.DeepEqual(used, tt.used) || len(cs.opts) != tt.nOpts {
				t.Fatalf("used %q, %d options; want %q, %d", used, len(cs.opts), tt.used, tt.nOpts)
			}
		})
	}
}

// saslCluster is a kfake cluster with SASL on (SASL_PLAINTEXT, or SASL_SSL with tlsCfg) and
// users admin/admin-secret for PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512.
func saslCluster(t *testing.T, tlsCfg *tls.Config) *kfake.Cluster {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(1, "sec"), kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "admin", "admin-secret"),
		kfake.Superuser("SCRAM-SHA-256", "admin", "admin-secret"),
		kfake.Superuser("SCRAM-SHA-512", "admin", "admin-secret")}
	if tlsCfg != nil {
		opts = append(opts, kfake.TLS(tlsCfg))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestAdminToolsSASL: topics lists through PLAIN and both SCRAM mechanisms; a wrong password
// fails.
func TestAdminToolsSASL(t *testing.T) {
	c := saslCluster(t, nil)
	bs := c.ListenAddrs()[0]
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		jaas := plainJAAS
		if mech != "PLAIN" {
			jaas = scramJAAS
		}
		file := writeProps(t, fmt.Sprintf("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=%s\nsasl.jaas.config=%s\n", mech, jaas))
		var out, errb bytes.Buffer
		code := runTopics([]string{"--bootstrap-server", bs, "--list", "--command-config", file}, nil, &out, &errb)
		if code != 0 || out.String() != "sec\n" || errb.String() != "" {
			t.Fatalf("%s: code %d stdout %q stderr %q", mech, code, out.String(), errb.String())
		}
	}
	bad := writeProps(t, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config="+strings.Replace(scramJAAS, "admin-secret", "wrong", 1)+"\n")
	var out, errb bytes.Buffer
	code := runTopics([]string{"--bootstrap-server", bs, "--list", "--command-config", bad}, nil, &out, &errb)
	if code == 0 || out.String() == "sec\n" {
		t.Fatalf("wrong password: code %d stdout %q stderr %q", code, out.String(), errb.String())
	}
	// Without security the SASL listener does not answer requests.
	out.Reset()
	code = runAcls([]string{"--bootstrap-server", bs, "--list", "--command-config", writeProps(t, "client.id=x\n")}, nil, &out, &errb)
	if code == 0 {
		t.Fatalf("plaintext client on a SASL listener: code 0, stdout %q", out.String())
	}
}

// TestToolsSASLSSL: with mutual TLS and SCRAM over it, the console producer and consumer and
// both perf tools work from their own property options; a trust store without the CA fails.
func TestToolsSASLSSL(t *testing.T) {
	b, err := testcerts.Generate(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := saslCluster(t, &tls.Config{Certificates: []tls.Certificate{b.Broker.TLS}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: b.Pool})
	bs := c.ListenAddrs()[0]
	props := map[string]string{
		"security.protocol":       "SASL_SSL",
		"sasl.mechanism":          "SCRAM-SHA-256",
		"sasl.jaas.config":        scramJAAS,
		"ssl.truststore.type":     "PKCS12",
		"ssl.truststore.location": b.Truststore,
		"ssl.truststore.password": testcerts.Password,
		"ssl.keystore.type":       "PKCS12",
		"ssl.keystore.location":   b.Alice.PKCS12,
		"ssl.keystore.password":   testcerts.Password,
	}
	var file strings.Builder
	var pairs []string
	for k, v := range props {
		fmt.Fprintf(&file, "%s=%s\n", k, v)
		pairs = append(pairs, k+"="+v)
	}
	config := writeProps(t, file.String())

	// console-producer with --producer-property, console-consumer with --consumer.config.
	args := []string{"--bootstrap-server", bs, "--topic", "sec"}
	for _, p := range pairs {
		args = append(args, "--producer-property", p)
	}
	var out, errb bytes.Buffer
	if code := runConsoleProducer(args, strings.NewReader("one\ntwo\n"), &out, &errb); code != 0 {
		t.Fatalf("console-producer: code %d stderr %q", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	code := runConsoleConsumer([]string{"--bootstrap-server", bs, "--topic", "sec", "--from-beginning", "--max-messages", "2",
		"--timeout-ms", "10000", "--consumer.config", config}, nil, &out, &errb)
	if code != 0 || out.String() != "one\ntwo\n" {
		t.Fatalf("console-consumer: code %d stdout %q stderr %q", code, out.String(), errb.String())
	}

	// The perf tools take the same file.
	out.Reset()
	errb.Reset()
	code = runProducerPerfTest([]string{"--topic", "sec", "--num-records", "5", "--record-size", "10", "--throughput", "-1",
		"--producer.config", config, "--producer-props", "bootstrap.servers=" + bs}, nil, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "5 records sent") || strings.Contains(errb.String(), "ssl.") || strings.Contains(errb.String(), "sasl.") {
		t.Fatalf("producer-perf-test: code %d stdout %q stderr %q", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	code = runConsumerPerfTest([]string{"--bootstrap-server", bs, "--topic", "sec", "--messages", "7", "--timeout", "10000",
		"--consumer.config", config, "--hide-header"}, nil, &out, &errb)
	if code != 0 || strings.Contains(out.String(), "WARNING") {
		t.Fatalf("consumer-perf-test: code %d stdout %q stderr %q", code, out.String(), errb.String())
	}

	// An admin tool over the same connection; then a trust store that lacks the CA.
	out.Reset()
	errb.Reset()
	if code := runTopics([]string{"--bootstrap-server", bs, "--list", "--command-config", config}, nil, &out, &errb); code != 0 || out.String() != "sec\n" {
		t.Fatalf("topics over SASL_SSL: code %d stdout %q stderr %q", code, out.String(), errb.String())
	}
	other, err := testcerts.Generate(filepath.Join(t.TempDir(), "other"), nil)
	if err != nil {
		t.Fatal(err)
	}
	untrusting := writeProps(t, strings.Replace(file.String(), b.Truststore, other.Truststore, 1))
	out.Reset()
	errb.Reset()
	if code := runTopics([]string{"--bootstrap-server", bs, "--list", "--command-config", untrusting}, nil, &out, &errb); code == 0 {
		t.Fatalf("untrusted broker certificate accepted: stdout %q", out.String())
	}
}
