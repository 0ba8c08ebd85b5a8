package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/samsa-kafka/samsa/broker"
	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/security/testcerts"
	"github.com/samsa-kafka/samsa/internal/zktest"
)

// TestAclsEndToEnd runs the tools against a samsa broker whose only listener is SASL_SSL
// (PLAIN) with the ACL authorizer: alice can do nothing until admin (a super user) grants
// her the producer and consumer roles with samsa acls; then she creates, writes and reads.
func TestAclsEndToEnd(t *testing.T) {
	certs, err := testcerts.Generate(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	zk := zktest.Start(t)
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`
	cfg, _, err := config.FromMap(map[string]string{
		"broker.id":                                     "0",
		"listeners":                                     "SASL_SSL://127.0.0.1:0",
		"security.inter.broker.protocol":                "SASL_SSL",
		"sasl.enabled.mechanisms":                       "PLAIN",
		"sasl.mechanism.inter.broker.protocol":          "PLAIN",
		"listener.name.sasl_ssl.plain.sasl.jaas.config": jaas,
		"ssl.keystore.type":                             "PKCS12",
		"ssl.keystore.location":                         certs.Broker.PKCS12,
		"ssl.keystore.password":                         testcerts.Password,
		"ssl.truststore.type":                           "PKCS12",
		"ssl.truststore.location":                       certs.Truststore,
		"ssl.truststore.password":                       testcerts.Password,
		"authorizer.class.name":                         "kafka.security.authorizer.AclAuthorizer",
		"super.users":                                   "User:admin",
		"log.dirs":                                      t.TempDir(),
		"zookeeper.connect":                             zk.Connect("/acls-tool"),
		"offsets.topic.replication.factor":              "1",
		"offsets.topic.num.partitions":                  "1",
		"group.initial.rebalance.delay.ms":              "0",
		"controlled.shutdown.enable":                    "false",
		"auto.create.topics.enable":                     "false",
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(cfg, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err = b.Start(ctx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Shutdown)
	bs := b.Addr("SASL_SSL")

	clientProps := func(user, pass string) string {
		return fmt.Sprintf("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"+
			"sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"%s\" password=\"%s\";\n"+
			"ssl.truststore.type=PEM\nssl.truststore.location=%s\n", user, pass, certs.CA)
	}
	admin, alice := writeProps(t, clientProps("admin", "admin-secret")), writeProps(t, clientProps("alice", "alice-secret"))
	run := func(stdin string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := dispatch(args, strings.NewReader(stdin), &out, &errb)
		return code, out.String(), errb.String()
	}

	if code, out, errb := run("", "topics", "--bootstrap-server", bs, "--command-config", alice, "--create", "--topic", "t", "--partitions", "1", "--replication-factor", "1"); code == 0 {
		t.Fatalf("alice created a topic without ACLs: %q %q", out, errb)
	}
	code, out, errb := run("", "acls", "--bootstrap-server", bs, "--command-config", admin, "--add", "--producer", "--consumer",
		"--topic", "t", "--group", "g", "--allow-principal", "User:alice")
	topicT := "ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)"
	if code != 0 || !strings.Contains(out, "Current ACLs for resource `"+topicT+"`: \n \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n") {
		t.Fatalf("acls --add: code %d stdout %q stderr %q", code, out, errb)
	}
	if code, out, errb := run("", "topics", "--bootstrap-server", bs, "--command-config", alice, "--create", "--topic", "t", "--partitions", "1", "--replication-factor", "1"); code != 0 {
		t.Fatalf("alice with CREATE on t: code %d %q %q", code, out, errb)
	}
	if code, _, errb := run("x\ny\n", "console-producer", "--bootstrap-server", bs, "--topic", "t", "--producer.config", alice); code != 0 {
		t.Fatalf("console-producer as alice: code %d %q", code, errb)
	}
	code, out, errb = run("", "console-consumer", "--bootstrap-server", bs, "--topic", "t", "--group", "g", "--from-beginning",
		"--max-messages", "2", "--timeout-ms", "15000", "--consumer.config", alice)
	if code != 0 || out != "x\ny\n" {
		t.Fatalf("console-consumer as alice: code %d stdout %q stderr %q", code, out, errb)
	}
	// alice may not manage ACLs; admin lists hers.
	if code, out, _ := run("", "acls", "--bootstrap-server", bs, "--command-config", alice, "--list"); code != 1 ||
		!strings.HasPrefix(out, "Error while executing ACL command: org.apache.kafka.common.errors.ClusterAuthorizationException: ") {
		t.Fatalf("alice listing ACLs: code %d stdout %q", code, out)
	}
	code, out, _ = run("", "acls", "--bootstrap-server", bs, "--command-config", admin, "--list", "--group", "g")
	if want := "Current ACLs for resource `ResourcePattern(resourceType=GROUP, name=g, patternType=LITERAL)`: \n \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW) \n\n"; code != 0 || out != want {
		t.Fatalf("list group: code %d stdout %q, want %q", code, out, want)
	}
	if code, out, _ := run("", "acls", "--bootstrap-server", bs, "--command-config", admin, "--remove", "--force", "--topic", "t", "--group", "g"); code != 0 || out != "" {
		t.Fatalf("remove: code %d stdout %q", code, out)
	}
	if code, out, errb := run("", "console-consumer", "--bootstrap-server", bs, "--topic", "t", "--group", "g", "--from-beginning",
		"--max-messages", "1", "--timeout-ms", "3000", "--consumer.config", alice); code == 0 && out != "" {
		t.Fatalf("alice read after her ACLs were removed: stdout %q stderr %q", out, errb)
	}
}
