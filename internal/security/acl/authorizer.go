// Package acl is Kafka's ZooKeeper ACL authorizer (kafka.security.authorizer.AclAuthorizer).
package acl

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/security"
)

// Authorizer answers whether a principal connecting from host may perform an operation on
// a resource. The broker holds nil when authorizer.class.name is empty: every request is
// then allowed, as in Kafka without an authorizer.
type Authorizer interface {
	// Authorize checks op on the literal resource (rt, name), as Authorizer.authorize does
	// for one Action: super users, deny-wins, implied operations (DESCRIBE by READ, WRITE,
	// DELETE, ALTER; DESCRIBE_CONFIGS by ALTER_CONFIGS), literal, prefixed and wildcard
	// patterns, host matching and allow.everyone.if.no.acl.found.
	Authorize(p security.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool
	// AuthorizeByResourceType is Authorizer.authorizeByResourceType: whether op is allowed
	// on at least one resource of type rt (used for IDEMPOTENT_WRITE via topic WRITE).
	AuthorizeByResourceType(p security.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool
}
