package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Argument errors never reach a broker: ConfigCommand's IllegalArgumentExceptions print their
// message alone, printUsageAndExit's print the usage after it.
func TestConfigsArgErrors(t *testing.T) {
	const bs = "127.0.0.1:1" // nothing listens: every case must fail before connecting
	for _, tc := range []struct {
		args  []string
		want  string
		usage bool
	}{
		{[]string{"--bootstrap-server", bs, "--entity-type", "topics"}, "Command must include exactly one action: --describe, --alter", true},
		{[]string{"--bootstrap-server", bs, "--describe", "--entity-type", "topics", "--add-config", "a=b"}, `Option "[describe]" can't be used with option "[add-config]"`, true},
		{[]string{"--bootstrap-server", bs, "--describe", "--entity-type", "users", "--entity-type", "users"}, "Duplicate entity type(s) specified: users", false},
		{[]string{"--bootstrap-server", bs, "--describe", "--entity-type", "groups"},
			"Invalid entity type groups, the entity type must be one of topics, clients, users, brokers, ips, broker-loggers, client-metrics with a --bootstrap-server or --bootstrap-controller argument", false},
		{[]string{"--bootstrap-server", bs, "--describe"}, "At least one entity type must be specified", false},
		{[]string{"--bootstrap-server", bs, "--describe", "--entity-type", "users", "--entity-type", "topics"}, "Only 'users' and 'clients' entity types may be specified together", false},
		{[]string{"--bootstrap-server", bs, "--describe", "--entity-type", "users", "--client", "c"}, "--entity-{type,name,default} should not be used in conjunction with specific entity flags", false},
		{[]string{"--bootstrap-server", bs, "--describe", "--entity-type", "brokers", "--entity-name", "b1"}, "The entity name for brokers must be a valid integer broker id, but it is: b1", false},
		{[]string{"--bootstrap-server", bs, "--describe", "--broker-logger", "x"}, "The entity name for broker-loggers must be a valid integer broker id, but it is: x", false},
		{[]string{"--bootstrap-server", bs, "--describe", "--entity-type", "ips", "--entity-name", "not an ip"}, "The entity name for ips must be a valid IP or resolvable host, but it is: not an ip", false},
		{[]string{"--bootstrap-server", bs, "--describe", "--entity-type", "broker-loggers"}, "an entity name must be specified with --describe of broker-loggers", false},
		{[]string{"--bootstrap-server", bs, "--alter", "--entity-type", "users", "--add-config", "a=b"}, "an entity-name or default entity must be specified with --alter of users, clients, brokers or ips", false},
		{[]string{"--bootstrap-server", bs, "--alter", "--entity-type", "topics", "--entity-default", "--add-config", "a=b"}, "an entity name must be specified with --alter of topics", false},
		{[]string{"--bootstrap-server", bs, "--alter", "--entity-type", "topics", "--entity-name", "t"}, "At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter", false},
		{[]string{"--bootstrap-server", bs, "--alter", "--topic", "t", "--add-config", "a=b", "--add-config-file", "f"}, "Only one of --add-config or --add-config-file must be specified", false},
		{[]string{"--bootstrap-server", bs, "--alter", "--entity-type", "users", "--entity-type", "clients", "--entity-name", "u", "--add-config", "producer_byte_rate=1"},
			"An entity name must be specified for every entity type", false},
	} {
		var out, errb bytes.Buffer
		code := runConfigs(tc.args, nil, &out, &errb)
		first, rest, _ := strings.Cut(errb.String(), "\n")
		if code != 1 || first != tc.want || (rest != "") != tc.usage || out.Len() != 0 {
			t.Errorf("%v: exit %d stdout %q stderr %q, want %q (usage %t)", tc.args, code, out.String(), errb.String(), tc.want, tc.usage)
		}
	}
}

