package acl

import (
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestZnodeBytesMatchKafka(t *testing.T) {
	// ResourceZNode.encode: {"version":1,"acls":[...]} with AclEntry.toMap's key order.
	got := string(EncodeACLs([]Entry{
		{Principal: "User:alice", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow},
		{Principal: "User:bob<&>", Host: "10.0.0.1", Operation: kmsg.ACLOperationIdempotentWrite, Permission: kmsg.ACLPermissionTypeDeny},
	}))
	want := `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"},` +
		`{"principal":"User:bob<&>","permissionType":"Deny","operation":"IdempotentWrite","host":"10.0.0.1"}]}`
	if got != want {
		t.Fatalf("acls json\n got %s\nwant %s", got, want)
	}
	if got := string(EncodeACLs(nil)); got != `{"version":1,"acls":[]}` {
		t.Fatalf("empty: %s", got)
	}
	// LiteralAclChangeStore: ResourceType.toString + ":" + name.
	if got := string(EncodeChange(Resource{kmsg.ACLResourceTypeTransactionalId, "tx:1", kmsg.ACLResourcePatternTypeLiteral})); got != "TRANSACTIONAL_ID:tx:1" {
		t.Fatalf("literal change: %s", got)
	}
	// ExtendedAclChangeStore: ExtendedAclChangeEvent's fields in declaration order.
	if got := string(EncodeChange(Resource{kmsg.ACLResourceTypeTopic, "z_other", kmsg.ACLResourcePatternTypePrefixed})); got != `{"version":1,"resourceType":"TOPIC","name":"z_other","patternType":"PREFIXED"}` {
		t.Fatalf("extended change: %s", got)
	}
}

func TestPathsMatchKafka(t *testing.T) {
	for _, c := range []struct {
		r    Resource
		want string
	}{
		{Resource{kmsg.ACLResourceTypeTopic, "topic-1", kmsg.ACLResourcePatternTypeLiteral}, "/kafka-acl/Topic/topic-1"},
		{Resource{kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral}, "/kafka-acl/Cluster/kafka-cluster"},
		{Resource{kmsg.ACLResourceTypeGroup, "group-1", kmsg.ACLResourcePatternTypePrefixed}, "/kafka-acl-extended/prefixed/Group/group-1"},
		{Resource{kmsg.ACLResourceTypeTransactionalId, "t", kmsg.ACLResourcePatternTypeLiteral}, "/kafka-acl/TransactionalId/t"},
		{Resource{kmsg.ACLResourceTypeDelegationToken, "d", kmsg.ACLResourcePatternTypeLiteral}, "/kafka-acl/DelegationToken/d"},
	} {
		got, err := ResourcePath(c.r)
		if err != nil || got != c.want {
			t.Errorf("%v: %q %v, want %q", c.r, got, err, c.want)
		}
	}
	if _, err := ResourcePath(Resource{kmsg.ACLResourceTypeTopic, "x", kmsg.ACLResourcePatternTypeMatch}); err == nil {
		t.Error("MATCH has no store")
	}
	if changePath(kmsg.ACLResourcePatternTypeLiteral)+"/"+ChangeSequencePrefix != "/kafka-acl-changes/acl_changes_" ||
		changePath(kmsg.ACLResourcePatternTypePrefixed)+"/"+ChangeSequencePrefix != "/kafka-acl-extended-changes/acl_changes_" {
		t.Error("change paths")
	}
}

func TestChangeRoundTrip(t *testing.T) {
	for _, r := range []Resource{
		{kmsg.ACLResourceTypeTopic, "some-topic", kmsg.ACLResourcePatternTypeLiteral},
		{kmsg.ACLResourceTypeTopic, "some-topic", kmsg.ACLResourcePatternTypePrefixed},
		{kmsg.ACLResourceTypeUser, "a:b", kmsg.ACLResourcePatternTypeLiteral},
	} {
		got, err := DecodeChange(r.Pattern == kmsg.ACLResourcePatternTypeLiteral, EncodeChange(r))
		if err != nil || got != r {
			t.Errorf("%v: %v %v", r, got, err)
		}
	}
	// LiteralAclStoreTest.shouldDecodeResourceUsingTwoPartLogic.
	name := "PREFIXED:this, including the PREFIXED part, is a valid two part group name"
	got, err := DecodeChange(true, []byte("GROUP:"+name))
	if err != nil || got != (Resource{kmsg.ACLResourceTypeGroup, name, kmsg.ACLResourcePatternTypeLiteral}) {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := DecodeChange(true, []byte("no separator")); err == nil {
		t.Error("want error")
	}
	if _, err := DecodeChange(false, []byte(`{"version":2,"resourceType":"TOPIC","name":"x","patternType":"PREFIXED"}`)); err == nil {
		t.Error("future version accepted")
	}
}

func TestDecodeACLs(t *testing.T) {
	// Kafka's documented example (spaces and key order as written by hand) and upper-case names.
	data := `{"version": 1, "acls": [ { "host":"host1", "permissionType": "Deny","operation": "READ","principal": "User:alice"},` +
		`{"host":"host1","permissionType":"Deny","operation":"Read","principal":"User:alice"},` +
		`{"host":"*","permissionType":"ALLOW","operation":"describeconfigs","principal":"User:*"}]}`
	got, err := DecodeACLs([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{"User:alice", "host1", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeDeny},
		{"User:*", "*", kmsg.ACLOperationDescribeConfigs, kmsg.ACLPermissionTypeAllow},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %v", got)
	}
	for _, bad := range []string{`{"version":2,"acls":[]}`, `{"acls":[]}`, `{"version":1,"acls":[{"principal":"alice","permissionType":"Allow","operation":"Read","host":"*"}]}`, `nope`} {
		if _, err := DecodeACLs([]byte(bad)); err == nil {
			t.Errorf("%s: want error", bad)
		}
	}
	if e, err := DecodeACLs(nil); err != nil || e != nil {
		t.Error("empty data is no ACLs")
	}
}

func TestNames(t *testing.T) {
	for s, want := range map[string]kmsg.ACLResourceType{"Topic": kmsg.ACLResourceTypeTopic, "TOPIC": kmsg.ACLResourceTypeTopic,
		"TransactionalId": kmsg.ACLResourceTypeTransactionalId, "transactionalid": kmsg.ACLResourceTypeTransactionalId,
		"TRANSACTIONAL_ID": kmsg.ACLResourceTypeUnknown, "Nope": kmsg.ACLResourceTypeUnknown} {
		if got := ParseResourceType(s); got != want {
			t.Errorf("ParseResourceType(%q) = %v, want %v", s, got, want)
		}
	}
	if parseResourceTypeEnum("TRANSACTIONAL_ID") != kmsg.ACLResourceTypeTransactionalId || parseResourceTypeEnum("topic") != kmsg.ACLResourceTypeTopic {
		t.Error("ResourceType.fromString")
	}
	if OperationName(kmsg.ACLOperationClusterAction) != "ClusterAction" || ParseOperation("CLUSTERACTION") != kmsg.ACLOperationClusterAction ||
		PermissionName(kmsg.ACLPermissionTypeAllow) != "Allow" || ParsePermission("deny") != kmsg.ACLPermissionTypeDeny {
		t.Error("operation/permission names")
	}
}

func TestResourceFilterMatches(t *testing.T) {
	name := func(s string) *string { return &s }
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	topic, group := kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup
	anyP, match := kmsg.ACLResourcePatternTypeAny, kmsg.ACLResourcePatternTypeMatch
	for i, c := range []struct {
		f    ResourceFilter
		r    Resource
		want bool
	}{
		{ResourceFilter{kmsg.ACLResourceTypeAny, nil, anyP}, Resource{group, "g", pre}, true},
		{ResourceFilter{topic, nil, anyP}, Resource{group, "g", lit}, false},
		{ResourceFilter{topic, name("foo"), lit}, Resource{topic, "foo", lit}, true},
		{ResourceFilter{topic, name("foo"), lit}, Resource{topic, "foo", pre}, false},
		{ResourceFilter{topic, name("foo"), anyP}, Resource{topic, "foo", pre}, true},
		{ResourceFilter{topic, name("foo"), anyP}, Resource{topic, "*", lit}, false},
		{ResourceFilter{topic, name("foo"), match}, Resource{topic, "*", lit}, true},
		{ResourceFilter{topic, name("foo"), match}, Resource{topic, "fo", pre}, true},
		{ResourceFilter{topic, name("foo"), match}, Resource{topic, "foo", pre}, true},
		{ResourceFilter{topic, name("foo"), match}, Resource{topic, "fooo", pre}, false},
		{ResourceFilter{topic, name("foo"), match}, Resource{topic, "fo", lit}, false},
		{ResourceFilter{topic, name("foo"), pre}, Resource{topic, "fo", pre}, false},
	} {
		if got := c.f.Matches(c.r); got != c.want {
			t.Errorf("%d: %+v matches %v = %v", i, c.f, c.r, got)
		}
	}
	if (ResourceFilter{topic, name("x"), match}).MatchesAtMostOne() || (ResourceFilter{topic, nil, lit}).MatchesAtMostOne() ||
		(ResourceFilter{kmsg.ACLResourceTypeAny, name("x"), lit}).MatchesAtMostOne() || !(ResourceFilter{topic, name("x"), anyP}).MatchesAtMostOne() {
		t.Error("MatchesAtMostOne")
	}
}

func TestHostAddress(t *testing.T) {
	for in, want := range map[string]string{"192.168.1.1": "192.168.1.1", "::1": "0:0:0:0:0:0:0:1",
		"::ffff:10.0.0.1": "10.0.0.1", "fe80::1:0ab0": "fe80:0:0:0:0:0:1:ab0"} {
		if got := HostAddress(net.ParseIP(in)); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

func TestIBPPrefixedSupport(t *testing.T) {
	for v, want := range map[string]bool{"": true, "3.7-IV4": true, "2.0": true, "2.0-IV1": true, "2.0-IV0": false,
		"1.1-IV0": false, "0.10.2": false, "2.1": true, "10.0": true} {
		if got := ibpSupportsPrefixed(v); got != want {
			t.Errorf("%q: %v", v, got)
		}
	}
}
