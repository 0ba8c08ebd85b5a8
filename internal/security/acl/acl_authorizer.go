package acl

// AclAuthorizer (core/src/main/scala/kafka/security/authorizer/AclAuthorizer.scala): ACLs
// stored in ZooKeeper, cached in every broker, kept current by change notifications.
//
// Reads (Authorize, AuthorizeByResourceType, Acls) use the cache only. Writes (CreateAcls,
// DeleteAcls) and notification reloads are serialized by one lock, as Kafka's `lock`: each
// resource is rewritten with a conditional setData/create/delete on the znode version,
// re-read and retried on a conflict, then announced with a sequential change node that
// every broker, this one included, reloads the resource on.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/security"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// Configuration keys AclAuthorizer reads.
const (
	SuperUsersProp            = "super.users"
	AllowEveryoneIfNoACLProp  = "allow.everyone.if.no.acl.found"
	interBrokerProtocolProp   = "inter.broker.protocol.version"
	ClassName                 = "kafka.security.authorizer.AclAuthorizer"
	defaultMaxUpdateRetries   = 10
	retryBackoff              = 100 * time.Millisecond
	retryBackoffJitter        = 50 * time.Millisecond
	unknownVersion            = int32(-2) // ZkVersion.UnknownVersion: no znode
	notificationRetryInterval = time.Second
)

// Admin is what the DescribeAcls, CreateAcls and DeleteAcls handlers need of an authorizer
// (Authorizer.acls, createAcls, deleteAcls).
type Admin interface {
	// CreateAcls stores the bindings; the result has one error (nil = created) per binding.
	CreateAcls(bindings []Binding) []error
	// DeleteAcls removes every ACL matching each filter; one result per filter.
	DeleteAcls(filters []BindingFilter) []DeleteResult
	// Acls lists the cached bindings matching filter.
	Acls(filter BindingFilter) []Binding
}

// DeleteResult is AclDeleteResult: the bindings one filter deleted, each with its error
// (nil = deleted).
type DeleteResult struct {
	Deleted []DeletedBinding
}

// DeletedBinding is AclBindingDeleteResult.
type DeletedBinding struct {
	Binding Binding
	Err     error
}

// Error is a failed ACL change as the response reports it: Kafka's error code and the
// message it sends ("" = null, as ApiError for UNKNOWN_SERVER_ERROR).
type Error struct {
	Code    *kerr.Error
	Message string
	Err     error // cause, for logs
}

