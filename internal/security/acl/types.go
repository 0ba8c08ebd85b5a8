package acl

// Kafka's ACL value types (org.apache.kafka.common.acl and .resource): a resource pattern, an
// access control entry, their binding, and the filters DescribeAcls and DeleteAcls carry.
// The enums are kmsg's, whose codes are Kafka's.

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/security"
)

// WildcardResource is ResourcePattern.WILDCARD_RESOURCE: a LITERAL pattern with this name
// matches every resource of its type.
const WildcardResource = "*"

// WildcardHost is AclEntry.WildcardHost: an entry with this host matches every client address.
const WildcardHost = "*"

// WildcardPrincipal is AclEntry.WildcardPrincipal (User:*): an entry with this principal
// matches every principal.
var WildcardPrincipal = security.Principal{Type: security.UserType, Name: "*"}

// ClusterName is Resource.CLUSTER_NAME, the only valid name of a CLUSTER resource.
const ClusterName = "kafka-cluster"

// Resource is Kafka's ResourcePattern: a resource type, a name and how the name matches.
type Resource struct {
	Type    kmsg.ACLResourceType
	Name    string
	Pattern kmsg.ACLResourcePatternType // LITERAL or PREFIXED once stored
}

func (r Resource) String() string {
	return fmt.Sprintf("ResourcePattern(resourceType=%s, name=%s, patternType=%s)", r.Type, r.Name, r.Pattern)
}

// isUnknown is ResourcePattern.isUnknown.
func (r Resource) isUnknown() bool {
	return !knownResourceType(r.Type) || !knownPatternType(r.Pattern)
}

// Entry is Kafka's AccessControlEntry: who (principal string as written, e.g. "User:alice"),
// from where, which operation, allowed or denied.
type Entry struct {
	Principal  string
	Host       string
	Operation  kmsg.ACLOperation
	Permission kmsg.ACLPermissionType
}

func (e Entry) String() string {
	return fmt.Sprintf("(principal=%s, host=%s, operation=%s, permissionType=%s)", e.Principal, e.Host,
		e.Operation, e.Permission)
}

// isUnknown is AccessControlEntryData.isUnknown.
func (e Entry) isUnknown() bool {
	return !knownOperation(e.Operation) || !knownPermission(e.Permission)
}

// Binding is Kafka's AclBinding: one entry on one resource pattern.
type Binding struct {
	Resource Resource
	Entry    Entry
}

func (b Binding) String() string {
	return "(pattern=" + b.Resource.String() + ", entry=" + b.Entry.String() + ")"
}

// ResourceFilter is ResourcePatternFilter. Type ANY matches every type; Name nil every name;
// Pattern ANY matches LITERAL and PREFIXED patterns with exactly Name, MATCH every pattern
// that would apply to a resource called Name (the literal, the wildcard, covering prefixes).
type ResourceFilter struct {
	Type    kmsg.ACLResourceType
	Name    *string
	Pattern kmsg.ACLResourcePatternType
}

// Matches is ResourcePatternFilter.matches.
func (f ResourceFilter) Matches(r Resource) bool {
	if f.Type != kmsg.ACLResourceTypeAny && f.Type != r.Type {
		return false
	}
	if f.Pattern != kmsg.ACLResourcePatternTypeAny && f.Pattern != kmsg.ACLResourcePatternTypeMatch && f.Pattern != r.Pattern {
		return false
	}
	if f.Name == nil {
		return true
	}
	if f.Pattern == kmsg.ACLResourcePatternTypeAny || f.Pattern == r.Pattern {
		return *f.Name == r.Name
	}
	switch r.Pattern {
	case kmsg.ACLResourcePatternTypeLiteral:
		return *f.Name == r.Name || r.Name == WildcardResource
	case kmsg.ACLResourcePatternTypePrefixed:
		return strings.HasPrefix(*f.Name, r.Name)
	}
	return false
}

// MatchesAtMostOne is ResourcePatternFilter.matchesAtMostOne: the filter names one pattern
// (or, with Pattern ANY, the literal and the prefixed pattern of one name).
func (f ResourceFilter) MatchesAtMostOne() bool {
	return f.Type != kmsg.ACLResourceTypeAny && knownResourceType(f.Type) && f.Name != nil &&
		f.Pattern != kmsg.ACLResourcePatternTypeMatch && f.Pattern != kmsg.ACLResourcePatternTypeUnknown && knownFilterPatternType(f.Pattern)
}

