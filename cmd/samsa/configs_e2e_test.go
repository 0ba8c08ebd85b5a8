package main

import (
	"strings"
	"testing"
	"time"
)

// samsa configs against real brokers: dynamic broker configs (default and per broker) reach
// the brokers and describe with Kafka's sources and synonyms, client and ip quotas are stored
// and described, broker loggers change level.
func TestConfigsDynamicEndToEnd(t *testing.T) {
	addrs, _ := startTxnBrokers(t, 2)
	bs := strings.Join(addrs, ",")
	must := func(want string, args ...string) string {
		t.Helper()
		code, out, errs := configsOn(bs, args...)
		if code != 0 || (want != "" && out != want) {
			t.Fatalf("configs %v: exit %d\nstdout %q\nstderr %q\nwant   %q", args, code, out, errs, want)
		}
		return out
	}
	// eventually retries a describe until it prints want: other brokers apply a change when
	// its ZooKeeper notification reaches them.
	eventually := func(want string, args ...string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			code, out, errs := configsOn(bs, args...)
			if code == 0 && out == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("configs %v: exit %d\nstdout %q\nstderr %q\nwant   %q", args, code, out, errs, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	must("Completed updating default config for brokers in the cluster.\n",
		"--alter", "--entity-type", "brokers", "--entity-default", "--add-config", "log.retention.ms=7000")
	must("Completed updating config for broker 0.\n", "--alter", "--broker", "0", "--add-config", "log.retention.ms=5000")
	eventually("Dynamic configs for broker 0 are:\n"+
		"  log.retention.ms=5000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=5000, "+
		"DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7000, DEFAULT_CONFIG:log.retention.hours=168}\n",
		"--describe", "--entity-type", "brokers", "--entity-name", "0")
	// The default resource lists only DYNAMIC_DEFAULT_BROKER_CONFIG synonyms (ConfigHelper's
	// createBrokerConfigEntry with perBrokerConfig=false).
	eventually("Default configs for brokers in the cluster are:\n"+
		"  log.retention.ms=7000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7000}\n",
		"--describe", "--entity-type", "brokers", "--entity-default")
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := must("", "--describe", "--entity-type", "brokers", "--entity-name", "1", "--all")
		if strings.Contains(out, "\n  log.retention.ms=7000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7000, DEFAULT_CONFIG:log.retention.hours=168}\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker 1 does not report the cluster default:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	code, out, errs := configsOn(bs, "--alter", "--broker", "0", "--add-config", "broker.id=5")
	if code != 1 || out != "" || !strings.Contains(errs, "Cannot update these configs dynamically: Set(broker.id)") {
		t.Errorf("a static key: exit %d stdout %q stderr %q", code, out, errs)
	}
	must("Completed updating config for broker 0.\n", "--alter", "--broker", "0", "--delete-config", "log.retention.ms")
	eventually("Dynamic configs for broker 0 are:\n", "--describe", "--broker", "0")

	must("Completed updating config for user alice.\n", "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152")
	must("Completed updating config for user alice.\n", "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--entity-type", "clients", "--entity-default", "--add-config", "request_percentage=25")
	must("Completed updating default config for ips in the cluster.\n", "--alter", "--ip-defaults", "--add-config", "connection_creation_rate=100")
	must("Quota configs for user-principal 'alice' are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0\n",
		"--describe", "--entity-type", "users", "--entity-name", "alice")
	must("Quota configs for user-principal 'alice', the default client-id are request_percentage=25.0\n",
		"--describe", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients")
	must("Quota configs for the default ip are connection_creation_rate=100.0\n", "--describe", "--entity-type", "ips")
	code, out, errs = configsOn(bs, "--alter", "--user", "alice", "--delete-config", "request_percentage")
	if code != 1 || out != "" || errs != "Invalid config(s): request_percentage\n" {
		t.Errorf("deleting an unset quota: exit %d stdout %q stderr %q", code, out, errs)
	}

	out = must("", "--describe", "--entity-type", "broker-loggers", "--entity-name", "1")
	if !strings.HasPrefix(out, "Dynamic configs for broker-logger 1 are:\n") || !strings.Contains(out, "\n  root=") {
		t.Fatalf("broker loggers:\n%s", out)
	}
	must("Completed updating config for broker-logger 1.\n", "--alter", "--broker-logger", "1", "--add-config", "root=DEBUG")
	if out := must("", "--describe", "--broker-logger", "1"); !strings.Contains(out, "\n  root=DEBUG sensitive=false synonyms={}\n") {
		t.Errorf("root logger after the change:\n%s", out)
	}
	must("Completed updating config for broker-logger 1.\n", "--alter", "--broker-logger", "1", "--add-config", "root=INFO")
}
