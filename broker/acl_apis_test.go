package broker

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/security/acl"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// The ACL APIs on the table test's broker, which has no authorizer: SECURITY_DISABLED.
func init() {
	requestBuilders[29] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrDescribeACLsRequest()
			req.ResourceType, req.Operation, req.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			req.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			if resp := r.(*kmsg.DescribeACLsResponse); resp.ErrorCode != kerr.SecurityDisabled.Code {
				t.Fatalf("describe acls: %+v", resp)
			}
		},
	}
	requestBuilders[30] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrCreateACLsRequest()
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.Principal, c.Host = kmsg.ACLResourceTypeTopic, "rt", "User:alice", "*"
			c.Operation, c.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
			req.Creations = append(req.Creations, c)
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			if resp := r.(*kmsg.CreateACLsResponse); len(resp.Results) != 1 || resp.Results[0].ErrorCode != kerr.SecurityDisabled.Code {
				t.Fatalf("create acls: %+v", resp)
			}
		},
	}
	requestBuilders[31] = requestBuilder{
		build: func(e *dataEnv, v int16) kmsg.Request {
			req := kmsg.NewPtrDeleteACLsRequest()
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.ResourceName, f.Operation, f.PermissionType = kmsg.ACLResourceTypeTopic, strp("rt"), kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			req.Filters = append(req.Filters, f)
			return req
		},
		check: func(t *testing.T, r kmsg.Response) {
			if resp := r.(*kmsg.DeleteACLsResponse); len(resp.Results) != 1 || resp.Results[0].ErrorCode != kerr.SecurityDisabled.Code {
				t.Fatalf("delete acls: %+v", resp)
			}
		},
	}
}

var aclChrootSeq atomic.Int64

// aclEnv is a served dataEnv whose APIs have an AclAuthorizer on a fresh chroot.
func aclEnv(t *testing.T, chroot string, props map[string]string) (*dataEnv, *zkmeta.Client) {
	t.Helper()
	e, zk := aclEnvUnserved(t, chroot, props)
	e.serve()
	return e, zk
}

// aclEnvUnserved is aclEnv for tests that call the handlers directly.
func aclEnvUnserved(t *testing.T, chroot string, props map[string]string) (*dataEnv, *zkmeta.Client) {
	t.Helper()
	e := newDataEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	zk, err := zkmeta.Connect(ctx, testZK(t).Connect(chroot), 6*time.Second, e.log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zk.Close() })
	cfg := &config.Config{Props: map[string]string{"authorizer.class.name": acl.ClassName}}
	for k, v := range props {
		cfg.Props[k] = v
	}
	az, err := buildAuthorizer(ctx, cfg, zk, e.log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAuthorizer(az) })
	e.apis.Authorizer = az
	return e, zk
}

func newACLChroot() string { return fmt.Sprintf("/acl-apis-%d", aclChrootSeq.Add(1)) }