// EntryFilter is AccessControlEntryFilter: nil Principal/Host and ANY Operation/Permission
// match everything.
type EntryFilter struct {
	Principal  *string
	Host       *string
	Operation  kmsg.ACLOperation
	Permission kmsg.ACLPermissionType
}

// Matches is AccessControlEntryFilter.matches.
func (f EntryFilter) Matches(e Entry) bool {
	if f.Principal != nil && *f.Principal != e.Principal {
		return false
	}
	if f.Host != nil && *f.Host != e.Host {
		return false
	}
	if f.Operation != kmsg.ACLOperationAny && f.Operation != e.Operation {
		return false
	}
	return f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == e.Permission
}

// BindingFilter is AclBindingFilter.
type BindingFilter struct {
	Resource ResourceFilter
	Entry    EntryFilter
}

// AnyFilter matches every binding (AclBindingFilter.ANY).
var AnyFilter = BindingFilter{
	Resource: ResourceFilter{Type: kmsg.ACLResourceTypeAny, Pattern: kmsg.ACLResourcePatternTypeAny},
	Entry:    EntryFilter{Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny},
}

// Matches is AclBindingFilter.matches.
func (f BindingFilter) Matches(b Binding) bool {
	return f.Resource.Matches(b.Resource) && f.Entry.Matches(b.Entry)
}

// ---- enum names ----

// Kafka writes enum names two ways: Pascal case in ACL znodes and paths
// (SecurityUtils.resourceTypeName/operationName/permissionTypeName: "TransactionalId",
// "DescribeConfigs", "Allow") and the Java enum name in change events ("TRANSACTIONAL_ID").

var resourceTypeNames = map[kmsg.ACLResourceType]string{
	kmsg.ACLResourceTypeUnknown: "Unknown", kmsg.ACLResourceTypeAny: "Any", kmsg.ACLResourceTypeTopic: "Topic",
	kmsg.ACLResourceTypeGroup: "Group", kmsg.ACLResourceTypeCluster: "Cluster", kmsg.ACLResourceTypeTransactionalId: "TransactionalId",
	kmsg.ACLResourceTypeDelegationToken: "DelegationToken", kmsg.ACLResourceTypeUser: "User",
}

var operationNames = map[kmsg.ACLOperation]string{
	kmsg.ACLOperationUnknown: "Unknown", kmsg.ACLOperationAny: "Any", kmsg.ACLOperationAll: "All", kmsg.ACLOperationRead: "Read",
	kmsg.ACLOperationWrite: "Write", kmsg.ACLOperationCreate: "Create", kmsg.ACLOperationDelete: "Delete",
	kmsg.ACLOperationAlter: "Alter", kmsg.ACLOperationDescribe: "Describe", kmsg.ACLOperationClusterAction: "ClusterAction",
	kmsg.ACLOperationDescribeConfigs: "DescribeConfigs", kmsg.ACLOperationAlterConfigs: "AlterConfigs",
	kmsg.ACLOperationIdempotentWrite: "IdempotentWrite", kmsg.ACLOperationCreateTokens: "CreateTokens",
	kmsg.ACLOperationDescribeTokens: "DescribeTokens",
}

var permissionNames = map[kmsg.ACLPermissionType]string{
	kmsg.ACLPermissionTypeUnknown: "Unknown", kmsg.ACLPermissionTypeAny: "Any",
	kmsg.ACLPermissionTypeDeny: "Deny", kmsg.ACLPermissionTypeAllow: "Allow",
}

// StoredResourceTypes are AclEntry.ResourceTypes: every concrete type, each with its own
// child of /kafka-acl and /kafka-acl-extended/prefixed.
var StoredResourceTypes = []kmsg.ACLResourceType{
	kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeCluster,
	kmsg.ACLResourceTypeTransactionalId, kmsg.ACLResourceTypeDelegationToken, kmsg.ACLResourceTypeUser,
}

