package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/security/scramcred"
	"github.com/samsa-kafka/samsa/internal/zktest"
	"github.com/samsa-kafka/samsa/zkmeta"
)

const zkDeprecationWarning = "Warning: --zookeeper is deprecated and will be removed in a future version of Kafka.\n" +
	"Use --bootstrap-server instead to specify a broker to connect to.\n"

// The bootstrap path of a secure cluster: credentials written straight to ZooKeeper must be
// byte-for-byte what kafka-configs.sh --zookeeper writes, so brokers (samsa's or Kafka's)
// load them, and must verify the password they were made from.
func TestConfigsZookeeperScram(t *testing.T) {
	zk := zktest.Start(t)
	connect := zk.Connect("/configs-zk")
	run := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		code, out, errb := runTool(append([]string{"configs", "--zookeeper", connect}, args...)...)
		if code != wantCode {
			t.Fatalf("configs %v: exit %d, want %d\nstdout %q\nstderr %q", args, code, wantCode, out, errb)
		}
		return out, errb
	}

	out, _ := run(0, "--alter", "--entity-type", "users", "--entity-name", "admin",
		"--add-config", "SCRAM-SHA-512=[iterations=8192,password=admin-secret]")
	if want := zkDeprecationWarning + "Completed updating config for entity: user-principal 'admin'.\n"; out != want {
		t.Fatalf("alter printed %q, want %q", out, want)
	}

	c := zkConnect(t, connect, zkmeta.Security{})
	data, _, err := c.Get("/config/users/admin")
	if err != nil {
		t.Fatal(err)
	}
	// ConfigEntityZNode.encode, salt as ScramFormatter makes it (base 36 digits, base64'd).
	exact := regexp.MustCompile(`^\{"version":1,"config":\{"SCRAM-SHA-512":"(salt=[A-Za-z0-9+/]+=*,stored_key=[A-Za-z0-9+/]+=*,server_key=[A-Za-z0-9+/]+=*,iterations=8192)"\}\}$`)
	m := exact.FindSubmatch(data)
	if m == nil {
		t.Fatalf("/config/users/admin is %s", data)
	}
	stored := string(m[1])
	cred, err := scramcred.Parse(stored)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-z]+$`).Match(cred.Salt) {
		t.Errorf("salt %q is not a base-36 number", cred.Salt)
	}
	want, err := scramcred.NewWithSalt(scramcred.SHA512, "admin-secret", cred.Salt, 8192)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cred.StoredKey, want.StoredKey) || !bytes.Equal(cred.ServerKey, want.ServerKey) {
		t.Error("the stored credential does not derive from admin-secret")
	}
	wrong, _ := scramcred.NewWithSalt(scramcred.SHA512, "admin-secreT", cred.Salt, 8192)
	if bytes.Equal(cred.StoredKey, wrong.StoredKey) {
		t.Error("another password derives the same stored key")
	}

	notifications := func() []string {
		t.Helper()
		names, err := c.Children("/config/changes")
		if err != nil {
			t.Fatal(err)
		}
		var paths []string
		for _, n := range names {
			d, _, err := c.Get("/config/changes/" + n)
			if err != nil {
				t.Fatal(err)
			}
			var v struct {
				Version    int    `json:"version"`
				EntityPath string `json:"entity_path"`
			}
			if err := json.Unmarshal(d, &v); err != nil || v.Version != 2 {
				t.Fatalf("notification %s is %s (%v)", n, d, err)
			}
			paths = append(paths, v.EntityPath)
		}
		return paths
	}
	if got := notifications(); len(got) != 1 || got[0] != "users/admin" {
		t.Fatalf("change notifications %v, want [users/admin]", got)
	}

	// A name that needs sanitizing, two mechanisms, the default iterations.
	run(0, "--alter", "--entity-type", "users", "--entity-name", "bob@example",
		"--add-config", "SCRAM-SHA-256=[password=b1],SCRAM-SHA-512=[iterations=4096,password=b2]")
	bob, err := c.GetUserConfig("bob@example")
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := c.Exists("/config/users/bob%40example"); !ok {
		t.Error("bob@example is not stored as bob%40example")
	}
	for mech, pw := range map[string]string{scramcred.SHA256: "b1", scramcred.SHA512: "b2"} {
		bc, err := scramcred.Parse(bob[mech])
		if err != nil {
			t.Fatalf("%s: %v", mech, err)
		}
		w, _ := scramcred.NewWithSalt(mech, pw, bc.Salt, 4096)
		if bc.Iterations != 4096 || !bytes.Equal(bc.StoredKey, w.StoredKey) {
			t.Errorf("%s credential %q does not derive from %s", mech, bob[mech], pw)
		}
	}

	// Kafka lists Properties in hash order: SCRAM-SHA-512 (bucket 0) before SCRAM-SHA-256 (6).
	out, _ = run(0, "--describe", "--entity-type", "users", "--entity-name", "admin")
	if want := zkDeprecationWarning + "Configs for user-principal 'admin' are SCRAM-SHA-512=" + stored + "\n"; out != want {
		t.Errorf("describe admin printed %q, want %q", out, want)
	}
	bobLine := "Configs for user-principal 'bob@example' are SCRAM-SHA-512=" + bob[scramcred.SHA512] + ",SCRAM-SHA-256=" + bob[scramcred.SHA256] + "\n"
	out, _ = run(0, "--describe", "--entity-type", "users")
	if want := zkDeprecationWarning + "Configs for user-principal 'admin' are SCRAM-SHA-512=" + stored + "\n" + bobLine; out != want {
		t.Errorf("describe all printed %q, want %q", out, want)
	}
	out, _ = run(0, "--describe", "--entity-type", "users", "--entity-name", "nobody")
	if want := zkDeprecationWarning + "Configs for user-principal 'nobody' are \n"; out != want {
		t.Errorf("describe nobody printed %q, want %q", out, want)
	}

	// Deleting the last credential removes the znode and notifies again.
	out, _ = run(0, "--alter", "--entity-type", "users", "--entity-name", "admin", "--delete-config", "SCRAM-SHA-512")
	if want := zkDeprecationWarning + "Completed updating config for entity: user-principal 'admin'.\n"; out != want {
		t.Errorf("delete printed %q", out)
	}
	if ok, _, _ := c.Exists("/config/users/admin"); ok {
		t.Error("/config/users/admin is still there")
	}
	if got := notifications(); len(got) != 3 || got[2] != "users/admin" {
		t.Errorf("change notifications %v, want a third for users/admin", got)
	}
	out, _ = run(0, "--describe", "--entity-type", "users")
	if want := zkDeprecationWarning + bobLine; out != want {
		t.Errorf("describe all after delete printed %q, want %q", out, want)
	}

	// Kafka's refusals that need the znode or only the arguments.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--alter", "--entity-type", "users", "--entity-name", "admin", "--delete-config", "SCRAM-SHA-512"},
			"Invalid config(s): SCRAM-SHA-512\n"},
		{[]string{"--alter", "--entity-type", "users", "--entity-name", "admin", "--add-config", "producer_byte_rate=1024"},
			"requirement failed: --bootstrap-server option must be specified to update users configs: {add: {producer_byte_rate=1024}, delete: List()}. " +
				"User configuration updates using ZooKeeper are only supported for SCRAM credential updates.\n"},
		{[]string{"--alter", "--entity-type", "users", "--entity-name", "admin", "--delete-config", "SCRAM-SHA-1"},
			"requirement failed: --bootstrap-server option must be specified to update users configs: {add: {}, delete: ArrayBuffer(SCRAM-SHA-1)}. " +
				"User configuration updates using ZooKeeper are only supported for SCRAM credential updates.\n"},
		{[]string{"--alter", "--entity-type", "users", "--entity-name", "admin", "--add-config", "SCRAM-SHA-512=[iterations=100,password=x]"},
			"Iterations 100 is less than the minimum 4096 required for SCRAM_SHA_512\n"},
		{[]string{"--alter", "--entity-type", "users", "--entity-name", "admin", "--add-config", "SCRAM-SHA-256=[iterations=-1,password=x]"},
			"Invalid credential property SCRAM_SHA_256=iterations=-1,password=x\n"},
		{[]string{"--alter", "--entity-type", "users", "--entity-name", "admin", "--add-config", "SCRAM-SHA-256=[iterations=,password=x]"},
			"For input string: \"\"\n"},
	} {
		_, errb := run(1, tc.args...)
		if errb != tc.want {
			t.Errorf("%v: stderr %q, want %q", tc.args, errb, tc.want)
		}
	}
	if bob2, _ := c.GetUserConfig("bob@example"); len(bob2) != 2 {
		t.Errorf("a refused alter changed bob@example: %v", bob2)
	}
}

// Entity types other than users and brokers are refused before any connection, with ConfigCommand.checkArgs' messages.
func TestConfigsZookeeperRefusals(t *testing.T) {
	const unreachable = "127.0.0.1:1"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--zookeeper", unreachable, "--describe", "--entity-type", "topics"},
			"Invalid entity type topics, the entity type must be one of users, brokers with a --zookeeper argument"},
		{[]string{"--zookeeper", unreachable, "--alter", "--entity-type", "topics", "--entity-name", "t", "--add-config", "retention.ms=1"},
			"Invalid entity type topics, the entity type must be one of users, brokers with a --zookeeper argument"},
		{[]string{"--zookeeper", unreachable, "--bootstrap-server", "localhost:9092", "--describe", "--entity-type", "users"},
			"Only one of --bootstrap-server, --boostrap-controller, and --zookeeper can be specified"},
		{[]string{"--describe", "--entity-type", "users"},
			"One of the required --bootstrap-server, --boostrap-controller, or --zookeeper arguments must be specified"},
		{[]string{"--zookeeper", unreachable, "--describe", "--all", "--entity-type", "users"},
			"--bootstrap-server must be specified for --all"},
		{[]string{"--bootstrap-server", "localhost:9092", "--zk-tls-config-file", "x", "--describe", "--entity-type", "users"},
			"Only the --zookeeper option can be used with the --zk-tls-config-file option."},
		{[]string{"--zookeeper", unreachable, "--describe", "--entity-type", "clients"},
			"Invalid entity type clients, the entity type must be one of users, brokers with a --zookeeper argument"},
	} {
		code, _, errb := runTool(append([]string{"configs"}, tc.args...)...)
		if code != 1 || !strings.Contains(errb, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errb, tc.want)
		}
	}
}

// Dynamic configs of brokers that do not run are written straight to /config/brokers, with
// passwords encrypted by the given password.encoder.secret (not stored); a running broker's
// entity, or the default while any runs, is refused.
func TestConfigsZookeeperBrokers(t *testing.T) {
	zk := zktest.Start(t)
	connect := zk.Connect("/configs-zk-brokers")
	run := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		code, out, errb := runTool(append([]string{"configs", "--zookeeper", connect}, args...)...)
		if code != wantCode {
			t.Fatalf("configs %v: exit %d, want %d\nstdout %q\nstderr %q", args, code, wantCode, out, errb)
		}
		return strings.TrimPrefix(out, zkDeprecationWarning), errb
	}
	const pwKey = "listener.name.internal.ssl.key.password"
	out, _ := run(0, "--alter", "--entity-type", "brokers", "--entity-name", "0",
		"--add-config", "log.retention.ms=1000,"+pwKey+"=key-secret,password.encoder.secret=enc-secret")
	if out != "Completed updating config for entity: brokers '0'.\n" {
		t.Fatalf("alter printed %q", out)
	}
	c := zkConnect(t, connect, zkmeta.Security{})
	cfg, err := c.GetBrokerConfig("0")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg) != 2 || cfg["log.retention.ms"] != "1000" || cfg[pwKey] == "key-secret" {
		t.Fatalf("/config/brokers/0 holds %v", cfg)
	}
	enc := config.PasswordEncoderFromProps(map[string]string{"password.encoder.secret": "enc-secret"}, "password.encoder.secret")
	if pw, err := enc.Decode(cfg[pwKey]); err != nil || pw != "key-secret" {
		t.Errorf("stored password decodes to %q (%v)", pw, err)
	}
	out, _ = run(0, "--alter", "--broker-defaults", "--add-config", "log.retention.bytes=2048")
	if out != "Completed updating config for entity: default brokers.\n" {
		t.Fatalf("alter default printed %q", out)
	}
	out, _ = run(0, "--describe", "--entity-type", "brokers", "--entity-default")
	if out != "Configs for default brokers are log.retention.bytes=2048\n" {
		t.Errorf("describe default printed %q", out)
	}
	out, _ = run(0, "--describe", "--entity-type", "brokers")
	if !strings.HasPrefix(out, "Configs for brokers '0' are ") || !strings.HasSuffix(out, "\nConfigs for default brokers are log.retention.bytes=2048\n") ||
		!strings.Contains(out, "log.retention.ms=1000") {
		t.Errorf("describe all printed %q", out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--alter", "--entity-type", "brokers", "--entity-name", "0", "--add-config", pwKey + "=x"},
			"requirement failed: password.encoder.secret must be specified to update Set(" + pwKey + "). Other password encoder configs like cipher algorithm " +
				"and iterations may also be specified to override the default encoding parameters. Password encoder configs will not be persisted in ZooKeeper.\n"},
		{[]string{"--alter", "--entity-type", "brokers", "--entity-name", "0", "--delete-config", "log.flush.interval.ms"},
			"Invalid config(s): log.flush.interval.ms\n"},
		{[]string{"--alter", "--entity-type", "brokers", "--entity-name", "0", "--add-config", "broker.id=3"},
			"Cannot update these configs dynamically: Set(broker.id)\n"},
	} {
		_, errb := run(1, tc.args...)
		if !strings.HasSuffix(errb, tc.want) {
			t.Errorf("%v: stderr %q, want %q", tc.args, errb, tc.want)
		}
	}

	// Broker 0 registers: its entity and the default are refused, broker 1's is not.
	if err := c.CreateRecursive(zkmeta.BrokerIDsPath, nil); err != nil && !errors.Is(err, zkmeta.ErrNodeExists) {
		t.Fatal(err)
	}
	if _, err := c.Create(zkmeta.BrokerIDPath(0), zkmeta.EncodeBrokerInfo(zkmeta.BrokerInfo{ID: 0}), zkmeta.Ephemeral); err != nil {
		t.Fatal(err)
	}
	_, errb := run(1, "--describe", "--entity-type", "brokers", "--entity-name", "0")
	if want := "requirement failed: --bootstrap-server option must be specified to describe brokers - broker 0 is running. " +
		"Broker configuration operations using ZooKeeper are only supported if the affected broker(s) are not running.\n"; errb != want {
		t.Errorf("describe of a running broker: stderr %q", errb)
	}
	_, errb = run(1, "--alter", "--broker-defaults", "--delete-config", "log.retention.bytes")
	if want := "requirement failed: --bootstrap-server option must be specified to update brokers configs: {add: {}, delete: ArrayBuffer(log.retention.bytes)} - " +
		"1 brokers are running. Broker configuration operations using ZooKeeper are only supported if the affected broker(s) are not running.\n"; errb != want {
		t.Errorf("alter of the default with a running broker: stderr %q", errb)
	}
	run(0, "--alter", "--broker", "1", "--add-config", "log.retention.ms=5")
	if cfg, _ := c.GetBrokerConfig("0"); len(cfg) != 2 {
		t.Errorf("refusals changed /config/brokers/0: %v", cfg)
	}
}
