package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAclsUsageErrors: AclCommandOptions.checkArgs and the resource and operation checks, each
// failing before a connection is tried (the bootstrap server does not exist).
func TestAclsUsageErrors(t *testing.T) {
	bs := []string{"--bootstrap-server", "127.0.0.1:1"}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--list"}, "Missing required argument \"[bootstrap-server]\""},
		{append([]string{"--authorizer", "x", "--list"}, bs...), "Only one of --bootstrap-server or --authorizer must be specified"},
		{append([]string{"--authorizer-properties", "zookeeper.connect=x", "--list"}, bs...), "The --authorizer-properties option can only be used with --authorizer option"},
		{bs, "Command must include exactly one action: --list, --add, --remove. "},
		{append([]string{"--add", "--list"}, bs...), "Command must include exactly one action: --list, --add, --remove. "},
		{append([]string{"--list", "--allow-principal", "User:a"}, bs...), "Option \"[list]\" can't be used with option \"[allow-principal]\""},
		{append([]string{"--add", "--producer", "--operation", "Read", "--topic", "t"}, bs...), "Option \"[producer]\" can't be used with option \"[operation]\""},
		{append([]string{"--add", "--consumer", "--deny-principal", "User:a", "--topic", "t", "--group", "g"}, bs...), "Option \"[consumer]\" can't be used with option \"[deny-principal]\""},
		{append([]string{"--add", "--principal", "User:a"}, bs...), "The --principal option is only available if --list is set"},
		{append([]string{"--add", "--principal"}, bs...), "The --principal option is only available if --list is set"},
		{append([]string{"--add", "--producer", "--allow-principal", "User:a"}, bs...), "With --producer you must specify a --topic"},
		{append([]string{"--add", "--idempotent", "--topic", "t"}, bs...), "The --idempotent option is only available if --producer is set"},
		{append([]string{"--add", "--consumer", "--topic", "t", "--allow-principal", "User:a"}, bs...), "With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option should be specified."},
		{append([]string{"--add", "--consumer", "--topic", "t", "--group", "g", "--cluster"}, bs...), "With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option should be specified."},
		{append([]string{"--add", "--resource-pattern-type", "match", "--topic", "t", "--allow-principal", "User:a"}, bs...), "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls."},
		{append([]string{"--list", "--resource-pattern-type", "bogus"}, bs...), "Cannot parse argument 'bogus' of option resource-pattern-type"},
		{append([]string{"--list", "--resource-pattern-type", "unknown"}, bs...), "Cannot parse argument 'unknown' of option resource-pattern-type"},
		{append([]string{"--add", "--allow-principal", "User:a"}, bs...), "You must provide at least one resource: --topic <topic> or --cluster or --group <group> or --delegation-token <Delegation Token ID>"},
		{append([]string{"--add", "--topic", "t"}, bs...), "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."},
		{append([]string{"--add", "--group", "g", "--operation", "Write", "--allow-principal", "User:a"}, bs...), "ResourceType GROUP only supports operations Read, Describe, Delete, All"},
		{append([]string{"--add", "--topic", "t", "--operation", "Fly", "--allow-principal", "User:a"}, bs...), "ResourceType TOPIC only supports operations Read, Write, Create, Describe, Delete, Alter, DescribeConfigs, AlterConfigs, All"},
		// --cluster with a prefixed pattern names no resource, as in Kafka.
		{append([]string{"--add", "--cluster", "--resource-pattern-type", "prefixed", "--allow-principal", "User:a"}, bs...), "You must provide at least one resource"},
	} {
		var out, errb bytes.Buffer
		code := dispatch(append([]string{"acls"}, tt.args...), strings.NewReader(""), &out, &errb)
		first, _, _ := strings.Cut(errb.String(), "\n")
		if code != 1 || !strings.HasPrefix(first, tt.want) || out.Len() != 0 {
			t.Errorf("%v: code %d stdout %q stderr first line %q, want %q", tt.args, code, out.String(), first, tt.want)
		}
	}
	// A malformed principal is an error of the command (stdout), as Kafka throws it.
	var out, errb bytes.Buffer
	code := dispatch([]string{"acls", "--bootstrap-server", "127.0.0.1:1", "--add", "--topic", "t", "--allow-principal", "alice"}, nil, &out, &errb)
	if code != 1 || out.String() != "Error while executing ACL command: expected a string in format principalType:principalName but got alice\n" {
		t.Fatalf("code %d stdout %q stderr %q", code, out.String(), errb.String())
	}
}