// ResourceTypeName is SecurityUtils.resourceTypeName ("Topic", "TransactionalId").
func ResourceTypeName(t kmsg.ACLResourceType) string { return nameOr(resourceTypeNames, t) }

// OperationName is SecurityUtils.operationName ("Read", "IdempotentWrite").
func OperationName(op kmsg.ACLOperation) string { return nameOr(operationNames, op) }

// PermissionName is SecurityUtils.permissionTypeName ("Allow", "Deny").
func PermissionName(p kmsg.ACLPermissionType) string { return nameOr(permissionNames, p) }

// ParseResourceType is SecurityUtils.resourceType: the Pascal name, else any case of it
// without underscores ("TOPIC", "transactionalid"); UNKNOWN otherwise.
func ParseResourceType(s string) kmsg.ACLResourceType {
	return parseName(resourceTypeNames, s, kmsg.ACLResourceTypeUnknown)
}

// ParseOperation is SecurityUtils.operation.
func ParseOperation(s string) kmsg.ACLOperation {
	return parseName(operationNames, s, kmsg.ACLOperationUnknown)
}

// ParsePermission is SecurityUtils.permissionType.
func ParsePermission(s string) kmsg.ACLPermissionType {
	return parseName(permissionNames, s, kmsg.ACLPermissionTypeUnknown)
}

func nameOr[K comparable](m map[K]string, k K) string {
	if n, ok := m[k]; ok {
		return n
	}
	return "Unknown"
}

func parseName[K comparable](m map[K]string, s string, unknown K) K {
	for k, n := range m {
		if n == s {
			return k
		}
	}
	up := strings.ToUpper(s)
	for k, n := range m {
		if strings.ToUpper(n) == up {
			return k
		}
	}
	return unknown
}

// parseResourceTypeEnum is ResourceType.fromString: the Java enum name ("TRANSACTIONAL_ID",
// which kmsg's String() also writes) in any case; UNKNOWN otherwise.
func parseResourceTypeEnum(s string) kmsg.ACLResourceType {
	up := strings.ToUpper(s)
	for _, t := range StoredResourceTypes {
		if t.String() == up {
			return t
		}
	}
	if up == "ANY" {
		return kmsg.ACLResourceTypeAny
	}
	return kmsg.ACLResourceTypeUnknown
}

// parsePatternTypeEnum is PatternType.fromString: the exact enum name.
func parsePatternTypeEnum(s string) kmsg.ACLResourcePatternType {
	switch s {
	case "ANY":
		return kmsg.ACLResourcePatternTypeAny
	case "MATCH":
		return kmsg.ACLResourcePatternTypeMatch
	case "LITERAL":
		return kmsg.ACLResourcePatternTypeLiteral
	case "PREFIXED":
		return kmsg.ACLResourcePatternTypePrefixed
	}
	return kmsg.ACLResourcePatternTypeUnknown
}

func knownResourceType(t kmsg.ACLResourceType) bool {
	return t >= kmsg.ACLResourceTypeAny && t <= kmsg.ACLResourceTypeUser
}

func knownPatternType(p kmsg.ACLResourcePatternType) bool {
	return p >= kmsg.ACLResourcePatternTypeAny && p <= kmsg.ACLResourcePatternTypePrefixed
}

func knownFilterPatternType(p kmsg.ACLResourcePatternType) bool { return knownPatternType(p) }

func knownOperation(op kmsg.ACLOperation) bool {
	return op >= kmsg.ACLOperationAny && op <= kmsg.ACLOperationDescribeTokens
}

func knownPermission(p kmsg.ACLPermissionType) bool {
	return p == kmsg.ACLPermissionTypeAny || p == kmsg.ACLPermissionTypeDeny || p == kmsg.ACLPermissionTypeAllow
}

// parsePrincipal is SecurityUtils.parseKafkaPrincipal: "Type:Name" split at the first
// colon; either part may be empty, the string may not be, and it needs a colon.
func parsePrincipal(s string) (security.Principal, error) {
	typ, name, ok := strings.Cut(s, ":")
	if s == "" || !ok {
		return security.Principal{}, fmt.Errorf("expected a string in format principalType:principalName but got %s", s)
	}
	return security.Principal{Type: typ, Name: name}, nil
}
