package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/samsa-kafka/samsa/broker"
	"github.com/samsa-kafka/samsa/internal/zktest"
)

func TestEnvPropertyName(t *testing.T) {
	for in, want := range map[string]string{
		"BROKER_ID":                       "broker.id",
		"LISTENER_SECURITY_PROTOCOL_MAP":  "listener.security.protocol.map",
		"LISTENER_NAME_INTERNAL_SSL_KEY":  "listener.name.internal.ssl.key",
		"CONFLUENT_SUPPORT___CUSTOMER_ID": "confluent.support-customer.id",
		"SASL_JAAS__CONFIG":               "sasl.jaas_config",
	} {
		if got := envPropertyName(in); got != want {
			t.Errorf("envPropertyName(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestDockerEnvConfig(t *testing.T) {
	base := []string{"KAFKA_BROKER_ID=2", "KAFKA_ZOOKEEPER_CONNECT=zoo1:2181/samsa", "PATH=/usr/bin", "HOSTNAME=broker2"}
	t.Run("maps Kafka images' variables", func(t *testing.T) {
		ec, err := dockerEnvConfig(append(base,
			"KAFKA_CFG_NUM_PARTITIONS=3", "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=INTERNAL:PLAINTEXT",
			"SAMSA_HTTP_LISTENER=0.0.0.0:9404", "KAFKA_HEAP_OPTS=-Xmx1G",
			// the same property twice with one value is not a contradiction
			"KAFKA_MIN_INSYNC_REPLICAS=2", "KAFKA_CFG_MIN_INSYNC_REPLICAS=2"))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"broker.id": "2", "zookeeper.connect": "zoo1:2181/samsa", "num.partitions": "3",
			"listener.security.protocol.map": "INTERNAL:PLAINTEXT", "samsa.http.listener": "0.0.0.0:9404",
			"min.insync.replicas": "2", "log.dirs": defaultDockerLogDir,
		}
		if len(ec.raw) != len(want) {
			t.Errorf("raw = %v, want %v", ec.raw, want)
		}
		for k, v := range want {
			if ec.raw[k] != v {
				t.Errorf("%s = %q, want %q", k, ec.raw[k], v)
			}
		}
		if len(ec.warnings) != 1 || !strings.Contains(ec.warnings[0], "KAFKA_HEAP_OPTS") {
			t.Errorf("warnings = %q, want one about KAFKA_HEAP_OPTS", ec.warnings)
		}
	})
	t.Run("file under the environment", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "server.properties")
		if err := os.WriteFile(f, []byte("broker.id=7\nnum.partitions=5\nlog.dirs=/d\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		ec, err := dockerEnvConfig(append(base, "SAMSA_CONFIG_FILE="+f))
		if err != nil {
			t.Fatal(err)
		}
		if ec.raw["broker.id"] != "2" || ec.raw["num.partitions"] != "5" || ec.raw["log.dirs"] != "/d" {
			t.Errorf("raw = %v: want broker.id 2 (environment), num.partitions 5 and log.dirs /d (file)", ec.raw)
		}
	})
	for _, tc := range []struct {
		name string
		env  []string
		want []string // substrings of the error
	}{
		{"nothing", []string{"PATH=/bin"}, []string{"KAFKA_ZOOKEEPER_CONNECT is not set", "KAFKA_BROKER_ID is not set"}},
		{"empty value", append(base, "KAFKA_ADVERTISED_LISTENERS="), []string{"KAFKA_ADVERTISED_LISTENERS is set but empty"}},
		{"contradiction", append(base, "KAFKA_NUM_PARTITIONS=3", "KAFKA_CFG_NUM_PARTITIONS=4"),
			[]string{"KAFKA_CFG_NUM_PARTITIONS=4 and KAFKA_NUM_PARTITIONS=3 both set num.partitions"}},
		{"unknown samsa setting", append(base, "SAMSA_HTTP_LISTENR=:9404"), []string{"SAMSA_HTTP_LISTENR: samsa.http.listenr is not a samsa setting"}},
		{"missing file", append(base, "SAMSA_CONFIG_FILE=/nonexistent/server.properties"), []string{"SAMSA_CONFIG_FILE=/nonexistent/server.properties"}},
		{"wildcard listener, nothing advertised", append(base, "KAFKA_LISTENERS=INTERNAL://0.0.0.0:29092", "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=INTERNAL:PLAINTEXT"),
			[]string{"KAFKA_LISTENERS binds INTERNAL://0.0.0.0:29092 and KAFKA_ADVERTISED_LISTENERS is not set", "e.g. INTERNAL://broker1:29092"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dockerEnvConfig(tc.env)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestDockerRunBadEnvironment: what `docker logs` shows when the container stops on a bad
// environment: every problem, with the variables behind Kafka's own validation errors.
func TestDockerRunBadEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"missing", map[string]string{"KAFKA_LISTENERS": "PLAINTEXT://:9092"},
			[]string{"invalid configuration in the environment", "KAFKA_ZOOKEEPER_CONNECT is not set", "KAFKA_BROKER_ID is not set"}},
		{"contradictory listeners", map[string]string{
			"KAFKA_BROKER_ID": "1", "KAFKA_ZOOKEEPER_CONNECT": "zoo1:2181",
			"KAFKA_LISTENERS":            "INTERNAL://0.0.0.0:29092",
			"KAFKA_ADVERTISED_LISTENERS": "EXTERNAL://localhost:9092",
		}, []string{"no security protocol defined for listener", "advertised.listeners comes from KAFKA_ADVERTISED_LISTENERS=EXTERNAL://localhost:9092"}},
		{"advertised 0.0.0.0", map[string]string{
			"KAFKA_BROKER_ID": "1", "KAFKA_ZOOKEEPER_CONNECT": "zoo1:2181",
			"KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9092", "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://0.0.0.0:9092",
		}, []string{"nonroutable meta-address 0.0.0.0", "(advertised.listeners comes from KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://0.0.0.0:9092)"}},
		{"bad broker id", map[string]string{"KAFKA_BROKER_ID": "one", "KAFKA_ZOOKEEPER_CONNECT": "zoo1:2181"},
			[]string{"broker.id", "broker.id comes from KAFKA_BROKER_ID=one"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearKafkaEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var stderr bytes.Buffer
			if code := dispatch([]string{"docker-run"}, nil, &bytes.Buffer{}, &stderr); code != 1 {
				t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr does not contain %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

// clearKafkaEnv unsets the process's KAFKA_ and SAMSA_ variables for the test.
func clearKafkaEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "KAFKA_") || strings.HasPrefix(k, "SAMSA_") {
			t.Setenv(k, "") // restores it afterwards
			os.Unsetenv(k)
		}
	}
}

// TestDockerHealth runs the health check against a real broker configured from the
// environment: unhealthy before the broker listens, healthy once it is registered.
func TestDockerHealth(t *testing.T) {
	clearKafkaEnv(t)
	zk := zktest.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	for k, v := range map[string]string{
		"KAFKA_BROKER_ID":                                "5",
		"KAFKA_ZOOKEEPER_CONNECT":                        zk.Connect("/health"),
		"KAFKA_LISTENERS":                                "INTERNAL://0.0.0.0:" + strconv.Itoa(port),
		"KAFKA_ADVERTISED_LISTENERS":                     "INTERNAL://127.0.0.1:" + strconv.Itoa(port),
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP":           "INTERNAL:PLAINTEXT",
		"KAFKA_INTER_BROKER_LISTENER_NAME":               "INTERNAL",
		"KAFKA_LOG_DIRS":                                 t.TempDir(),
		"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR":         "1",
		"KAFKA_CFG_CONTROLLED_SHUTDOWN_ENABLE":           "false",
		"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS":         "0",
		"KAFKA_ZOOKEEPER_SESSION_TIMEOUT_MS":             "6000",
		"KAFKA_ZOOKEEPER_CONNECTION_TIMEOUT_MS":          "6000",
		"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
	} {
		t.Setenv(k, v)
	}
	var out, stderr bytes.Buffer
	if code := dispatch([]string{"docker-health"}, nil, &out, &stderr); code != 1 || !strings.Contains(stderr.String(), "unhealthy") {
		t.Fatalf("no broker yet: exit %d, stderr %q; want 1 and unhealthy", code, stderr.String())
	}

	ec, err := dockerEnvConfig(os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := ec.load()
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(cfg, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Shutdown)
	// Start returns once the broker serves; it lists itself after the controller's
	// UpdateMetadata, which follows within the start-up bound.
	for {
		out.Reset()
		stderr.Reset()
		if dispatch([]string{"docker-health"}, nil, &out, &stderr) == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("never healthy: %s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if want := "broker 5 serves on 127.0.0.1:" + strconv.Itoa(port) + "; 1 brokers, controller 5"; !strings.Contains(out.String(), want) {
		t.Errorf("output %q does not contain %q", out.String(), want)
	}
}