// The entity lists pair names with types in command-line order, short forms after.
func TestConfigsEntityLists(t *testing.T) {
	o, _, err := parseConfigsArgs([]string{"--bootstrap-server", "x:1", "--describe",
		"--entity-type", "clients", "--entity-default", "--entity-type", "users", "--entity-name", "u"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(o.entityTypes(), "|") + " " + strings.Join(o.entityNames(), "|"); got != "clients|users |u" {
		t.Errorf("types and names %q", got)
	}
	o, _, err = parseConfigsArgs([]string{"--bootstrap-server", "x:1", "--describe", "--user-defaults", "--client", "c"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(o.entityTypes(), "|") + " " + strings.Join(o.entityNames(), "|"); got != "clients|users c|" {
		t.Errorf("short forms: types and names %q", got)
	}
}

func TestJavaFormats(t *testing.T) {
	for s, ok := range map[string]bool{"10": true, " 1e6 ": true, "10d": true, "5.5F": true, "Infinity": true, "inf": false, "1_000": false, "abc": false, "": false} {
		if _, err := parseJavaDouble(s); (err == nil) != ok {
			t.Errorf("parseJavaDouble(%q): %v", s, err)
		}
	}
	if h := javaStringHash("producer_byte_rate"); h != -832502454 {
		t.Errorf("hash %d", h) // "producer_byte_rate".hashCode() in Java
	}
	// HashMap(2) with two keys: capacity 2 then 4 (threshold 1, then 3).
	if got := javaHashMapOrder([]int32{3, 1}, 2); got[0] != 1 || got[1] != 0 {
		t.Errorf("order %v", got)
	}
}

// configsOn runs samsa configs against bootstrap and returns its exit code and output.
func configsOn(bootstrap string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := runConfigs(append([]string{"--bootstrap-server", bootstrap}, args...), nil, &out, &errb)
	return code, out.String(), errb.String()
}

// Quotas of users, clients, <user, client> pairs and ips through Describe/AlterClientQuotas,
// against kfake's store, in kafka-configs.sh's words.
func TestConfigsQuotasKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bs := c.ListenAddrs()[0]
	must := func(want string, args ...string) {
		t.Helper()
		code, out, errs := configsOn(bs, args...)
		if code != 0 || out != want {
			t.Fatalf("configs %v: exit %d\nstdout %q\nstderr %q\nwant   %q", args, code, out, errs, want)
		}
	}
	fails := func(want string, args ...string) {
		t.Helper()
		code, out, errs := configsOn(bs, args...)
		if code != 1 || out != "" || errs != want+"\n" {
			t.Errorf("configs %v: exit %d stdout %q stderr %q, want %q", args, code, out, errs, want)
		}
	}

	must("Completed updating config for user alice.\n", "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152")
	must("Completed updating config for user alice.\n", "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--entity-type", "clients", "--entity-name", "app", "--add-config", "request_percentage=50")
	must("Completed updating default config for clients in the cluster.\n", "--alter", "--entity-type", "clients", "--entity-default",
		"--add-config", "producer_byte_rate=10485760")
	must("Completed updating config for client app.\n", "--alter", "--client", "app", "--add-config", "consumer_byte_rate=1e3")
	must("Completed updating default config for ips in the cluster.\n", "--alter", "--entity-type", "ips", "--entity-default",
		"--add-config", "connection_creation_rate=10")
	must("Completed updating config for ip 127.0.0.1.\n", "--alter", "--ip", "127.0.0.1", "--add-config", "connection_creation_rate=5")

	// Values in HashMap order: consumer_byte_rate's bucket (1) before producer_byte_rate's (3).
	must("Quota configs for user-principal 'alice' are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0\n",
		"--describe", "--entity-type", "users", "--entity-name", "alice")
	must("Quota configs for user-principal 'alice', client-id 'app' are request_percentage=50.0\n",
		"--describe", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "app")
	must("Quota configs for user-principal 'alice', client-id 'app' are request_percentage=50.0\n",
		"--describe", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients")
	must("Quota configs for the default client-id are producer_byte_rate=1.048576E7\n",
		"--describe", "--entity-type", "clients", "--entity-default")
	// kfake's ANY match leaves the default entity out (Kafka's includes it).
	must("Quota configs for client-id 'app' are consumer_byte_rate=1000.0\n",
		"--describe", "--entity-type", "clients")
	must("Quota configs for ip '127.0.0.1' are connection_creation_rate=5.0\n", "--describe", "--entity-type", "ips")
	must("Quota configs for the default ip are connection_creation_rate=10.0\n", "--describe", "--ip-defaults")
	must("", "--describe", "--entity-type", "users", "--entity-name", "nobody")

	must("Completed updating config for user alice.\n", "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--delete-config", "consumer_byte_rate")
	must("Quota configs for user-principal 'alice' are producer_byte_rate=1048576.0\n",
		"--describe", "--user", "alice")

	fails("Invalid config(s): consumer_byte_rate", "--alter", "--user", "alice", "--delete-config", "consumer_byte_rate")
	fails("Cannot parse quota configuration value for producer_byte_rate: fast", "--alter", "--user", "alice", "--add-config", "producer_byte_rate=fast")
	fails("Only quota configs can be added for 'clients' using --bootstrap-server. Unexpected config names: Set(retention.ms, SCRAM-SHA-256)",
		"--alter", "--client", "c", "--add-config", "retention.ms=1,SCRAM-SHA-256=[password=x]")
	fails("Only quota configs can be deleted for 'clients' using --bootstrap-server. Unexpected config names: ArrayBuffer(SCRAM-SHA-256)",
		"--alter", "--entity-type", "users", "--entity-name", "u", "--entity-type", "clients", "--entity-name", "c", "--delete-config", "SCRAM-SHA-256")
	fails("Cannot alter both quota and SCRAM credential configs simultaneously for 'users' using --bootstrap-server.",
		"--alter", "--user", "u", "--add-config", "producer_byte_rate=1,SCRAM-SHA-256=[password=x]")
	fails("The use of --entity-default or --user-defaults is not allowed with User SCRAM Credentials using --bootstrap-server.",
		"--alter", "--user-defaults", "--add-config", "SCRAM-SHA-256=[password=x]")
	fails("Only connection quota configs can be added for 'ips' using --bootstrap-server. Unexpected config names: producer_byte_rate",
		"--alter", "--ip", "127.0.0.1", "--add-config", "producer_byte_rate=1")

	// SCRAM credentials print after the quotas of a user.
	must("Completed updating config for user alice.\n", "--alter", "--user", "alice", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=pw]")
	must("Quota configs for user-principal 'alice' are producer_byte_rate=1048576.0\n"+
		"SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192\n",
		"--describe", "--entity-type", "users", "--entity-name", "alice")
}

// Topic and broker configs through DescribeConfigs, IncrementalAlterConfigs (topics) and
// AlterConfigs (brokers), and broker loggers against recorded BROKER_LOGGER responses.
func TestConfigsResourcesKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(2), kfake.SeedTopics(1, "t1"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bs := c.ListenAddrs()[0]
	must := func(want string, args ...string) string {
		t.Helper()
		code, out, errs := configsOn(bs, args...)
		if code != 0 || (want != "" && out != want) {
			t.Fatalf("configs %v: exit %d\nstdout %q\nstderr %q\nwant   %q", args, code, out, errs, want)
		}
		return out
	}
	fails := func(want string, args ...string) {
		t.Helper()
		code, out, errs := configsOn(bs, args...)
		if code != 1 || out != "" || !strings.Contains(errs, want) {
			t.Errorf("configs %v: exit %d stdout %q stderr %q, want %q", args, code, out, errs, want)
		}
	}

	must("Completed updating config for topic t1.\n", "--alter", "--topic", "t1", "--add-config", "retention.ms=1000,cleanup.policy=[compact,delete]")
	must("Dynamic configs for topic t1 are:\n"+
		"  cleanup.policy=compact,delete sensitive=false synonyms={DEFAULT_CONFIG:cleanup.policy=delete}\n"+ // kfake's synonyms
		"  retention.ms=1000 sensitive=false synonyms={DEFAULT_CONFIG:retention.ms=604800000}\n",
		"--describe", "--entity-type", "topics", "--entity-name", "t1")
	must("Completed updating config for topic t1.\n", "--alter", "--topic", "t1", "--delete-config", "retention.ms")
	fails("Invalid config(s): retention.ms\n", "--alter", "--topic", "t1", "--delete-config", "retention.ms")
	if out := must("", "--describe", "--entity-type", "topics"); !strings.HasPrefix(out, "Dynamic configs for topic t1 are:\n  cleanup.policy=") {
		t.Errorf("describe all topics: %q", out)
	}
	// Kafka prints the header before Topic.validate fails.
	if code, out, errs := configsOn(bs, "--describe", "--topic", "a b"); code != 1 || out != "Dynamic configs for topic a b are:\n" ||
		!strings.HasPrefix(errs, "Error while executing config command with args '") || !strings.HasSuffix(errs, "'\nTopic name \"a b\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'\n") {
		t.Errorf("invalid topic: exit %d stdout %q stderr %q", code, out, errs)
	}

	// AlterConfigs carries the entity's whole dynamic set: the current entries come along.
	var brokerAlters []kmsg.AlterConfigsRequestResource
	c.ControlKey(33, func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		brokerAlters = append(brokerAlters, kr.(*kmsg.AlterConfigsRequest).Resources...)
		return nil, nil, false
	})
	must("Completed updating default config for brokers in the cluster.\n", "--alter", "--entity-type", "brokers", "--entity-default", "--add-config", "log.retention.ms=7000")
	must("Completed updating config for broker 1.\n", "--alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config", "log.retention.ms=5000")
	must("Completed updating config for broker 1.\n", "--alter", "--broker", "1", "--add-config", "log.retention.bytes=1024")
	if len(brokerAlters) != 3 || brokerAlters[0].ResourceName != "" || brokerAlters[2].ResourceName != "1" || len(brokerAlters[2].Configs) != 2 ||
		brokerAlters[2].Configs[0].Name != "log.retention.bytes" || *brokerAlters[2].Configs[0].Value != "1024" ||
		brokerAlters[2].Configs[1].Name != "log.retention.ms" || *brokerAlters[2].Configs[1].Value != "5000" {
		t.Errorf("AlterConfigs resources %+v", brokerAlters)
	}
	out := must("", "--describe", "--entity-type", "brokers")
	if !strings.HasPrefix(out, "Dynamic configs for broker 0 are:\n") || !strings.Contains(out, "\nDynamic configs for broker 1 are:\n") ||
		!strings.Contains(out, "\n  log.retention.bytes=1024 sensitive=false synonyms={DEFAULT_CONFIG:log.retention.bytes=-1}\n") ||
		!strings.HasSuffix(out, "\nDefault configs for brokers in the cluster are:\n") { // kfake reports no default-source entries
		t.Errorf("describe brokers:\n%s", out)
	}
	fails("Invalid config(s): nope", "--alter", "--broker-defaults", "--delete-config", "nope")
	if out := must("", "--describe", "--broker", "0", "--all"); !strings.HasPrefix(out, "All configs for broker 0 are:\n  broker.id=0 sensitive=false synonyms={}\n") ||
		!strings.Contains(out, "\n  super.users=null sensitive=true synonyms={}\n") && !strings.Contains(out, "\n  super.users= sensitive=true") {
		t.Errorf("describe --all:\n%s", out)
	}

	// kfake has no BROKER_LOGGER: answer as a Kafka broker does.
	var loggerAlters []kmsg.IncrementalAlterConfigsRequestResourceConfig
	c.ControlKey(32, func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kr.(*kmsg.DescribeConfigsRequest)
		if req.Resources[0].ResourceType != kmsg.ConfigResourceTypeBrokerLogger {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
		r := kmsg.NewDescribeConfigsResponseResource()
		r.ResourceType, r.ResourceName = req.Resources[0].ResourceType, req.Resources[0].ResourceName
		for _, l := range [][2]string{{"root", "INFO"}, {"kafka.controller", "TRACE"}, {"kafka.server.ReplicaManager", "INFO"}} {
			rc := kmsg.NewDescribeConfigsResponseResourceConfig()
			rc.Name, rc.Value, rc.Source = l[0], kmsg.StringPtr(l[1]), kmsg.ConfigSourceDynamicBrokerLoggerConfig
			r.Configs = append(r.Configs, rc)
		}
		resp.Resources = append(resp.Resources, r)
		return resp, nil, true
	})
	c.ControlKey(32, func(kr kmsg.Request) (kmsg.Response, error, bool) {
		req := kr.(*kmsg.DescribeConfigsRequest)
		if req.Resources[0].ResourceType != kmsg.ConfigResourceTypeBroker {
			return nil, nil, false
		}
		c.KeepControl()
		resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
		r := kmsg.NewDescribeConfigsResponseResource()
		r.ResourceType, r.ResourceName = req.Resources[0].ResourceType, req.Resources[0].ResourceName
		for _, k := range []string{"listener.name.external.ssl.key.password", "log.retention.ms"} {
			rc := kmsg.NewDescribeConfigsResponseResourceConfig()
			rc.Name, rc.Source = k, kmsg.ConfigSourceDynamicBrokerConfig
			if rc.IsSensitive = strings.Contains(k, "password"); !rc.IsSensitive {
				rc.Value = kmsg.StringPtr("1")
			}
			r.Configs = append(r.Configs, rc)
		}
		resp.Resources = append(resp.Resources, r)
		return resp, nil, true
	})
	fails("All sensitive broker config entries must be specified for --alter, missing entries: Set(listener.name.external.ssl.key.password)\n",
		"--alter", "--broker", "0", "--add-config", "log.retention.ms=2")
	must("Dynamic configs for broker 0 are:\n"+
		"  listener.name.external.ssl.key.password=null sensitive=true synonyms={}\n"+
		"  log.retention.ms=1 sensitive=false synonyms={}\n", "--describe", "--broker", "0")
	c.ControlKey(44, func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kr.(*kmsg.IncrementalAlterConfigsRequest)
		if req.Resources[0].ResourceType != kmsg.ConfigResourceTypeBrokerLogger {
			return nil, nil, false
		}
		loggerAlters = append(loggerAlters, req.Resources[0].Configs...)
		resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		r := kmsg.NewIncrementalAlterConfigsResponseResource()
		r.ResourceType, r.ResourceName = req.Resources[0].ResourceType, req.Resources[0].ResourceName
		resp.Resources = append(resp.Resources, r)
		return resp, nil, true
	})
	must("Dynamic configs for broker-logger 0 are:\n"+
		"  kafka.controller=TRACE sensitive=false synonyms={}\n"+
		"  kafka.server.ReplicaManager=INFO sensitive=false synonyms={}\n"+
		"  root=INFO sensitive=false synonyms={}\n",
		"--describe", "--entity-type", "broker-loggers", "--entity-name", "0")
	must("Completed updating config for broker-logger 0.\n", "--alter", "--broker-logger", "0",
		"--add-config", "kafka.server.ReplicaManager=DEBUG", "--delete-config", "kafka.controller")
	if len(loggerAlters) != 2 || loggerAlters[0].Name != "kafka.server.ReplicaManager" || loggerAlters[0].Op != kmsg.IncrementalAlterConfigOpSet ||
		*loggerAlters[0].Value != "DEBUG" || loggerAlters[1].Name != "kafka.controller" || loggerAlters[1].Op != kmsg.IncrementalAlterConfigOpDelete {
		t.Errorf("logger alterations %+v", loggerAlters)
	}
	fails("Invalid broker logger(s): kafka.nope,kafka.missing\n", "--alter", "--broker-logger", "0",
		"--add-config", "kafka.missing=INFO", "--delete-config", "kafka.nope")
}
