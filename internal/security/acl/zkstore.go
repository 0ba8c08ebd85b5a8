package acl

// ZkAclStore and ZkAclChangeStore (core/src/main/scala/kafka/zk/ZkData.scala): where ACLs
// and their change notifications live in ZooKeeper and how their bytes look.
//
//	/kafka-acl/Topic/orders                   {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}
//	/kafka-acl-extended/prefixed/Topic/ord    (same JSON)
//	/kafka-acl-changes/acl_changes_0000000007           TOPIC:orders
//	/kafka-acl-extended-changes/acl_changes_0000000003  {"version":1,"resourceType":"TOPIC","name":"ord","patternType":"PREFIXED"}

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ZooKeeper paths (chroot-relative).
const (
	LiteralACLPath        = "/kafka-acl"
	ExtendedACLPath       = "/kafka-acl-extended"
	PrefixedACLPath       = ExtendedACLPath + "/prefixed" // ExtendedAclStore(PREFIXED): the pattern name in lower case
	LiteralChangesPath    = "/kafka-acl-changes"
	ExtendedChangesPath   = "/kafka-acl-extended-changes"
	ChangeSequencePrefix  = "acl_changes_"
	aclJSONVersion        = 1
	changeEventVersion    = 1
	changeExpirationMsDef = 15 * 60 * 1000 // ZkNodeChangeNotificationListener.changeExpirationMs
)

// storePath is ZkAclStore(patternType).aclPath.
func storePath(p kmsg.ACLResourcePatternType) (string, error) {
	switch p {
	case kmsg.ACLResourcePatternTypeLiteral:
		return LiteralACLPath, nil
	case kmsg.ACLResourcePatternTypePrefixed:
		return PrefixedACLPath, nil
	}
	return "", fmt.Errorf("invalid pattern type: %s", p)
}

// TypePath is ZkAclStore.path(resourceType): /kafka-acl/Topic.
func TypePath(p kmsg.ACLResourcePatternType, t kmsg.ACLResourceType) (string, error) {
	root, err := storePath(p)
	if err != nil {
		return "", err
	}
	return root + "/" + ResourceTypeName(t), nil
}

// ResourcePath is ResourceZNode.path: /kafka-acl/Topic/orders.
func ResourcePath(r Resource) (string, error) {
	tp, err := TypePath(r.Pattern, r.Type)
	if err != nil {
		return "", err
	}
	return tp + "/" + r.Name, nil
}

// changePath is the change store's root for a pattern type.
func changePath(p kmsg.ACLResourcePatternType) string {
	if p == kmsg.ACLResourcePatternTypeLiteral {
		return LiteralChangesPath
	}
	return ExtendedChangesPath
}

// aclJSON is one element of "acls", its keys in the order AclEntry.toMap builds them.
type aclJSON struct {
	Principal      string `json:"principal"`
	PermissionType string `json:"permissionType"`
	Operation      string `json:"operation"`
	Host           string `json:"host"`
}

type aclsJSON struct {
	Version int       `json:"version"`
	ACLs    []aclJSON `json:"acls"`
}

// EncodeACLs is ResourceZNode.encode (AclEntry.toJsonCompatibleMap written by Jackson).
func EncodeACLs(entries []Entry) []byte {
	doc := aclsJSON{Version: aclJSONVersion, ACLs: make([]aclJSON, len(entries))}
	for i, e := range entries {
		doc.ACLs[i] = aclJSON{Principal: e.Principal, PermissionType: PermissionName(e.Permission),
			Operation: OperationName(e.Operation), Host: e.Host}
	}
	return marshal(doc)
}

// DecodeACLs is AclEntry.fromBytes: empty data is no ACLs; version must be 1; names are
// read as SecurityUtils does (unknown ones become UNKNOWN). Duplicates collapse, as in
// Kafka's Set.
func DecodeACLs(data []byte) ([]Entry, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var doc struct {
		Version *int `json:"version"`
		ACLs    []struct {
			Principal      *string `json:"principal"`
			PermissionType *string `json:"permissionType"`
			Operation      *string `json:"operation"`
			Host           *string `json:"host"`
		} `json:"acls"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("malformed ACL JSON: %w", err)
	}
	if doc.Version == nil || *doc.Version != aclJSONVersion {
		return nil, fmt.Errorf("unsupported ACL JSON version in %s", data)
	}
	out := make([]Entry, 0, len(doc.ACLs))
	for _, a := range doc.ACLs {
		if a.Principal == nil || a.PermissionType == nil || a.Operation == nil || a.Host == nil {
			return nil, fmt.Errorf("ACL entry missing principal, permissionType, operation or host in %s", data)
		}
		if _, err := parsePrincipal(*a.Principal); err != nil {
			return nil, err
		}
		out = appendUnique(out, Entry{Principal: *a.Principal, Host: *a.Host,
			Operation: ParseOperation(*a.Operation), Permission: ParsePermission(*a.PermissionType)})
	}
	return out, nil
}

// EncodeChange is the change node data for a resource: LiteralAclChangeStore writes
// "<RESOURCE_TYPE>:<name>" (ResourceType.toString is the enum name), ExtendedAclChangeStore
// an ExtendedAclChangeEvent.
func EncodeChange(r Resource) []byte {
	if r.Pattern == kmsg.ACLResourcePatternTypeLiteral {
		return []byte(r.Type.String() + ":" + r.Name)
	}
	return marshal(struct {
		Version      int    `json:"version"`
		ResourceType string `json:"resourceType"`
		Name         string `json:"name"`
		PatternType  string `json:"patternType"`
	}{changeEventVersion, r.Type.String(), r.Name, r.Pattern.String()})
}

// DecodeChange reads a change node of the literal or the extended store.
func DecodeChange(literal bool, data []byte) (Resource, error) {
	if literal {
		typ, name, ok := strings.Cut(string(data), ":")
		if !ok {
			return Resource{}, fmt.Errorf("expected a string in format ResourceType:ResourceName but got %s", data)
		}
		return Resource{Type: parseResourceTypeEnum(typ), Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral}, nil
	}
	var ev struct {
		Version      int    `json:"version"`
		ResourceType string `json:"resourceType"`
		Name         string `json:"name"`
		PatternType  string `json:"patternType"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return Resource{}, fmt.Errorf("failed to parse ACL change event: %w", err)
	}
	if ev.Version > changeEventVersion {
		return Resource{}, fmt.Errorf("acl change event received for unsupported version: %d", ev.Version)
	}
	return Resource{Type: parseResourceTypeEnum(ev.ResourceType), Name: ev.Name, Pattern: parsePatternTypeEnum(ev.PatternType)}, nil
}

// marshal writes compact JSON without Go's HTML escaping, as Jackson does.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // plain structs of strings and ints cannot fail
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func appendUnique(list []Entry, e Entry) []Entry {
	for _, x := range list {
		if x == e {
			return list
		}
	}
	return append(list, e)
}
