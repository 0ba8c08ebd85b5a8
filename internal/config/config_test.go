package config

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func base(kv ...string) map[string]string {
	m := map[string]string{"zookeeper.connect": "127.0.0.1:2181"}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestFromMapDefaults(t *testing.T) {
	c, warns, err := FromMap(base())
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 0 {
		t.Fatalf("warnings: %v", warns)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"broker.id", c.BrokerID, int32(-1)},
		{"generation", c.BrokerIDGenerationEnable, true},
		{"reserved", c.ReservedBrokerMaxID, int32(1000)},
		{"listeners", c.Listeners, []Listener{{Name: "PLAINTEXT", Host: "", Port: 9092, SecurityProtocol: "PLAINTEXT"}}},
		{"advertised", c.AdvertisedListeners, c.Listeners},
		{"inter broker", c.InterBrokerListenerName, "PLAINTEXT"},
		{"log dirs", c.LogDirs, []string{"/tmp/kafka-logs"}},
		{"zk session", c.ZookeeperSessionTimeout, 18 * time.Second},
		{"zk connection", c.ZookeeperConnectionTimeout, 18 * time.Second},
		{"partitions", c.NumPartitions, int32(1)},
		{"rf", c.DefaultReplicationFactor, int16(1)},
		{"min isr", c.MinInSyncReplicas, int32(1)},
		{"auto create", c.AutoCreateTopicsEnable, true},
		{"delete", c.DeleteTopicEnable, true},
		{"socket.request.max.bytes", c.SocketRequestMaxBytes, int32(104857600)},
		{"message.max.bytes", c.MessageMaxBytes, int32(1048588)},
		{"replica lag", c.ReplicaLagTimeMax, 30 * time.Second},
		{"fetch wait", c.ReplicaFetchWaitMax, 500 * time.Millisecond},
		{"flush scheduler saturates", c.LogFlushSchedulerInterval, time.Duration(math.MaxInt64)},
		{"offsets partitions", c.OffsetsTopicNumPartitions, int32(50)},
		{"offsets rf", c.OffsetsTopicReplicationFactor, int16(3)},
		{"log format", c.LogFormat, "text"},
		{"log level", c.LogLevel, "info"},
		{"props retention.hours", c.Props["log.retention.hours"], "168"},
		{"props retention.ms resolved", c.Props["log.retention.ms"], "604800000"},
		{"props roll.ms resolved", c.Props["log.roll.ms"], "604800000"},
		{"props roll.jitter.ms resolved", c.Props["log.roll.jitter.ms"], "0"},
		{"props flush.interval.ms resolved", c.Props["log.flush.interval.ms"], "9223372036854775807"},
		{"props segment.bytes", c.Props["log.segment.bytes"], "1073741824"},
		{"props cleanup.policy", c.Props["log.cleanup.policy"], "delete"},
		{"props timestamp type", c.Props["log.message.timestamp.type"], "CreateTime"},
		{"props compression", c.Props["compression.type"], "producer"},
		{"props min.cleanable", c.Props["log.cleaner.min.cleanable.ratio"], "0.5"},
		{"static only set keys", c.Static, map[string]string{"zookeeper.connect": "127.0.0.1:2181"}},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s: got %#v, want %#v", ch.name, ch.got, ch.want)
		}
	}
	if _, ok := c.Props["broker.rack"]; ok {
		t.Errorf("null default broker.rack present in Props")
	}
}