func (e *Error) Error() string {
	msg := e.Code.Message
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// versionedACLs is AclAuthorizer.VersionedAcls: a resource's entries (never mutated once
// cached; replaced whole) and its znode version.
type versionedACLs struct {
	entries    []Entry
	principals []security.Principal // parsed entries[i].Principal
	version    int32
}

func (v *versionedACLs) exists() bool { return v.version != unknownVersion }

// typeKey is AclAuthorizer.ResourceTypeKey, the key of the index authorizeByResourceType reads.
type typeKey struct {
	entry   Entry
	rtype   kmsg.ACLResourceType
	pattern kmsg.ACLResourcePatternType
}

// AclAuthorizer is Kafka's ZooKeeper ACL authorizer. Safe for concurrent use.
type AclAuthorizer struct {
	zk    *zkmeta.Client
	ownZK bool // authorizer.zookeeper.url: a client of its own, closed by Close
	log   *logrus.Entry

	superUsers   map[security.Principal]bool
	allowIfNoACL bool
	extended     bool // inter.broker.protocol.version >= 2.0-IV1: prefixed patterns allowed

	maxUpdateRetries int
	changeExpiration time.Duration
	now              func() time.Time

	writeMu sync.Mutex // AclAuthorizer.lock: ZooKeeper writes and reloads

	mu      sync.RWMutex
	cache   map[Resource]*versionedACLs
	byType  map[typeKey]map[string]struct{}
	lastSeq map[string]int64 // per change root: lastExecutedChange

	quit      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

var (
	_ Authorizer = (*AclAuthorizer)(nil)
	_ Admin      = (*AclAuthorizer)(nil)
)

// options are seams for tests.
type options struct {
	changeExpiration time.Duration
	now              func() time.Time
	ownZK            bool
}

// New configures an AclAuthorizer as AclAuthorizer.configure does: reads super.users,
// allow.everyone.if.no.acl.found and inter.broker.protocol.version from props, creates the
// ACL paths, starts the two change listeners, then loads every ACL. zk stays the caller's.
func New(ctx context.Context, zk *zkmeta.Client, props map[string]string, log *logrus.Entry) (*AclAuthorizer, error) {
	return newAuthorizer(ctx, zk, props, log, options{})
}

// NewOwningClient is New for a ZooKeeper client made for the authorizer alone
// (authorizer.zookeeper.url): Close closes it.
func NewOwningClient(ctx context.Context, zk *zkmeta.Client, props map[string]string, log *logrus.Entry) (*AclAuthorizer, error) {
	return newAuthorizer(ctx, zk, props, log, options{ownZK: true})
}

func newAuthorizer(ctx context.Context, zk *zkmeta.Client, props map[string]string, log *logrus.Entry, o options) (*AclAuthorizer, error) {
	if zk == nil {
		return nil, errors.New("acl: nil ZooKeeper client")
	}
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	a := &AclAuthorizer{
		zk: zk, ownZK: o.ownZK, log: log.WithField("component", "kafka.authorizer"),
		superUsers: map[security.Principal]bool{}, maxUpdateRetries: defaultMaxUpdateRetries,
		changeExpiration: time.Duration(changeExpirationMsDef) * time.Millisecond, now: time.Now,
		cache: map[Resource]*versionedACLs{}, byType: map[typeKey]map[string]struct{}{},
		lastSeq: map[string]int64{LiteralChangesPath: -1, ExtendedChangesPath: -1},
		quit:    make(chan struct{}),
	}
	if o.changeExpiration > 0 {
		a.changeExpiration = o.changeExpiration
	}
	if o.now != nil {
		a.now = o.now
	}
	if v := strings.TrimSpace(props[SuperUsersProp]); v != "" {
		for _, s := range strings.Split(v, ";") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			p, err := parsePrincipal(s)
			if err != nil {
				return nil, fmt.Errorf("acl: invalid %s: %w", SuperUsersProp, err)
			}
			a.superUsers[p] = true
		}
	}
	a.allowIfNoACL = strings.EqualFold(strings.TrimSpace(props[AllowEveryoneIfNoACLProp]), "true")
	a.extended = ibpSupportsPrefixed(strings.TrimSpace(props[interBrokerProtocolProp]))

	if err := a.createPaths(); err != nil {
		return nil, fmt.Errorf("acl: create ACL paths: %w", err)
	}
	// Listeners first, then the load, so no change falls between the two (as Kafka).
	for _, root := range []string{LiteralChangesPath, ExtendedChangesPath} {
		a.wg.Add(1)
		go a.listen(root)
	}
	if err := a.loadCache(ctx); err != nil {
		a.Close()
		return nil, fmt.Errorf("acl: load ACLs: %w", err)
	}
	a.mu.RLock()
	n := len(a.cache)
	a.mu.RUnlock()
	a.log.WithFields(logrus.Fields{"resources": n, "super_users": len(a.superUsers), "allow_everyone_if_no_acl_found": a.allowIfNoACL}).
		Info("ACL authorizer started")
	return a, nil
}

// Close stops the change listeners (and closes the authorizer's own ZooKeeper client).
func (a *AclAuthorizer) Close() {
	a.closeOnce.Do(func() {
		close(a.quit)
		a.wg.Wait()
		if a.ownZK {
			_ = a.zk.Close()
		}
	})
}

// ibpSupportsPrefixed is interBrokerProtocolVersion >= IBP_2_0_IV1 ("2.0" alone is 2.0-IV1).
func ibpSupportsPrefixed(v string) bool {
	if v == "" {
		return true
	}
	base, iv, _ := strings.Cut(v, "-")
	parts := strings.Split(base, ".")
	major, err := strconv.Atoi(parts[0])
	if err != nil {
		return true
	}
	minor := 0
	if len(parts) > 1 {
		minor, _ = strconv.Atoi(parts[1])
	}
	if major == 0 && len(parts) > 2 { // 0.10.2 and the like
		return false
	}
	switch {
	case major != 2:
		return major > 2
	case minor != 0:
		return minor > 0
	}
	return iv != "IV0"
}

// createPaths is KafkaZkClient.createAclPaths.
func (a *AclAuthorizer) createPaths() error {
	for _, p := range []kmsg.ACLResourcePatternType{kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed} {
		root, _ := storePath(p)
		paths := []string{root}
		for _, t := range StoredResourceTypes {
			tp, _ := TypePath(p, t)
			paths = append(paths, tp)
		}
		for _, path := range paths {
			if err := a.zk.CreateRecursive(path, nil); err != nil && !errors.Is(err, zkmeta.ErrNodeExists) {
				return err
			}
		}
	}
	for _, path := range []string{LiteralChangesPath, ExtendedChangesPath} {
		if err := a.zk.CreateRecursive(path, nil); err != nil && !errors.Is(err, zkmeta.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// loadCache is AclAuthorizer.loadAllAcls: every resource of every store.
func (a *AclAuthorizer) loadCache(ctx context.Context) error {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	for _, p := range []kmsg.ACLResourcePatternType{kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed} {
		root, _ := storePath(p)
		types, err := a.zk.Children(root)
		if err != nil {
			return err
		}
		sort.Strings(types)
		for _, tn := range types {
			rt := ParseResourceType(tn)
			if rt == kmsg.ACLResourceTypeUnknown || rt == kmsg.ACLResourceTypeAny {
				a.log.WithField("zk_path", root+"/"+tn).Warn("ignoring unknown ACL resource type")
				continue
			}
			names, err := a.zk.Children(root + "/" + tn)
			if err != nil {
				return err
			}
			for _, name := range names {
				if err := ctx.Err(); err != nil {
					return err
				}
				r := Resource{Type: rt, Name: name, Pattern: p}
				v, err := a.readZK(r)
				if err != nil {
					return fmt.Errorf("%s: %w", r, err)
				}
				a.updateCache(r, v)
			}
		}
	}
	return nil
}

// readZK is getVersionedAclsForResource: no znode → no ACLs, unknown version.
func (a *AclAuthorizer) readZK(r Resource) (*versionedACLs, error) {
	path, err := ResourcePath(r)
	if err != nil {
		return nil, err
	}
	data, st, err := a.zk.Get(path)
	if errors.Is(err, zkmeta.ErrNoNode) {
		return &versionedACLs{version: unknownVersion}, nil
	}
	if err != nil {
		return nil, err
	}
	entries, err := DecodeACLs(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return newVersioned(entries, st.Version)
}

func newVersioned(entries []Entry, version int32) (*versionedACLs, error) {
	v := &versionedACLs{entries: entries, principals: make([]security.Principal, len(entries)), version: version}
	for i, e := range entries {
		p, err := parsePrincipal(e.Principal)
		if err != nil {
			return nil, err
		}
		v.principals[i] = p
	}
	return v, nil
}

// updateCache is AclAuthorizer.updateCache: replace the resource's entries and keep the
// by-type index in step. Callers hold writeMu.
func (a *AclAuthorizer) updateCache(r Resource, v *versionedACLs) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var cur []Entry
	if old := a.cache[r]; old != nil {
		cur = old.entries
	}
	for _, e := range v.entries {
		if !containsEntry(cur, e) {
			k := typeKey{entry: e, rtype: r.Type, pattern: r.Pattern}
			set := a.byType[k]
			if set == nil {
				set = map[string]struct{}{}
				a.byType[k] = set
			}
			set[r.Name] = struct{}{}
		}
	}
	for _, e := range cur {
		if !containsEntry(v.entries, e) {
			k := typeKey{entry: e, rtype: r.Type, pattern: r.Pattern}
			if set := a.byType[k]; set != nil {
				delete(set, r.Name)
				if len(set) == 0 {
					delete(a.byType, k)
				}
			}
		}
	}
	if len(v.entries) > 0 {
		a.cache[r] = v
	} else {
		delete(a.cache, r)
	}
}

func containsEntry(list []Entry, e Entry) bool {
	for _, x := range list {
		if x == e {
			return true
		}
	}
	return false
}

func sameEntries(a, b []Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for _, e := range a {
		if !containsEntry(b, e) {
			return false
		}
	}
	return true
}

// ---- authorization ----

// Authorize implements Authorizer (AclAuthorizer.authorizeAction on a LITERAL resource).
func (a *AclAuthorizer) Authorize(p security.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	ok := a.superUsers[p] || a.aclsAllowAccess(p, host, op, rt, name)
	a.audit(p, host, op, rt, name, ok)
	return ok
}

func (a *AclAuthorizer) aclsAllowAccess(p security.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	acls := a.matchingACLs(rt, name)
	empty := true
	for _, v := range acls {
		if len(v.entries) > 0 {
			empty = false
			break
		}
	}
	if empty {
		return a.allowIfNoACL
	}
	if matchingACLExists(acls, op, p, host, kmsg.ACLPermissionTypeDeny) {
		return false
	}
	// Allowing READ, WRITE, DELETE or ALTER implies DESCRIBE; ALTER_CONFIGS implies
	// DESCRIBE_CONFIGS (AclOperation's inheritance).
	switch op {
	case kmsg.ACLOperationDescribe:
		for _, o := range []kmsg.ACLOperation{kmsg.ACLOperationDescribe, kmsg.ACLOperationRead, kmsg.ACLOperationWrite,
			kmsg.ACLOperationDelete, kmsg.ACLOperationAlter} {
			if matchingACLExists(acls, o, p, host, kmsg.ACLPermissionTypeAllow) {
				return true
			}
		}
		return false
	case kmsg.ACLOperationDescribeConfigs:
		return matchingACLExists(acls, kmsg.ACLOperationDescribeConfigs, p, host, kmsg.ACLPermissionTypeAllow) ||
			matchingACLExists(acls, kmsg.ACLOperationAlterConfigs, p, host, kmsg.ACLPermissionTypeAllow)
	}
	return matchingACLExists(acls, op, p, host, kmsg.ACLPermissionTypeAllow)
}

// matchingACLs is AclAuthorizer.matchingAcls: the prefixed patterns that are prefixes of
// name, the wildcard and the literal name. The slices it returns are never mutated.
func (a *AclAuthorizer) matchingACLs(rt kmsg.ACLResourceType, name string) []*versionedACLs {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var out []*versionedACLs
	for i := 0; i < len(name); {
		_, size := utf8.DecodeRuneInString(name[i:])
		i += size
		if v := a.cache[Resource{Type: rt, Name: name[:i], Pattern: kmsg.ACLResourcePatternTypePrefixed}]; v != nil {
			out = append(out, v)
		}
	}
	if v := a.cache[Resource{Type: rt, Name: WildcardResource, Pattern: kmsg.ACLResourcePatternTypeLiteral}]; v != nil {
		out = append(out, v)
	}
	if v := a.cache[Resource{Type: rt, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral}]; v != nil && name != WildcardResource {
		out = append(out, v)
	}
	return out
}

// matchingACLExists: an entry of permission perm for the principal (or User:*), the
// operation (or ALL) and the host (or *).
func matchingACLExists(acls []*versionedACLs, op kmsg.ACLOperation, p security.Principal, host string, perm kmsg.ACLPermissionType) bool {
	for _, v := range acls {
		for i, e := range v.entries {
			if e.Permission == perm &&
				(v.principals[i] == p || v.principals[i] == WildcardPrincipal) &&
				(e.Operation == op || e.Operation == kmsg.ACLOperationAll) &&
				(e.Host == host || e.Host == WildcardHost) {
				return true
			}
		}
	}
	return false
}

// AuthorizeByResourceType implements Authorizer as AclAuthorizer.authorizeByResourceType:
// allowed when some ALLOW (literal or prefixed) for the principal, host and op is not
// dominated by a DENY: a DENY on the wildcard denies all; a literal DENY on the same name or
// a prefixed DENY on a prefix of the name (or of the allowed prefix) dominates.
func (a *AclAuthorizer) AuthorizeByResourceType(p security.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if rt == kmsg.ACLResourceTypeAny || !knownResourceType(rt) || op == kmsg.ACLOperationAny || !knownOperation(op) {
		a.log.WithFields(logrus.Fields{"operation": op, "resource_type": rt}).
			Warn("authorizeByResourceType needs a concrete operation and resource type")
		return false
	}
	if a.superUsers[p] {
		return true
	}
	ok := a.authorizeByType(p.String(), host, op, rt)
	a.audit(p, host, op, rt, "", ok)
	return ok
}

func (a *AclAuthorizer) authorizeByType(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	deny, allow := kmsg.ACLPermissionTypeDeny, kmsg.ACLPermissionTypeAllow
	denyLiterals := a.matchingResources(principal, host, op, deny, rt, lit)
	for _, s := range denyLiterals {
		if _, ok := s[WildcardResource]; ok {
			return false
		}
	}
	if a.allowIfNoACL {
		return true
	}
	denyPrefixes := a.matchingResources(principal, host, op, deny, rt, pre)
	if len(denyLiterals) == 0 && len(denyPrefixes) == 0 {
		return len(a.matchingResources(principal, host, op, allow, rt, pre)) > 0 ||
			len(a.matchingResources(principal, host, op, allow, rt, lit)) > 0
	}
	for _, s := range a.matchingResources(principal, host, op, allow, rt, pre) {
		for prefix := range s {
			if !dominantPrefixedDeny(prefix, denyPrefixes) {
				return true
			}
		}
	}
	for _, s := range a.matchingResources(principal, host, op, allow, rt, lit) {
		for literal := range s {
			if literal == WildcardResource {
				return true
			}
			denied := false
			for _, d := range denyLiterals {
				if _, ok := d[literal]; ok {
					denied = true
					break
				}
			}
			if !denied && !dominantPrefixedDeny(literal, denyPrefixes) {
				return true
			}
		}
	}
	return false
}

// matchingResources collects the name sets of the index for {principal, User:*} × {host,
// *} × {op, ALL}. Callers hold mu.
func (a *AclAuthorizer) matchingResources(principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType,
	rt kmsg.ACLResourceType, pattern kmsg.ACLResourcePatternType) []map[string]struct{} {
	var out []map[string]struct{}
	for _, pr := range dedup(principal, WildcardPrincipal.String()) {
		for _, h := range dedup(host, WildcardHost) {
			for _, o := range []kmsg.ACLOperation{op, kmsg.ACLOperationAll} {
				if o == kmsg.ACLOperationAll && op == kmsg.ACLOperationAll {
					continue
				}
				k := typeKey{entry: Entry{Principal: pr, Host: h, Operation: o, Permission: perm}, rtype: rt, pattern: pattern}
				if s := a.byType[k]; len(s) > 0 {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

func dedup(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

// dominantPrefixedDeny: a prefixed DENY on some prefix of name (name included).
func dominantPrefixedDeny(name string, denyPrefixes []map[string]struct{}) bool {
	for i := 0; i < len(name); {
		_, size := utf8.DecodeRuneInString(name[i:])
		i += size
		for _, s := range denyPrefixes {
			if _, ok := s[name[:i]]; ok {
				return true
			}
		}
	}
	return false
}

// audit is logAuditMessage, at debug level (Kafka's kafka.authorizer.logger).
func (a *AclAuthorizer) audit(p security.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string, ok bool) {
	if !a.log.Logger.IsLevelEnabled(logrus.DebugLevel) {
		return
	}
	result := "Denied"
	if ok {
		result = "Allowed"
	}
	a.log.WithFields(logrus.Fields{"principal": p.String(), "host": host, "operation": OperationName(op),
		"resource_type": ResourceTypeName(rt), "resource": name, "result": result}).Debug("authorization")
}

// HostAddress writes an IP the way Java's InetAddress.getHostAddress does, which is the
// host Kafka matches ACL entries against: dotted IPv4 (IPv4-mapped IPv6 included), and
// IPv6 as eight uncompressed lower-case hex groups ("0:0:0:0:0:0:0:1").
func HostAddress(ip net.IP) string {
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	if len(ip) != net.IPv6len {
		return ip.String()
	}
	var b strings.Builder
	for i := 0; i < net.IPv6len; i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(strconv.FormatUint(uint64(ip[i])<<8|uint64(ip[i+1]), 16))
	}
	return b.String()
}
