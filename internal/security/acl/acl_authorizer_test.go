package acl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/security"
	"github.com/samsa-kafka/samsa/internal/zktest"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// One ZooKeeper for the package; every test works in its own chroot.
var zkServer *zktest.Server

func TestMain(m *testing.M) {
	s, stop, err := zktest.Shared()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	zkServer = s
	code := m.Run()
	stop()
	os.Exit(code)
}

var chrootSeq atomic.Int64

func testLog(t testing.TB) *logrus.Entry {
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	if testing.Verbose() {
		l.SetLevel(logrus.DebugLevel)
	}
	return logrus.NewEntry(l)
}

// newChroot returns a fresh chroot name for the test.
func newChroot(t testing.TB) string {
	return fmt.Sprintf("/acl-%s-%d", strings.NewReplacer("/", "-").Replace(t.Name()), chrootSeq.Add(1))
}

func connect(t testing.TB, chroot string) *zkmeta.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := zkmeta.Connect(ctx, zkServer.Connect(chroot), 6*time.Second, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

const superUsers = "User:superuser1; User:superuser2"

func newAuth(t testing.TB, chroot string, props map[string]string, o options) (*AclAuthorizer, *zkmeta.Client) {
	t.Helper()
	zk := connect(t, chroot)
	if props == nil {
		props = map[string]string{SuperUsersProp: superUsers}
	}
	a, err := newAuthorizer(context.Background(), zk, props, testLog(t), o)
	if err != nil {
		t.Fatal(err)
	}
	a.maxUpdateRetries = 1 << 30 // as Kafka's tests, against transient conflicts
	t.Cleanup(a.Close)
	return a, zk
}

var (
	alice       = security.User("alice")
	reqHost     = "192.168.0.1"
	topic       = kmsg.ACLResourceTypeTopic
	group       = kmsg.ACLResourceTypeGroup
	cluster     = kmsg.ACLResourceTypeCluster
	lit         = kmsg.ACLResourcePatternTypeLiteral
	pre         = kmsg.ACLResourcePatternTypePrefixed
	allow       = kmsg.ACLPermissionTypeAllow
	deny        = kmsg.ACLPermissionTypeDeny
	read        = kmsg.ACLOperationRead
	write       = kmsg.ACLOperationWrite
	describe    = kmsg.ACLOperationDescribe
	allOp       = kmsg.ACLOperationAll
	allowRead   = Entry{"User:*", "*", read, allow}
	allowWrite  = Entry{"User:*", "*", write, allow}
	denyRead    = Entry{"User:*", "*", read, deny}
	wildcardRes = Resource{topic, "*", lit}
	prefixedRes = Resource{topic, "foo", pre}
)

func addACLs(t testing.TB, a *AclAuthorizer, r Resource, entries ...Entry) {
	t.Helper()
	var bs []Binding
	for _, e := range entries {
		bs = append(bs, Binding{r, e})
	}
	for i, err := range a.CreateAcls(bs) {
		if err != nil {
			t.Fatalf("create %v: %v", bs[i], err)
		}
	}
}

func removeACLs(t testing.TB, a *AclAuthorizer, r Resource, entries ...Entry) {
	t.Helper()
	name := r.Name
	var fs []BindingFilter
	if len(entries) == 0 {
		fs = []BindingFilter{{ResourceFilter{r.Type, &name, r.Pattern}, AnyFilter.Entry}}
	}
	for _, e := range entries {
		p, h := e.Principal, e.Host
		fs = append(fs, BindingFilter{ResourceFilter{r.Type, &name, r.Pattern}, EntryFilter{&p, &h, e.Operation, e.Permission}})
	}
	for _, res := range a.DeleteAcls(fs) {
		for _, d := range res.Deleted {
			if d.Err != nil {
				t.Fatalf("delete %v: %v", d.Binding, d.Err)
			}
		}
	}
}

func getACLs(a *AclAuthorizer, r Resource) map[Entry]bool {
	name := r.Name
	out := map[Entry]bool{}
	for _, b := range a.Acls(BindingFilter{ResourceFilter{r.Type, &name, r.Pattern}, AnyFilter.Entry}) {
		out[b.Entry] = true
	}
	return out
}

func sameSet(got map[Entry]bool, want ...Entry) bool {
	if len(got) != len(want) {
		return false
	}
	for _, e := range want {
		if !got[e] {
			return false
		}
	}
	return true
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAuthorizeMatchingRules ports AuthorizerTest's matching cases (ZK quorum).
func TestAuthorizeMatchingRules(t *testing.T) {
	a, _ := newAuth(t, newChroot(t), nil, options{})
	res := Resource{topic, "foo-1b0f", lit}
	user1, user2, user3 := security.User("alice"), security.User("rob"), security.User("batman")
	host1, host2 := "192.168.1.1", "192.168.1.2"

	// testTopicAcl
	addACLs(t, a, res,
		Entry{user1.String(), host1, read, allow}, Entry{user1.String(), host2, read, allow},
		Entry{user1.String(), host1, read, deny}, Entry{user1.String(), host1, write, allow},
		Entry{user1.String(), "*", describe, allow}, Entry{user2.String(), "*", read, allow},
		Entry{user3.String(), "*", write, allow})
	for _, c := range []struct {
		p    security.Principal
		host string
		op   kmsg.ACLOperation
		want bool
	}{
		{user1, host2, read, true}, {user1, host1, read, false}, {user1, host1, write, true}, {user1, host2, write, false},
		{user1, host1, describe, true}, {user1, host2, describe, true}, {user1, host1, kmsg.ACLOperationAlter, false},
		{user1, host2, kmsg.ACLOperationAlter, false}, {user2, host1, describe, true}, {user3, host1, describe, true},
		{user2, host1, read, true}, {user3, host1, write, true},
	} {
		if got := a.Authorize(c.p, c.host, c.op, topic, res.Name); got != c.want {
			t.Errorf("topic acl: %v from %s %v = %v, want %v", c.p, c.host, c.op, got, c.want)
		}
	}

	// testDenyTakesPrecedence, testAllowAllAccess, testSuperUserHasAccess
	r2 := Resource{topic, "deny-first", lit}
	addACLs(t, a, r2, Entry{"User:*", "*", allOp, allow}, Entry{"User:alice", "192.168.2.1", allOp, deny})
	if a.Authorize(alice, "192.168.2.1", read, topic, r2.Name) {
		t.Error("deny should take precedence over allow")
	}
	if !a.Authorize(security.User("random"), "192.0.4.4", read, topic, r2.Name) {
		t.Error("allow all acl should allow access to all")
	}
	r3 := Resource{topic, "denied-to-all", lit}
	addACLs(t, a, r3, Entry{"User:*", "*", allOp, deny})
	for _, su := range []string{"superuser1", "superuser2"} {
		if !a.Authorize(security.User(su), "192.0.4.4", read, topic, r3.Name) {
			t.Errorf("super user %s denied", su)
		}
	}
	if a.Authorize(security.Principal{Type: "Group", Name: "superuser1"}, "192.0.4.4", read, topic, r3.Name) {
		t.Error("the principal type is part of a super user")
	}

	// testNoAclFound, testAuthorizeWithEmptyResourceName, testAccessAllowedIfAllowAclExistsOnWildcardResource
	if a.Authorize(alice, reqHost, read, group, "") {
		t.Error("no acls: denied")
	}
	addACLs(t, a, Resource{group, "*", lit}, allowRead)
	if !a.Authorize(alice, reqHost, read, group, "") || !a.Authorize(alice, reqHost, read, group, "any") {
		t.Error("wildcard group ACL allows every group, the empty name included")
	}

	// testWildCardAcls
	r4 := Resource{topic, "wild-4", lit}
	readAcl := Entry{"User:alice", "192.168.3.1", read, allow}
	addACLs(t, a, wildcardRes, readAcl)
	if !a.Authorize(alice, "192.168.3.1", read, topic, r4.Name) {
		t.Error("wildcard READ")
	}
	addACLs(t, a, r4, Entry{"User:alice", "192.168.3.1", write, allow})
	addACLs(t, a, wildcardRes, Entry{"User:alice", "192.168.3.1", write, deny})
	if a.Authorize(alice, "192.168.3.1", write, topic, r4.Name) {
		t.Error("deny WRITE on the wildcard wins over a literal allow")
	}

	// testAccessAllowedIfAllowAclExistsOnPrefixedResource, testAuthorizeWithPrefixedResource
	r5 := Resource{group, "foo-5e", lit}
	for _, n := range []string{"a_other", "fooo-1", "fo-2", "fop-3", "fon-", "z_other", "foo-5e-zzz"} {
		addACLs(t, a, Resource{group, n, pre}, denyRead)
	}
	addACLs(t, a, Resource{group, "a_other", lit}, denyRead)
	addACLs(t, a, Resource{group, "foo", pre}, allowRead)
	if !a.Authorize(alice, reqHost, read, group, r5.Name) {
		t.Error("prefixed allow")
	}
	addACLs(t, a, Resource{group, "foo-", pre}, denyRead)
	if a.Authorize(alice, reqHost, read, group, r5.Name) {
		t.Error("a prefixed deny on a longer prefix denies")
	}

	// testSingleCharacterResourceAcls
	tx := kmsg.ACLResourceTypeTransactionalId
	addACLs(t, a, Resource{tx, "f", lit}, allowRead)
	if !a.Authorize(alice, reqHost, read, tx, "f") || a.Authorize(alice, reqHost, read, tx, "foo") {
		t.Error("single character literal")
	}
	addACLs(t, a, Resource{tx, "_", pre}, allowRead)
	if !a.Authorize(alice, reqHost, read, tx, "_foo") || !a.Authorize(alice, reqHost, read, tx, "_") || a.Authorize(alice, reqHost, read, tx, "foo_") {
		t.Error("single character prefix")
	}

	// Principal wildcard and principal types: Group:x is not User:x.
	r6 := Resource{kmsg.ACLResourceTypeDelegationToken, "tok", lit}
	addACLs(t, a, r6, Entry{"Group:alice", "*", describe, allow})
	if a.Authorize(alice, reqHost, describe, r6.Type, r6.Name) || !a.Authorize(security.Principal{Type: "Group", Name: "alice"}, reqHost, describe, r6.Type, r6.Name) {
		t.Error("principal type must match")
	}
}

// TestAclInheritance is AuthorizerTest.testAclInheritance.
func TestAclInheritance(t *testing.T) {
	a, _ := newAuth(t, newChroot(t), nil, options{})
	clusterRes := Resource{cluster, ClusterName, lit}
	var ops []kmsg.ACLOperation
	for op := kmsg.ACLOperationAll; op <= kmsg.ACLOperationDescribeTokens; op++ {
		ops = append(ops, op)
	}
	allImplied := map[kmsg.ACLOperation]bool{}
	for _, op := range ops {
		allImplied[op] = true
	}
	implied := func(m ...kmsg.ACLOperation) map[kmsg.ACLOperation]bool {
		out := map[kmsg.ACLOperation]bool{}
		for _, o := range m {
			out[o] = true
		}
		return out
	}
	testAllow := func(parent kmsg.ACLOperation, allowed map[kmsg.ACLOperation]bool) {
		e := Entry{"User:alice", "*", parent, allow}
		addACLs(t, a, clusterRes, e)
		for _, op := range ops {
			want := allowed[op] || op == parent
			if got := a.Authorize(alice, "192.168.3.1", op, cluster, ClusterName); got != want {
				t.Errorf("ALLOW %v: %v = %v, want %v", parent, op, got, want)
			}
		}
		removeACLs(t, a, clusterRes, e)
	}
	testDeny := func(parent kmsg.ACLOperation, denied map[kmsg.ACLOperation]bool) {
		es := []Entry{{"User:alice", "*", parent, deny}, {"User:alice", "*", allOp, allow}}
		addACLs(t, a, clusterRes, es...)
		for _, op := range ops {
			want := !(denied[op] || op == parent)
			if got := a.Authorize(alice, "192.168.3.1", op, cluster, ClusterName); got != want {
				t.Errorf("DENY %v: %v = %v, want %v", parent, op, got, want)
			}
		}
		removeACLs(t, a, clusterRes, es...)
	}
	testAllow(allOp, allImplied)
	testDeny(allOp, allImplied)
	testAllow(read, implied(describe))
	testAllow(write, implied(describe))
	testAllow(kmsg.ACLOperationDelete, implied(describe))
	testAllow(kmsg.ACLOperationAlter, implied(describe))
	testDeny(describe, implied())
	testAllow(kmsg.ACLOperationAlterConfigs, implied(kmsg.ACLOperationDescribeConfigs))
	testDeny(kmsg.ACLOperationDescribeConfigs, implied())
}

// TestAllowEveryoneIfNoACL is testNoAclFoundOverride, testAclConfigWithWhitespace and
// testAuthorizeByResourceTypeNoAclFoundOverride.
func TestAllowEveryoneIfNoACL(t *testing.T) {
	a, _ := newAuth(t, newChroot(t), map[string]string{SuperUsersProp: " " + superUsers + " ", AllowEveryoneIfNoACLProp: " true "}, options{})
	if !a.Authorize(alice, reqHost, read, topic, "t") || !a.AuthorizeByResourceType(alice, reqHost, read, topic) ||
		!a.AuthorizeByResourceType(alice, reqHost, write, topic) {
		t.Fatal("allow.everyone.if.no.acl.found=true allows when no ACL applies")
	}
	addACLs(t, a, Resource{topic, "t", lit}, Entry{"User:bob", "*", read, allow})
	if a.Authorize(alice, reqHost, read, topic, "t") {
		t.Fatal("an ACL on the resource takes over")
	}
	if !a.superUsers[security.User("superuser2")] {
		t.Fatal("super.users with whitespace")
	}
}

// TestAuthorizeByResourceType ports BaseAuthorizerTest's authorizeByResourceType cases.
func TestAuthorizeByResourceType(t *testing.T) {
	user1, user2 := security.User("user1"), security.User("user2")
	h1, h2 := "192.168.1.1", "192.168.1.2"
	u1 := user1.String()

	t.Run("MultipleAddAndRemove", func(t *testing.T) {
		a, _ := newAuth(t, newChroot(t), nil, options{})
		r := Resource{topic, "sb1", lit}
		denyR, allowR := Entry{u1, h1, read, deny}, Entry{u1, h1, read, allow}
		for i := 0; i < 3; i++ {
			if a.AuthorizeByResourceType(user1, h1, read, topic) {
				t.Fatal("no ACL")
			}
			addACLs(t, a, r, allowR)
			if !a.AuthorizeByResourceType(user1, h1, read, topic) {
				t.Fatal("after allow")
			}
			addACLs(t, a, r, denyR)
			if a.AuthorizeByResourceType(user1, h1, read, topic) {
				t.Fatal("after deny")
			}
			removeACLs(t, a, r, denyR, allowR)
		}
	})
	t.Run("IsolationUnrelatedDenyWontDominateAllow", func(t *testing.T) {
		a, _ := newAuth(t, newChroot(t), nil, options{})
		addACLs(t, a, Resource{topic, "sb1", lit}, Entry{u1, h1, read, deny}, Entry{user2.String(), h1, read, deny},
			Entry{u1, h2, write, deny}, Entry{user2.String(), h2, read, deny}, Entry{u1, h2, read, allow})
		addACLs(t, a, Resource{topic, "sb2", lit}, Entry{u1, h2, read, deny})
		addACLs(t, a, Resource{group, "s", pre}, Entry{u1, h2, read, deny})
		for _, rt := range []kmsg.ACLResourceType{topic, group, kmsg.ACLResourceTypeTransactionalId, cluster} {
			if a.AuthorizeByResourceType(user1, h1, read, rt) {
				t.Errorf("%v from host1", rt)
			}
		}
		if !a.AuthorizeByResourceType(user1, h2, read, topic) {
			t.Error("user1 from host2 reads sb1")
		}
	})
	t.Run("PrefixedResourceDenyDominate", func(t *testing.T) {
		a, _ := newAuth(t, newChroot(t), nil, options{})
		al, de := Entry{u1, h1, read, allow}, Entry{u1, h1, read, deny}
		for _, s := range []struct {
			prefix string
			e      Entry
			want   bool
		}{{"abcde", al, true}, {"abcd", de, false}, {"abc", al, true}, {"a", de, false}, {"ab", al, false}} {
			addACLs(t, a, Resource{group, s.prefix, pre}, s.e)
			if got := a.AuthorizeByResourceType(user1, h1, read, group); got != s.want {
				t.Fatalf("after %v on %s: %v", s.e.Permission, s.prefix, got)
			}
		}
	})
	t.Run("WildcardResourceDenyDominate", func(t *testing.T) {
		a, _ := newAuth(t, newChroot(t), nil, options{})
		al, de := Entry{u1, h1, write, allow}, Entry{u1, h1, write, deny}
		for _, s := range []struct {
			r    Resource
			e    Entry
			want bool
		}{{Resource{group, "hello", pre}, al, true}, {Resource{group, "*", lit}, de, false},
			{Resource{group, "*", lit}, al, false}, {Resource{group, "aloha", lit}, al, false}} {
			addACLs(t, a, s.r, s.e)
			if got := a.AuthorizeByResourceType(user1, h1, write, group); got != s.want {
				t.Fatalf("after %v on %v: %v", s.e.Permission, s.r, got)
			}
		}
	})
	t.Run("AllOperationHostPrincipal", func(t *testing.T) {
		a, _ := newAuth(t, newChroot(t), nil, options{})
		r1, r2 := Resource{topic, "sb1", lit}, Resource{topic, "sb2", lit}
		addACLs(t, a, r1, Entry{u1, h1, write, deny}, Entry{u1, h1, allOp, allow})
		if !a.AuthorizeByResourceType(user1, h1, read, topic) {
			t.Fatal("ALL allows READ")
		}
		addACLs(t, a, r1, Entry{u1, h1, allOp, deny})
		if a.AuthorizeByResourceType(user1, h1, read, topic) {
			t.Fatal("DENY ALL")
		}
		addACLs(t, a, r2, Entry{u1, "*", read, allow})
		if !a.AuthorizeByResourceType(user1, h2, read, topic) {
			t.Fatal("host * allows")
		}
		addACLs(t, a, r2, Entry{"User:*", h2, read, deny})
		if a.AuthorizeByResourceType(user1, h2, read, topic) || a.AuthorizeByResourceType(user2, h2, read, topic) {
			t.Fatal("User:* deny")
		}
	})
	t.Run("SuperUser", func(t *testing.T) {
		a, _ := newAuth(t, newChroot(t), nil, options{})
		for _, rt := range []kmsg.ACLResourceType{topic, cluster, group, kmsg.ACLResourceTypeTransactionalId} {
			addACLs(t, a, Resource{rt, "*", lit}, Entry{"User:*", "*", allOp, deny})
			if !a.AuthorizeByResourceType(security.User("superuser1"), "192.0.4.4", read, rt) {
				t.Errorf("super user on %v", rt)
			}
			if a.AuthorizeByResourceType(alice, "192.0.4.4", read, rt) {
				t.Errorf("alice on %v", rt)
			}
		}
		if a.AuthorizeByResourceType(security.User("superuser1"), "h", kmsg.ACLOperationAny, topic) {
			t.Error("ANY is not an operation")
		}
	})
}

// TestManagementAPIs covers testAclManagementAPIs, testAclsFilter, testAddAcls*,
// testDeleteAcl*, testGetAclsPrincipal and the create validation.
func TestManagementAPIs(t *testing.T) {
	a, zk := newAuth(t, newChroot(t), nil, options{})
	res := Resource{topic, "foo-mgmt", lit}

	addACLs(t, a, res, allowRead, allowWrite)
	addACLs(t, a, res, allowWrite, denyRead)
	if !sameSet(getACLs(a, res), allowRead, allowWrite, denyRead) || len(getACLs(a, wildcardRes)) != 0 || len(getACLs(a, Resource{topic, "foo-mgmt", pre})) != 0 {
		t.Fatalf("add is additive and per pattern: %v", getACLs(a, res))
	}
	removeACLs(t, a, res, allowRead)
	if !sameSet(getACLs(a, res), allowWrite, denyRead) {
		t.Fatalf("remove one: %v", getACLs(a, res))
	}
	removeACLs(t, a, res)
	if len(getACLs(a, res)) != 0 {
		t.Fatal("remove all")
	}
	path, _ := ResourcePath(res)
	if ok, _, _ := zk.Exists(path); ok {
		t.Fatal("removing the last ACL deletes the znode")
	}

	// testGetAclsPrincipal
	addACLs(t, a, res, Entry{"User:alice", "*", write, allow})
	byPrincipal := func(p string) int {
		return len(a.Acls(BindingFilter{AnyFilter.Resource, EntryFilter{&p, nil, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny}}))
	}
	if byPrincipal("User:*") != 0 || byPrincipal("User:alice") != 1 {
		t.Fatal("principal filter is exact")
	}
	removeACLs(t, a, res)

	// testAclsFilter
	r1, r2, pr := Resource{topic, "foo-a1", lit}, Resource{topic, "bar-a2", lit}, Resource{topic, "bar-", pre}
	b1 := Binding{r1, Entry{"User:alice", "*", read, allow}}
	b2 := Binding{r1, Entry{"User:alice", "192.168.0.1", write, allow}}
	b3 := Binding{r2, Entry{"User:alice", "*", describe, allow}}
	b4 := Binding{pr, Entry{"User:*", "*", read, allow}}
	for _, err := range a.CreateAcls([]Binding{b1, b2, b3, b4}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := a.Acls(AnyFilter); len(got) != 4 {
		t.Fatalf("all: %v", got)
	}
	n2 := r2.Name
	matching := BindingFilter{ResourceFilter{kmsg.ACLResourceTypeAny, &n2, kmsg.ACLResourcePatternTypeMatch}, AnyFilter.Entry}
	if got := a.Acls(matching); len(got) != 2 || !containsBinding(got, b3) || !containsBinding(got, b4) {
		t.Fatalf("MATCH: %v", got)
	}
	n1, baz := r1.Name, "baz"
	p1, h1 := b1.Entry.Principal, b1.Entry.Host
	filters := []BindingFilter{
		matching,
		{ResourceFilter{topic, &n1, lit}, EntryFilter{&p1, &h1, read, allow}},
		{ResourceFilter{topic, &n2, lit}, AnyFilter.Entry},
		{ResourceFilter{topic, &baz, kmsg.ACLResourcePatternTypeAny}, AnyFilter.Entry},
	}
	results := a.DeleteAcls(filters)
	deleted := func(i int) []Binding {
		var out []Binding
		for _, d := range results[i].Deleted {
			if d.Err != nil {
				t.Fatal(d.Err)
			}
			out = append(out, d.Binding)
		}
		return out
	}
	if d := deleted(0); len(d) != 2 || !containsBinding(d, b3) || !containsBinding(d, b4) {
		t.Fatalf("filter 0: %v", d)
	}
	if d := deleted(1); len(d) != 1 || d[0] != b1 {
		t.Fatalf("filter 1: %v", d)
	}
	if len(deleted(2)) != 0 || len(deleted(3)) != 0 {
		t.Fatal("an ACL is credited to the first matching filter only")
	}

	// createAcls validation.
	errs := a.CreateAcls([]Binding{
		{Resource{topic, "test/1", lit}, allowRead},
		{Resource{topic, "x", kmsg.ACLResourcePatternTypeUnknown}, allowRead},
		{Resource{topic, "ok-1", lit}, Entry{"User:*", "*", kmsg.ACLOperationUnknown, allow}},
		{Resource{topic, "ok-2", lit}, Entry{"alice", "*", read, allow}},
		{Resource{topic, "ok-3", lit}, allowRead},
	})
	for i := 0; i < 3; i++ {
		var ae *Error
		if !errors.As(errs[i], &ae) || ae.Code != kerr.InvalidRequest || ae.Message != "Failed to create ACL" {
			t.Errorf("%d: %v", i, errs[i])
		}
	}
	var ae *Error
	if !errors.As(errs[3], &ae) || ae.Code != kerr.UnknownServerError {
		t.Errorf("bad principal: %v", errs[3])
	}
	if errs[4] != nil {
		t.Errorf("valid: %v", errs[4])
	}
	// testThrowsOnAddPrefixedAclIfInterBrokerProtocolVersionTooLow
	old, _ := newAuth(t, newChroot(t), map[string]string{interBrokerProtocolProp: "2.0-IV0"}, options{})
	if err := old.CreateAcls([]Binding{{Resource{topic, "z_other", pre}, denyRead}})[0]; !errors.As(err, &ae) || ae.Code != kerr.InvalidRequest {
		t.Errorf("prefixed below 2.0-IV1: %v", err)
	}
}

func containsBinding(l []Binding, b Binding) bool {
	for _, x := range l {
		if x == b {
			return true
		}
	}
	return false
}

// TestZooKeeperLayout checks the znodes and change notifications byte for byte
// (testWritesExtendedAclChangeEvent…, testWritesLiteralAclChangeEvent…).
func TestZooKeeperLayout(t *testing.T) {
	a, zk := newAuth(t, newChroot(t), nil, options{})
	for _, p := range []string{"/kafka-acl/Topic", "/kafka-acl/Group", "/kafka-acl/Cluster", "/kafka-acl/TransactionalId",
		"/kafka-acl/DelegationToken", "/kafka-acl/User", "/kafka-acl-extended/prefixed/Topic", "/kafka-acl-extended/prefixed/User",
		"/kafka-acl-changes", "/kafka-acl-extended-changes"} {
		if ok, _, err := zk.Exists(p); !ok || err != nil {
			t.Errorf("%s missing (%v)", p, err)
		}
	}
	addACLs(t, a, Resource{topic, "z_other", lit}, Entry{"User:alice", "*", read, allow})
	addACLs(t, a, Resource{topic, "z_other", pre}, denyRead)
	check := func(path, want string) {
		t.Helper()
		data, _, err := zk.Get(path)
		if err != nil || string(data) != want {
			t.Errorf("%s = %s (%v)\nwant %s", path, data, err, want)
		}
	}
	check("/kafka-acl/Topic/z_other", `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}`)
	check("/kafka-acl-extended/prefixed/Topic/z_other", `{"version":1,"acls":[{"principal":"User:*","permissionType":"Deny","operation":"Read","host":"*"}]}`)
	for root, want := range map[string]string{
		"/kafka-acl-changes":          "TOPIC:z_other",
		"/kafka-acl-extended-changes": `{"version":1,"resourceType":"TOPIC","name":"z_other","patternType":"PREFIXED"}`,
	} {
		children, err := zk.Children(root)
		if err != nil || len(children) != 1 || !strings.HasPrefix(children[0], "acl_changes_") {
			t.Fatalf("%s: %v %v", root, children, err)
		}
		check(root+"/"+children[0], want)
	}
	// Same ACLs again: the znode is rewritten (its version moves) but nothing changed, so no notification.
	addACLs(t, a, Resource{topic, "z_other", lit}, Entry{"User:alice", "*", read, allow})
	if c, _ := zk.Children("/kafka-acl-changes"); len(c) != 1 {
		t.Errorf("no-op create notified: %v", c)
	}
}

// TestTwoAuthorizersSeeEachOther: ACLs written by one broker reach another through the
// change notifications, including deletes and prefixed patterns; a later authorizer loads
// them at start even with the notifications gone (testLoadCache).
func TestTwoAuthorizersSeeEachOther(t *testing.T) {
	chroot := newChroot(t)
	a1, zk := newAuth(t, chroot, nil, options{})
	a2, _ := newAuth(t, chroot, nil, options{})
	lr, pr := Resource{topic, "shared", lit}, Resource{group, "app-", pre}
	addACLs(t, a1, lr, Entry{"User:alice", "*", read, allow})
	addACLs(t, a1, pr, Entry{"User:bob", "10.0.0.1", read, allow})
	waitFor(t, "a2 sees a1's ACLs", func() bool {
		return a2.Authorize(alice, "1.2.3.4", read, topic, "shared") && a2.Authorize(security.User("bob"), "10.0.0.1", read, group, "app-x")
	})
	addACLs(t, a2, lr, Entry{"User:carol", "*", write, allow})
	waitFor(t, "a1 sees a2's addition", func() bool {
		return sameSet(getACLs(a1, lr), Entry{"User:alice", "*", read, allow}, Entry{"User:carol", "*", write, allow})
	})
	removeACLs(t, a2, pr)
	waitFor(t, "a1 sees the delete", func() bool { return !a1.Authorize(security.User("bob"), "10.0.0.1", read, group, "app-x") })

	// testLoadCache: the notifications are not needed at start.
	for _, root := range []string{LiteralChangesPath, ExtendedChangesPath} {
		children, _ := zk.Children(root)
		for _, c := range children {
			if err := zk.Delete(root+"/"+c, -1); err != nil {
				t.Fatal(err)
			}
		}
	}
	a3, _ := newAuth(t, chroot, nil, options{})
	if !sameSet(getACLs(a3, lr), Entry{"User:alice", "*", read, allow}, Entry{"User:carol", "*", write, allow}) || len(a3.Acls(AnyFilter)) != 2 {
		t.Fatalf("loaded: %v", a3.Acls(AnyFilter))
	}
}

// TestConcurrentModification is testDistributedConcurrentModificationOfResourceAcls and
// testHighConcurrencyDeletionOfResourceAcls: conditional writes never lose an update.
func TestConcurrentModification(t *testing.T) {
	chroot := newChroot(t)
	a1, _ := newAuth(t, chroot, nil, options{})
	a2, _ := newAuth(t, chroot, nil, options{})
	r := Resource{topic, "contended", lit}
	var wg sync.WaitGroup
	var want []Entry
	for i := 0; i < 10; i++ {
		e := Entry{fmt.Sprintf("User:u%d", i), "*", read, allow}
		want = append(want, e)
		a := a1
		if i%2 == 1 {
			a = a2
		}
		wg.Add(1)
		go func() { defer wg.Done(); addACLs(t, a, r, e) }()
	}
	wg.Wait()
	waitFor(t, "both see all ten", func() bool { return sameSet(getACLs(a1, r), want...) && sameSet(getACLs(a2, r), want...) })

	e := Entry{"User:alice", "*", allOp, allow}
	r2 := Resource{topic, "flapping", lit}
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); addACLs(t, a1, r2, e); removeACLs(t, a2, r2, e) }()
	}
	wg.Wait()
	waitFor(t, "no ACL left", func() bool { return len(getACLs(a1, r2)) == 0 && len(getACLs(a2, r2)) == 0 })
}

// TestNotificationsPurged: notifications older than the expiry are deleted when the next
// change is processed (ZkNodeChangeNotificationListener.purgeObsoleteNotifications).
func TestNotificationsPurged(t *testing.T) {
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	a, zk := newAuth(t, newChroot(t), nil, options{changeExpiration: time.Minute, now: now})
	addACLs(t, a, Resource{topic, "p1", lit}, allowRead)
	if c, _ := zk.Children(LiteralChangesPath); len(c) != 1 {
		t.Fatalf("one notification: %v", c)
	}
	offset.Store(int64(2 * time.Minute))
	addACLs(t, a, Resource{topic, "p2", lit}, allowRead)
	// Processing the second notification purges both (both are "older" than a minute now).
	waitFor(t, "purge", func() bool { c, _ := zk.Children(LiteralChangesPath); return len(c) == 0 })
	if len(a.Acls(AnyFilter)) != 2 {
		t.Fatal("ACLs stay")
	}
}
