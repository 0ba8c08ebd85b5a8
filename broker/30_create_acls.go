package broker

// 30_create_acls.go — CreateAcls v0-3 (kafka.server.AclApis.handleCreateAcls): cluster
// ALTER; a CLUSTER resource must be named kafka-cluster and no resource name may be empty
// (INVALID_REQUEST); the rest go to the authorizer, which checks its own rules and writes
// ZooKeeper. A creation with an ANY element cannot even be turned into an ACL binding in
// Kafka, which then fails the whole request with UNKNOWN_SERVER_ERROR; UNKNOWN elements and
// non-literal v0 patterns fail to parse and close the connection. Without an authorizer:
// SECURITY_DISABLED. Deviations: none beyond DescribeAcls's message.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/security/acl"
)

func init() { registerAPI(0, 3, (*APIs).handleCreateACLs) }

func (a *APIs) handleCreateACLs(ctx context.Context, rc *RequestContext, req *kmsg.CreateACLsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	// CreateAclsRequest.validate.
	for _, c := range req.Creations {
		if req.Version == 0 && c.ResourcePatternType != kmsg.ACLResourcePatternTypeLiteral {
			return nil, fmt.Errorf("CreateAcls v0: version 0 only supports literal resource pattern types")
		}
		if c.ResourcePatternType == kmsg.ACLResourcePatternTypeUnknown || c.ResourceType == kmsg.ACLResourceTypeUnknown ||
			c.PermissionType == kmsg.ACLPermissionTypeUnknown || c.Operation == kmsg.ACLOperationUnknown {
			return nil, fmt.Errorf("CreateAcls: creations contain UNKNOWN elements")
		}
	}
	fail := func(code int16, msg *string) (kmsg.Response, error) {
		for range req.Creations {
			r := kmsg.NewCreateACLsResponseResult()
			r.ErrorCode, r.ErrorMessage = code, msg
			resp.Results = append(resp.Results, r)
		}
		return resp, nil
	}
	if !a.authorize(rc, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, clusterResourceName) {
		return fail(kerr.ClusterAuthorizationFailed.Code, aclDeniedMessage(rc))
	}
	adm := a.aclAdmin()
	if adm == nil {
		return fail(kerr.SecurityDisabled.Code, strp("No Authorizer is configured."))
	}
	// ResourcePattern and AccessControlEntry refuse ANY (and MATCH patterns).
	for _, c := range req.Creations {
		if c.ResourceType == kmsg.ACLResourceTypeAny || c.ResourcePatternType == kmsg.ACLResourcePatternTypeAny ||
			c.ResourcePatternType == kmsg.ACLResourcePatternTypeMatch || c.Operation == kmsg.ACLOperationAny ||
			c.PermissionType == kmsg.ACLPermissionTypeAny {
			if rc != nil && rc.Log != nil {
				rc.Log.WithField("creation", c).Info("CreateAcls: an ACL binding cannot have an ANY or MATCH element")
			}
			return fail(kerr.UnknownServerError.Code, nil)
		}
	}
	results := make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	var valid []acl.Binding
	var validIdx []int
	for i, c := range req.Creations {
		results[i] = kmsg.NewCreateACLsResponseResult()
		switch {
		case c.ResourceType == kmsg.ACLResourceTypeCluster && c.ResourceName != clusterResourceName:
			results[i].ErrorCode = kerr.InvalidRequest.Code
			results[i].ErrorMessage = strp("The only valid name for the CLUSTER resource is " + clusterResourceName)
		case c.ResourceName == "":
			results[i].ErrorCode = kerr.InvalidRequest.Code
			results[i].ErrorMessage = strp("Invalid empty resource name")
		default:
			valid = append(valid, acl.Binding{
				Resource: acl.Resource{Type: c.ResourceType, Name: c.ResourceName, Pattern: c.ResourcePatternType},
				Entry:    acl.Entry{Principal: c.Principal, Host: c.Host, Operation: c.Operation, Permission: c.PermissionType},
			})
			validIdx = append(validIdx, i)
		}
	}
	if len(valid) > 0 {
		for j, err := range adm.CreateAcls(valid) {
			results[validIdx[j]].ErrorCode, results[validIdx[j]].ErrorMessage = aclErrorCode(err)
		}
	}
	resp.Results = results
	return resp, nil
}