// TestACLAPIsWithKgo drives CreateAcls, DescribeAcls and DeleteAcls through kadm against an
// authorizer in ZooKeeper, as a super user (the PLAINTEXT principal User:ANONYMOUS).
func TestACLAPIsWithKgo(t *testing.T) {
	chroot := newACLChroot()
	e, zk := aclEnv(t, chroot, map[string]string{"super.users": "User:ANONYMOUS"})
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	created, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("10.0.0.1").Topics("orders").
		Operations(kadm.OpRead, kadm.OpDescribe))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range created {
		if r.Err != nil {
			t.Fatalf("create %+v", r)
		}
	}
	created, err = adm.CreateACLs(ctx, kadm.NewACLs().Deny("User:bob").Groups("app-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Operations(kadm.OpRead))
	if err != nil || created[0].Err != nil {
		t.Fatalf("create prefixed: %v %+v", err, created)
	}
	data, _, err := zk.Get("/kafka-acl/Topic/orders")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"10.0.0.1"},` +
		`{"principal":"User:alice","permissionType":"Allow","operation":"Describe","host":"10.0.0.1"}]}`; string(data) != want {
		t.Fatalf("znode %s", data)
	}

	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().Deny().AllowHosts().DenyHosts().
		ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range described {
		if d.Err != nil {
			t.Fatalf("describe: %+v", d)
		}
		n += len(d.Described)
	}
	if n != 3 {
		t.Fatalf("described %d ACLs: %+v", n, described)
	}
	// MATCH: the prefixed ACL applies to group app-1.
	resp, err := (&kmsg.DescribeACLsRequest{ResourceType: kmsg.ACLResourceTypeGroup, ResourceName: strp("app-1"),
		ResourcePatternType: kmsg.ACLResourcePatternTypeMatch, Operation: kmsg.ACLOperationAny, PermissionType: kmsg.ACLPermissionTypeAny}).RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 || len(resp.Resources) != 1 || resp.Resources[0].ResourceName != "app-" ||
		resp.Resources[0].ResourcePatternType != kmsg.ACLResourcePatternTypePrefixed || len(resp.Resources[0].ACLs) != 1 {
		t.Fatalf("match: %v %+v", err, resp)
	}

	// Handler and authorizer validation.
	creq := kmsg.NewPtrCreateACLsRequest()
	for _, c := range []struct {
		rt   kmsg.ACLResourceType
		name string
		pt   kmsg.ACLResourcePatternType
	}{
		{kmsg.ACLResourceTypeCluster, "not-the-cluster", kmsg.ACLResourcePatternTypeLiteral},
		{kmsg.ACLResourceTypeTopic, "", kmsg.ACLResourcePatternTypeLiteral},
		{kmsg.ACLResourceTypeTopic, "a/b", kmsg.ACLResourcePatternTypeLiteral},
		{kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral},
	} {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = c.rt, c.name, c.pt
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:alice", "*", kmsg.ACLOperationAlter, kmsg.ACLPermissionTypeAllow
		creq.Creations = append(creq.Creations, cr)
	}
	cresp, err := creq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	wantMsgs := []string{"The only valid name for the CLUSTER resource is kafka-cluster", "Invalid empty resource name", "Failed to create ACL", ""}
	for i, r := range cresp.Results {
		wantCode := kerr.InvalidRequest.Code
		if i == 3 {
			wantCode = 0
		}
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		if r.ErrorCode != wantCode || msg != wantMsgs[i] {
			t.Errorf("creation %d: code %d message %q", i, r.ErrorCode, msg)
		}
	}

	// An ANY element cannot become an ACL: Kafka fails every creation with UNKNOWN_SERVER_ERROR.
	bad := kmsg.NewPtrCreateACLsRequest()
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.Principal, cr.Host = kmsg.ACLResourceTypeTopic, "x", "User:a", "*"
	cr.Operation, cr.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAllow
	bad.Creations = []kmsg.CreateACLsRequestCreation{cr, creq.Creations[3]}
	if r, err := bad.RequestWith(ctx, cl); err != nil || r.Results[0].ErrorCode != kerr.UnknownServerError.Code || r.Results[1].ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("ANY operation: %v %+v", err, r)
	}

	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("10.0.0.1").Topics("orders").Operations(kadm.OpAny))
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 1 || deleted[0].Err != nil || len(deleted[0].Deleted) != 2 {
		t.Fatalf("delete: %+v", deleted)
	}
	if ok, _, _ := zk.Exists("/kafka-acl/Topic/orders"); ok {
		t.Fatal("the znode of a resource without ACLs is deleted")
	}
}

// TestACLAPIsNeedClusterPermissions: without a super user or an ACL, DescribeAcls needs
// cluster DESCRIBE and Create/DeleteAcls cluster ALTER; ALTER implies DESCRIBE.
func TestACLAPIsNeedClusterPermissions(t *testing.T) {
	chroot := newACLChroot()
	e, _ := aclEnv(t, chroot, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	describe := func() int16 {
		t.Helper()
		resp, err := e.handle(&kmsg.DescribeACLsRequest{Version: 3, ResourceType: kmsg.ACLResourceTypeAny, ResourcePatternType: kmsg.ACLResourcePatternTypeAny,
			Operation: kmsg.ACLOperationAny, PermissionType: kmsg.ACLPermissionTypeAny})
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.DescribeACLsResponse).ErrorCode
	}
	if c := describe(); c != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("describe without ACLs: %d", c)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	res, err := kadm.NewClient(cl).CreateACLs(ctx, kadm.NewACLs().Allow("User:ANONYMOUS").Clusters().Operations(kadm.OpAlter))
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("create without ALTER: %v %+v", err, res)
	}
	dreq := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	dreq.Filters = append(dreq.Filters, f)
	if r, err := dreq.RequestWith(ctx, cl); err != nil || r.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("delete without ALTER: %v %+v", err, r)
	}

	// Another broker (a super user's) grants ALTER on the cluster to User:ANONYMOUS; this
	// broker learns it from the change notification.
	admin, _ := aclEnv(t, chroot, map[string]string{"super.users": "User:ANONYMOUS"})
	acl2, err := kgo.NewClient(kgo.SeedBrokers(admin.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer acl2.Close()
	res, err = kadm.NewClient(acl2).CreateACLs(ctx, kadm.NewACLs().Allow("User:ANONYMOUS").AllowHosts("127.0.0.1").Clusters().Operations(kadm.OpAlter))
	if err != nil || res[0].Err != nil {
		t.Fatalf("grant: %v %+v", err, res)
	}
	deadline := time.Now().Add(10 * time.Second)
	for describe() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("ALTER on the cluster never allowed DescribeAcls")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestACLAPIsParseFailures: what Kafka cannot parse closes the connection.
func TestACLAPIsParseFailures(t *testing.T) {
	e, _ := aclEnvUnserved(t, newACLChroot(), map[string]string{"super.users": "User:ANONYMOUS"})
	for _, req := range []kmsg.Request{
		&kmsg.DescribeACLsRequest{Version: 0, ResourceType: kmsg.ACLResourceTypeTopic, ResourcePatternType: kmsg.ACLResourcePatternTypePrefixed,
			Operation: kmsg.ACLOperationAny, PermissionType: kmsg.ACLPermissionTypeAny},
		&kmsg.DescribeACLsRequest{Version: 1, ResourceType: kmsg.ACLResourceTypeUnknown, ResourcePatternType: kmsg.ACLResourcePatternTypeAny,
			Operation: kmsg.ACLOperationAny, PermissionType: kmsg.ACLPermissionTypeAny},
		&kmsg.CreateACLsRequest{Version: 0, Creations: []kmsg.CreateACLsRequestCreation{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t",
			ResourcePatternType: kmsg.ACLResourcePatternTypePrefixed, Principal: "User:a", Host: "*", Operation: kmsg.ACLOperationRead, PermissionType: kmsg.ACLPermissionTypeAllow}}},
		&kmsg.DeleteACLsRequest{Version: 2, Filters: []kmsg.DeleteACLsRequestFilter{{ResourceType: kmsg.ACLResourceTypeTopic,
			ResourcePatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationUnknown, PermissionType: kmsg.ACLPermissionTypeAny}}},
	} {
		if _, err := e.handle(req); err == nil {
			t.Errorf("%s v%d: want the connection closed", kmsg.NameForKey(req.Key()), req.GetVersion())
		}
	}
	// v0 ANY is read as LITERAL.
	resp, err := e.handle(&kmsg.DeleteACLsRequest{Version: 0, Filters: []kmsg.DeleteACLsRequestFilter{{ResourceType: kmsg.ACLResourceTypeTopic,
		ResourcePatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, PermissionType: kmsg.ACLPermissionTypeAny}}})
	if err != nil || resp.(*kmsg.DeleteACLsResponse).Results[0].ErrorCode != 0 {
		t.Fatalf("v0 ANY: %v %+v", err, resp)
	}
}

// TestACLAPIsWithSarama: sarama's ClusterAdmin (DescribeAcls/CreateAcls/DeleteAcls v1).
func TestACLAPIsWithSarama(t *testing.T) {
	e, _ := aclEnv(t, newACLChroot(), map[string]string{"super.users": "User:ANONYMOUS"})
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_0_0_0
	ca, err := sarama.NewClusterAdmin([]string{e.addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	res := sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: "pay", ResourcePatternType: sarama.AclPatternPrefixed}
	if err := ca.CreateACL(res, sarama.Acl{Principal: "User:carol", Host: "*", Operation: sarama.AclOperationWrite, PermissionType: sarama.AclPermissionAllow}); err != nil {
		t.Fatal(err)
	}
	name := "payments"
	got, err := ca.ListAcls(sarama.AclFilter{ResourceType: sarama.AclResourceTopic, ResourceName: &name,
		ResourcePatternTypeFilter: sarama.AclPatternMatch, Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny})
	if err != nil || len(got) != 1 || got[0].ResourceName != "pay" || len(got[0].Acls) != 1 || got[0].Acls[0].Principal != "User:carol" {
		t.Fatalf("list: %v %+v", err, got)
	}
	matched, err := ca.DeleteACL(sarama.AclFilter{ResourceType: sarama.AclResourceAny, ResourcePatternTypeFilter: sarama.AclPatternAny,
		Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny}, false)
	if err != nil || len(matched) != 1 || matched[0].ResourceName != "pay" {
		t.Fatalf("delete: %v %+v", err, matched)
	}
}

func TestBuildAuthorizerConfig(t *testing.T) {
	if a, err := buildAuthorizer(context.Background(), &config.Config{Props: map[string]string{}}, nil, nil); a != nil || err != nil {
		t.Fatalf("empty class: %v %v", a, err)
	}
	if _, err := buildAuthorizer(context.Background(), &config.Config{Props: map[string]string{"authorizer.class.name": "com.example.Mine"}}, nil, nil); err == nil {
		t.Fatal("other classes are refused")
	}
}