func TestRetentionSynonyms(t *testing.T) {
	tests := []struct {
		name string
		kv   []string
		want string
	}{
		{"hours", []string{"log.retention.hours", "1"}, "3600000"},
		{"minutes beat hours", []string{"log.retention.hours", "1", "log.retention.minutes", "2"}, "120000"},
		{"ms beats minutes", []string{"log.retention.minutes", "2", "log.retention.ms", "5"}, "5"},
		{"negative means forever", []string{"log.retention.ms", "-5"}, "-1"},
		{"negative hours forever", []string{"log.retention.hours", "-1"}, "-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := FromMap(base(tt.kv...))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Props["log.retention.ms"]; got != tt.want {
				t.Fatalf("log.retention.ms = %s, want %s", got, tt.want)
			}
		})
	}
	c, _, err := FromMap(base("log.roll.hours", "2", "log.roll.jitter.hours", "1", "log.flush.scheduler.interval.ms", "3000"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Props["log.roll.ms"] != "7200000" || c.Props["log.roll.jitter.ms"] != "3600000" || c.Props["log.flush.interval.ms"] != "3000" {
		t.Fatalf("roll/jitter/flush: %s %s %s", c.Props["log.roll.ms"], c.Props["log.roll.jitter.ms"], c.Props["log.flush.interval.ms"])
	}
}

func TestFromMapValid(t *testing.T) {
	tests := []struct {
		name  string
		kv    []string
		check func(t *testing.T, c *Config)
	}{
		{"log.dirs beats log.dir", []string{"log.dir", "/a", "log.dirs", " /b , /c "}, func(t *testing.T, c *Config) {
			if !reflect.DeepEqual(c.LogDirs, []string{"/b", "/c"}) {
				t.Fatal(c.LogDirs)
			}
		}},
		{"log.dir alone", []string{"log.dir", "/a"}, func(t *testing.T, c *Config) {
			if !reflect.DeepEqual(c.LogDirs, []string{"/a"}) {
				t.Fatal(c.LogDirs)
			}
		}},
		{"port 0 and two listeners", []string{
			"listeners", "plaintext://127.0.0.1:0,INTERNAL://[::1]:0",
			"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
			"inter.broker.listener.name", "INTERNAL",
		}, func(t *testing.T, c *Config) {
			want := []Listener{
				{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 0, SecurityProtocol: "PLAINTEXT"},
				{Name: "INTERNAL", Host: "::1", Port: 0, SecurityProtocol: "PLAINTEXT"},
			}
			if !reflect.DeepEqual(c.Listeners, want) || !reflect.DeepEqual(c.AdvertisedListeners, want) {
				t.Fatalf("%+v / %+v", c.Listeners, c.AdvertisedListeners)
			}
			if c.InterBrokerListenerName != "INTERNAL" {
				t.Fatal(c.InterBrokerListenerName)
			}
			if want[1].String() != "INTERNAL://[::1]:0" {
				t.Fatal(want[1].String())
			}
		}},
		{"same port on IPv4 and IPv6", []string{
			"listeners", "PLAINTEXT://127.0.0.1:9092,INTERNAL://[::1]:9092",
			"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
		}, func(t *testing.T, c *Config) {
			if len(c.Listeners) != 2 {
				t.Fatal(c.Listeners)
			}
		}},
		{"advertised differs", []string{"listeners", "PLAINTEXT://0.0.0.0:9092", "advertised.listeners", "PLAINTEXT://kafka1:9092"}, func(t *testing.T, c *Config) {
			if c.AdvertisedListeners[0].Host != "kafka1" || c.Listeners[0].Host != "0.0.0.0" {
				t.Fatalf("%+v %+v", c.Listeners, c.AdvertisedListeners)
			}
			if l, ok := c.Listener("PLAINTEXT"); !ok || l.Host != "kafka1" {
				t.Fatal(l, ok)
			}
		}},
		{"broker id and bools normalized", []string{"broker.id", " 7 ", "auto.create.topics.enable", "FALSE", "log.cleanup.policy", "compact , delete"}, func(t *testing.T, c *Config) {
			if c.BrokerID != 7 || c.AutoCreateTopicsEnable || c.Props["auto.create.topics.enable"] != "false" || c.Props["log.cleanup.policy"] != "compact,delete" {
				t.Fatalf("%d %v %q %q", c.BrokerID, c.AutoCreateTopicsEnable, c.Props["auto.create.topics.enable"], c.Props["log.cleanup.policy"])
			}
			if c.Static["broker.id"] != "7" {
				t.Fatal(c.Static)
			}
		}},
		{"zk connection timeout", []string{"zookeeper.connection.timeout.ms", "6000"}, func(t *testing.T, c *Config) {
			if c.ZookeeperConnectionTimeout != 6*time.Second {
				t.Fatal(c.ZookeeperConnectionTimeout)
			}
		}},
		{"json logs", []string{"samsa.log.format", "json", "samsa.log.level", "debug"}, func(t *testing.T, c *Config) {
			if c.LogFormat != "json" || c.LogLevel != "debug" {
				t.Fatal(c.LogFormat, c.LogLevel)
			}
		}},
		{"per-listener override known", []string{"listener.name.plaintext.foo", "x"}, func(t *testing.T, c *Config) {
			if c.Props["listener.name.plaintext.foo"] != "x" {
				t.Fatal(c.Props)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, warns, err := FromMap(base(tt.kv...))
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) != 0 {
				t.Fatalf("warnings: %v", warns)
			}
			tt.check(t, c)
		})
	}
}

func TestFromMapUnknownKeyWarns(t *testing.T) {
	c, warns, err := FromMap(base("no.such.key", "1", "broker.idd", "2"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"The configuration 'broker.idd' was supplied but isn't a known config.",
		"The configuration 'no.such.key' was supplied but isn't a known config.",
	}
	if !reflect.DeepEqual(warns, want) {
		t.Fatalf("warnings %q", warns)
	}
	if c.Props["no.such.key"] != "1" {
		t.Fatal("unknown key not kept in Props")
	}
}

func TestFromMapInvalid(t *testing.T) {
	tests := []struct {
		name string
		kv   []string
		want []string // substrings of the error
		drop string   // delete this key from the base map
	}{
		{name: "not a number", kv: []string{"num.partitions", "three"}, want: []string{`"three"`, "num.partitions"}},
		{name: "below min", kv: []string{"num.partitions", "0"}, want: []string{`"0"`, "num.partitions", "at least 1"}},
		{name: "int overflow", kv: []string{"log.segment.bytes", "4294967296"}, want: []string{"log.segment.bytes", "4294967296"}},
		{name: "bad bool", kv: []string{"delete.topic.enable", "yes"}, want: []string{"delete.topic.enable", `"yes"`}},
		{name: "bad enum", kv: []string{"log.message.timestamp.type", "Create"}, want: []string{"log.message.timestamp.type", "Create"}},
		{name: "bad list element", kv: []string{"log.cleanup.policy", "delete,forever"}, want: []string{"log.cleanup.policy", "forever"}},
		{name: "ratio range", kv: []string{"log.cleaner.min.cleanable.ratio", "1.5"}, want: []string{"log.cleaner.min.cleanable.ratio", "1.5"}},
		{name: "all errors at once", kv: []string{"num.partitions", "x", "min.insync.replicas", "0", "broker.id", "y", "listeners", "FOO://:1"},
			want: []string{"num.partitions", "min.insync.replicas", "broker.id", "FOO"}},
		{name: "missing zookeeper.connect", drop: "zookeeper.connect", want: []string{"zookeeper.connect"}},
		{name: "broker.id below -1", kv: []string{"broker.id", "-2"}, want: []string{"broker.id", "-2"}},
		{name: "broker.id above reserved", kv: []string{"broker.id", "1001"}, want: []string{"broker.id", "1001"}},
		{name: "listener unparsable", kv: []string{"listeners", "localhost:9092"}, want: []string{"listeners", "localhost:9092"}},
		{name: "listener unknown protocol", kv: []string{"listeners", "FOO://:9092"}, want: []string{"listeners", "FOO"}},
		{name: "listener duplicate names", kv: []string{"listeners", "PLAINTEXT://:9092,PLAINTEXT://:9093"}, want: []string{"listeners", "different name"}},
		{name: "listener duplicate ports", kv: []string{"listeners", "PLAINTEXT://:9092,SSL://:9092"}, want: []string{"listeners", "different port"}},
		{name: "listener port range", kv: []string{"listeners", "PLAINTEXT://:70000"}, want: []string{"listeners", "70000"}},
		{name: "advertise 0.0.0.0", kv: []string{"listeners", "PLAINTEXT://0.0.0.0:9092"}, want: []string{"advertised.listeners", "0.0.0.0"}},
		{name: "advertised not in listeners", kv: []string{"advertised.listeners", "SSL://h:1"}, want: []string{"advertised.listeners", "SSL"}},
		{name: "inter broker listener missing", kv: []string{"inter.broker.listener.name", "SSL"}, want: []string{"inter.broker.listener.name", "SSL"}},
		{name: "both inter broker keys", kv: []string{"inter.broker.listener.name", "PLAINTEXT", "security.inter.broker.protocol", "PLAINTEXT"}, want: []string{"only one of"}},
		{name: "bad protocol map", kv: []string{"listener.security.protocol.map", "PLAINTEXT"}, want: []string{"listener.security.protocol.map"}},
		{name: "kraft", kv: []string{"process.roles", "broker"}, want: []string{"process.roles"}},
		{name: "fetch wait above lag", kv: []string{"replica.fetch.wait.max.ms", "40000"}, want: []string{"replica.fetch.wait.max.ms", "40000"}},
		{name: "bad log format", kv: []string{"samsa.log.format", "xml"}, want: []string{"samsa.log.format", "xml"}},
		{name: "sasl listener with the GSSAPI default", kv: []string{"listeners", "SASL_PLAINTEXT://:9092", "security.inter.broker.protocol", "SASL_PLAINTEXT"},
			want: []string{"sasl.enabled.mechanisms of listener SASL_PLAINTEXT", "GSSAPI (Kerberos) is not supported", "sasl.mechanism.inter.broker.protocol"}},
		{name: "authorizer other than AclAuthorizer", kv: []string{"authorizer.class.name", "com.example.MyAuthorizer"}, want: []string{"authorizer.class.name", "com.example.MyAuthorizer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base(tt.kv...)
			if tt.drop != "" {
				delete(m, tt.drop)
			}
			c, _, err := FromMap(m)
			if err == nil {
				t.Fatalf("no error; config %+v", c)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestParseProperties(t *testing.T) {
	text := "# comment\n" +
		"  ! another comment\n" +
		"\n" +
		"broker.id=1\n" +
		"log.dirs : /a,\\\n" +
		"           /b\n" +
		"listeners PLAINTEXT://:9092\n" +
		"key\\ with\\ spaces = v\\tw\n" +
		"unicode=\\u0041\\u00e9\n" +
		"empty=\n" +
		"bare\n" +
		"colon:value=with=equals\n" +
		"escaped\\=key=1\r\n" +
		"path=C:\\\\tmp\n" +
		"dup=1\n" +
		"dup=2\n" +
		"trailing=x\\"
	got, err := ParseProperties(text)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"broker.id":       "1",
		"log.dirs":        "/a,/b",
		"listeners":       "PLAINTEXT://:9092",
		"key with spaces": "v\tw",
		"unicode":         "Aé",
		"empty":           "",
		"bare":            "",
		"colon":           "value=with=equals",
		"escaped=key":     "1",
		"path":            `C:\tmp`,
		"dup":             "2",
		"trailing":        "x",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if _, err := ParseProperties("a=\\u12"); err == nil {
		t.Fatal("malformed \\u accepted")
	}
}

func TestParseYAML(t *testing.T) {
	text := `
broker.id: 1
log.dirs: [/a, /b]
listeners: PLAINTEXT://127.0.0.1:9092
log.cleaner.min.cleanable.ratio: 0.50
auto.create.topics.enable: false
advertised.listeners: ~
log:
  retention:
    hours: 5
sasl.enabled.mechanisms:
  - PLAIN
  - SCRAM-SHA-256
`
	got, err := ParseYAML(text)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"broker.id":                       "1",
		"log.dirs":                        "/a,/b",
		"listeners":                       "PLAINTEXT://127.0.0.1:9092",
		"log.cleaner.min.cleanable.ratio": "0.50",
		"auto.create.topics.enable":       "false",
		"log.retention.hours":             "5",
		"sasl.enabled.mechanisms":         "PLAIN,SCRAM-SHA-256",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if _, err := ParseYAML("a: 1\na: 2\n"); err == nil {
		t.Fatal("duplicate key accepted")
	}
	if _, err := ParseYAML("log.retention.hours: 1\nlog:\n  retention.hours: 2\n"); err == nil {
		t.Fatal("duplicate flattened key accepted")
	}
	if m, err := ParseYAML("broker.id=1\nlog.dirs=/x\n"); err != nil || m != nil {
		t.Fatalf("properties text read as YAML mapping: %v %v", m, err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	yamlPath := write("broker.yaml", "broker.id: 3\nzookeeper.connect: 127.0.0.1:2181/samsa\nlog.dirs:\n  - /d1\n  - /d2\nlisteners: PLAINTEXT://127.0.0.1:0\nbogus.key: 1\n")
	propsPath := write("server.properties", "broker.id=3\nzookeeper.connect=127.0.0.1:2181/samsa\nlog.dirs=/d1,/d2\nlisteners=PLAINTEXT://127.0.0.1:0\nbogus.key=1\n")
	sniffed := write("server.conf", "# Kafka\nbroker.id=3\nzookeeper.connect=127.0.0.1:2181/samsa\nlog.dirs=/d1,/d2\nlisteners PLAINTEXT://127.0.0.1:0\nbogus.key=1\n")
	sniffedYAML := write("broker.conf", "broker.id: 3\nzookeeper.connect: 127.0.0.1:2181/samsa\nlog.dirs: /d1,/d2\nlisteners: PLAINTEXT://127.0.0.1:0\nbogus.key: 1\n")
	for _, p := range []string{yamlPath, propsPath, sniffed, sniffedYAML} {
		t.Run(filepath.Base(p), func(t *testing.T) {
			c, warns, err := Load(p, []string{"broker.id=4", "log.retention.ms=1000"})
			if err != nil {
				t.Fatal(err)
			}
			if c.BrokerID != 4 || c.ZookeeperConnect != "127.0.0.1:2181/samsa" || !reflect.DeepEqual(c.LogDirs, []string{"/d1", "/d2"}) ||
				c.Listeners[0].Port != 0 || c.Props["log.retention.ms"] != "1000" {
				t.Fatalf("%+v", c)
			}
			if len(warns) != 1 || !strings.Contains(warns[0], "bogus.key") {
				t.Fatalf("warnings %q", warns)
			}
		})
	}
	if _, _, err := Load(yamlPath, []string{"novalue"}); err == nil {
		t.Fatal("override without = accepted")
	}
	if _, _, err := Load(filepath.Join(dir, "missing.yaml"), nil); err == nil {
		t.Fatal("missing file accepted")
	}
	if _, _, err := Load(write("props.yaml", "broker.id=1\nzookeeper.connect=h:1\n"), nil); err == nil || !strings.Contains(err.Error(), "mapping") {
		t.Fatalf("properties text in a .yaml file: %v", err)
	}
	bad := write("bad.yaml", "broker.id: x\nnum.partitions: 0\nzookeeper.connect: h:1\n")
	_, _, err := Load(bad, nil)
	if err == nil || !strings.Contains(err.Error(), "broker.id") || !strings.Contains(err.Error(), "num.partitions") {
		t.Fatalf("want both errors, got %v", err)
	}
}

func TestDefsDefaultsValid(t *testing.T) {
	// Every default must pass its own definition's parsing and validation.
	for _, x := range defs {
		if !x.HasDefault {
			continue
		}
		if _, err := x.normalize(x.Default); err != nil {
			t.Errorf("%s: %v", x.Name, err)
		}
	}
}

// saslSSL is a broker whose only listener is SASL_SSL with PLAIN between brokers.
func saslSSL(kv ...string) map[string]string {
	return base(append([]string{
		"listeners", "SASL_SSL://127.0.0.1:9093",
		"security.inter.broker.protocol", "SASL_SSL",
		"sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256",
		"sasl.mechanism.inter.broker.protocol", "PLAIN",
	}, kv...)...)
}

func TestSecurityAccepted(t *testing.T) {
	tests := []struct {
		name string
		m    map[string]string
		warn []string // substrings, one warning each, in order
	}{
		{name: "ssl listener", m: base("listeners", "PLAINTEXT://:9092,SSL://:9093", "ssl.keystore.location", "/k.p12")},
		{name: "sasl_ssl between brokers", m: saslSSL()},
		{name: "listener-prefixed mechanisms", m: base(
			"listeners", "INTERNAL://:9092,EXTERNAL://:9093",
			"listener.security.protocol.map", "INTERNAL:SASL_PLAINTEXT,EXTERNAL:SASL_SSL",
			"inter.broker.listener.name", "INTERNAL",
			"sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512",
			"listener.name.internal.sasl.enabled.mechanisms", "SCRAM-SHA-512",
			"listener.name.external.sasl.enabled.mechanisms", "OAUTHBEARER, PLAIN")},
		{name: "acl authorizer with super users", m: base("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer", "super.users", "User:admin")},
		{name: "warnings", m: saslSSL(
			"ssl.keymanager.algorithm", "PKIX",
			"sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required;",
			"sasl.kerberos.service.name", "kafka",
			"sasl.oauthbearer.jwks.endpoint.url", "https://idp/jwks",
			"super.users", "User:admin"),
			warn: []string{"'sasl.jaas.config' has no effect: a broker reads only listener.name.<listener>.<mechanism>.sasl.jaas.config",
				"'sasl.kerberos.service.name' has no effect: samsa does not serve GSSAPI",
				"'sasl.oauthbearer.jwks.endpoint.url' has no effect", "'ssl.keymanager.algorithm' has no effect",
				"'super.users' has no effect: no authorizer.class.name"}},
		{name: "tls and sasl keys on a plaintext broker", m: base("ssl.truststore.location", "/t.p12", "sasl.enabled.mechanisms", "PLAIN"),
			warn: []string{"'sasl.enabled.mechanisms' has no effect: no listener uses SASL", "'ssl.truststore.location' has no effect: no listener uses SSL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, warns, err := FromMap(tt.m)
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) != len(tt.warn) {
				t.Fatalf("warnings %q, want %d", warns, len(tt.warn))
			}
			for i, w := range tt.warn {
				if !strings.Contains(warns[i], w) {
					t.Errorf("warning %q lacks %q", warns[i], w)
				}
			}
		})
	}
}

func TestSecurityRefused(t *testing.T) {
	tests := []struct {
		name string
		m    map[string]string
		want []string
	}{
		{"gssapi enabled", saslSSL("sasl.enabled.mechanisms", "PLAIN,GSSAPI"), []string{`"GSSAPI"`, "listener SASL_SSL", "Kerberos"}},
		{"unknown mechanism", saslSSL("sasl.enabled.mechanisms", "PLAIN,DIGEST-MD5"), []string{`"DIGEST-MD5"`, "unsupported SASL mechanism"}},
		{"no mechanism", saslSSL("listener.name.sasl_ssl.sasl.enabled.mechanisms", ""), []string{"no SASL mechanism is enabled", "listener.name.sasl_ssl.sasl.enabled.mechanisms"}},
		{"inter-broker mechanism not enabled", saslSSL("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512"),
			[]string{"sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms", "SCRAM-SHA-512"}},
		{"inter-broker gssapi", saslSSL("sasl.mechanism.inter.broker.protocol", "GSSAPI"), []string{"sasl.mechanism.inter.broker.protocol", "Kerberos"}},
		{"simple acl authorizer", base("authorizer.class.name", "kafka.security.auth.SimpleAclAuthorizer"), []string{"removed in Kafka 3.0"}},
		{"kraft authorizer", base("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"), []string{"authorizer.class.name"}},
		{"principal builder", base("principal.builder.class", "com.example.PB"), []string{"principal.builder.class", "Java classes"}},
		{"server callback handler under a prefix", saslSSL("listener.name.sasl_ssl.plain.sasl.server.callback.handler.class", "com.example.H"),
			[]string{"listener.name.sasl_ssl.plain.sasl.server.callback.handler.class"}},
		{"login class", saslSSL("sasl.login.class", "com.example.L"), []string{"sasl.login.class"}},
		{"ssl engine factory", base("ssl.engine.factory.class", "com.example.F"), []string{"ssl.engine.factory.class"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := FromMap(tt.m)
			if err == nil {
				t.Fatalf("accepted: listeners %v", c.Listeners)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestListenerValue(t *testing.T) {
	p := map[string]string{"ssl.client.auth": "none", "listener.name.internal.ssl.client.auth": "required"}
	if v, _ := ListenerValue(p, "INTERNAL", "ssl.client.auth"); v != "required" {
		t.Fatal(v)
	}
	if v, _ := ListenerValue(p, "EXTERNAL", "ssl.client.auth"); v != "none" {
		t.Fatal(v)
	}
	if _, ok := ListenerValue(p, "EXTERNAL", "ssl.keystore.location"); ok {
		t.Fatal("unset key reported set")
	}
	for k, want := range map[string]string{
		"listener.name.a.plain.sasl.jaas.config":         "sasl.jaas.config",
		"listener.name.a.ssl.keystore.type":              "ssl.keystore.type",
		"listener.name.a.scram-sha-256.sasl.login.class": "sasl.login.class",
		"ssl.keystore.type":                              "ssl.keystore.type",
	} {
		if got := unprefixed(k); got != want {
			t.Errorf("unprefixed(%q) = %q, want %q", k, got, want)
		}
	}
}