// TestAclsTargets: the roles expand as AclCommand's getProducer/ConsumerResourceFilterToAcls do.
func TestAclsTargets(t *testing.T) {
	o, _, err := parseAclsArgs([]string{"--bootstrap-server", "b:1", "--add", "--producer", "--consumer", "--idempotent",
		"--topic", "t", "--group", "g", "--transactional-id", "tx", "--allow-principal", "User:a", "--allow-host", "10.0.0.1"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := o.addTargets()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, tg := range ts {
		for _, e := range tg.entries {
			if e.principal != "User:a" || e.host != "10.0.0.1" || e.perm != kmsg.ACLPermissionTypeAllow {
				t.Fatalf("entry %v", e)
			}
			got[tg.pattern.String()] = append(got[tg.pattern.String()], e.op.String())
		}
	}
	want := map[string][]string{
		"ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)":               {"READ", "WRITE", "CREATE", "DESCRIBE"},
		"ResourcePattern(resourceType=TRANSACTIONAL_ID, name=tx, patternType=LITERAL)":   {"WRITE", "DESCRIBE"},
		"ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)": {"IDEMPOTENT_WRITE"},
		"ResourcePattern(resourceType=GROUP, name=g, patternType=LITERAL)":               {"READ"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("targets %v\nwant %v", got, want)
	}
	// Operation names: Pascal case or that upper-cased, nothing else.
	for in, op := range map[string]kmsg.ACLOperation{"IdempotentWrite": kmsg.ACLOperationIdempotentWrite, "IDEMPOTENTWRITE": kmsg.ACLOperationIdempotentWrite,
		"read": kmsg.ACLOperationRead, "IDEMPOTENT_WRITE": kmsg.ACLOperationUnknown, "DescribeConfigs": kmsg.ACLOperationDescribeConfigs} {
		if got := parseACLOperation(in); got != op {
			t.Errorf("parseACLOperation(%q) = %v, want %v", in, got, op)
		}
	}
}

// TestAclsAgainstBroker adds, lists, filters and removes ACLs through a kfake cluster's
// CreateAcls, DescribeAcls and DeleteAcls, comparing the output with kafka-acls.sh's.
func TestAclsAgainstBroker(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bs := c.ListenAddrs()[0]
	run := func(stdin string, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := dispatch(append([]string{"acls", "--bootstrap-server", bs}, args...), strings.NewReader(stdin), &out, &errb); code != 0 {
			t.Fatalf("%v: code %d stdout %q stderr %q", args, code, out.String(), errb.String())
		}
		return out.String()
	}
	const topicT = "ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)"
	aliceRead := "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
	bobDeny := "(principal=User:bob, host=10.0.0.9, operation=WRITE, permissionType=DENY)"

	got := run("", "--add", "--topic", "t", "--allow-principal", "User:alice", "--operation", "Read")
	want := "Adding ACLs for resource `" + topicT + "`: \n \t" + aliceRead + " \n\n" +
		"Current ACLs for resource `" + topicT + "`: \n \t" + aliceRead + " \n\n"
	if got != want {
		t.Fatalf("add:\n%q\nwant\n%q", got, want)
	}
	run("", "--add", "--topic", "t", "--deny-principal", "User:bob", "--deny-host", "10.0.0.9", "--operation", "Write")
	run("", "--add", "--producer", "--topic", "p-", "--resource-pattern-type", "prefixed", "--allow-principal", "User:carol")

	got = run("", "--list", "--topic", "t")
	want = "Current ACLs for resource `" + topicT + "`: \n \t" + aliceRead + "\n\t" + bobDeny + " \n\n"
	if got != want {
		t.Fatalf("list t:\n%q\nwant\n%q", got, want)
	}
	got = run("", "--list", "--principal", "User:bob")
	want = "ACLs for principal `User:bob`\nCurrent ACLs for resource `" + topicT + "`: \n \t" + bobDeny + " \n\n"
	if got != want {
		t.Fatalf("list principal:\n%q\nwant\n%q", got, want)
	}
	got = run("", "--list")
	prefixed := "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=p-, patternType=PREFIXED)`: \n" +
		" \t(principal=User:carol, host=*, operation=WRITE, permissionType=ALLOW)\n" +
		"\t(principal=User:carol, host=*, operation=CREATE, permissionType=ALLOW)\n" +
		"\t(principal=User:carol, host=*, operation=DESCRIBE, permissionType=ALLOW) \n\n"
	if !strings.Contains(got, prefixed) || !strings.Contains(got, aliceRead) {
		t.Fatalf("list all:\n%s", got)
	}

	// Remove: "n" keeps the ACL, --force removes without asking.
	got = run("n\n", "--remove", "--topic", "t", "--allow-principal", "User:alice", "--operation", "Read")
	if !strings.HasPrefix(got, "Are you sure you want to remove ACLs: \n \t"+aliceRead+" \n from resource filter `"+topicT+"`? (y/n)\n") ||
		!strings.Contains(got, aliceRead+"\n") {
		t.Fatalf("remove answered n:\n%q", got)
	}
	got = run("y\n", "--remove", "--topic", "t", "--allow-principal", "User:alice", "--operation", "Read")
	if strings.Contains(got, "Current ACLs for resource `"+topicT+"`: \n \t"+aliceRead) {
		t.Fatalf("remove answered y left alice's ACL:\n%q", got)
	}
	got = run("", "--remove", "--force", "--topic", "t")
	if got != "" {
		t.Fatalf("remove all --force printed %q", got)
	}
	if got = run("", "--list", "--topic", "t"); got != "" {
		t.Fatalf("after removing everything: %q", got)
	}
}
