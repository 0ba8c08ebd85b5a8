package broker

// 50_describe_user_scram_credentials.go — DescribeUserScramCredentials v0
// (KafkaApis.handleDescribeUserScramCredentialsRequest, ZkAdminManager.describeUserScramCredentials).
// Any broker answers from ZooKeeper: with no users (null or empty) every user that has a
// SCRAM credential, sorted by name; otherwise each distinct requested user in request
// order, an empty name or a user without credentials being RESOURCE_NOT_FOUND and a name
// given twice DUPLICATE_RESOURCE. Only mechanisms and iterations are reported, never keys.
// Needs DESCRIBE on the cluster. Deviations: none.

import (
	"context"
	"sort"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/security/scramcred"
	"github.com/samsa-kafka/samsa/zkmeta"
)

func init() { registerAPI(0, 0, (*APIs).handleDescribeUserScramCredentials) }

// Messages of ZkAdminManager.
const (
	msgUsernameMustNotBeEmpty       = "Username must not be empty"
	msgDescribeUserThatDoesNotExist = "Attempt to describe a user credential that does not exist"
)

func (a *APIs) handleDescribeUserScramCredentials(ctx context.Context, rc *RequestContext, req *kmsg.DescribeUserSCRAMCredentialsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	// DescribeUserScramCredentialsRequest.getErrorResponse: the error at the top and once per
	// requested user (with an empty user name, as Kafka leaves it).
	fail := func(code int16, msg *string) kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		for range req.Users {
			r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			r.ErrorCode, r.ErrorMessage = code, msg
			resp.Results = append(resp.Results, r)
		}
		return resp
	}
	if !a.authorizeCluster(rc, kmsg.ACLOperationDescribe) {
		return fail(kerr.ClusterAuthorizationFailed.Code, nil), nil
	}
	ad := a.admin()
	if ad == nil || ad.zk == nil {
		return fail(kerr.UnknownServerError.Code, kmsg.StringPtr(kerr.UnknownServerError.Description)), nil
	}
	log := ad.log.WithField("api", "DescribeUserScramCredentials")

	// describeResult is addToResultsIfHasScramCredential: ok=false when the user has no
	// SCRAM credential.
	describeResult := func(user string, cfg map[string]string) (kmsg.DescribeUserSCRAMCredentialsResponseResult, bool) {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = user
		has := false
		for _, m := range scramcred.Mechanisms() {
			if _, ok := cfg[m]; ok {
				has = true
			}
		}
		if !has {
			return r, false
		}
		infos := []kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
		for _, m := range scramcred.Mechanisms() {
			v, ok := cfg[m]
			if !ok {
				continue
			}
			cred, err := scramcred.Parse(v)
			if err != nil {
				// Bad data in ZooKeeper: Kafka reports the user as failed (an unexpected error).
				log.WithError(err).WithFields(logrus.Fields{"user": user, "mechanism": m}).
					Error("error processing describe user SCRAM credential configs request")
				r.ErrorCode, r.CredentialInfos = kerr.UnknownServerError.Code, nil
				return r, true
			}
			ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			ci.Mechanism, ci.Iterations = scramMechanismType(m), int32(cred.Iterations)
			infos = append(infos, ci)
		}
		r.CredentialInfos = infos
		return r, true
	}

	if len(req.Users) == 0 {
		all, err := ad.zk.GetAllUserConfigs()
		if err != nil {
			log.WithError(err).Error("error processing describe user SCRAM credential configs request")
			return fail(kerr.UnknownServerError.Code, kmsg.StringPtr(kerr.UnknownServerError.Description)), nil
		}
		var results []kmsg.DescribeUserSCRAMCredentialsResponseResult
		for sanitized, cfg := range all {
			user, err := zkmeta.DesanitizeUser(sanitized)
			if err != nil {
				log.WithError(err).Error("error processing describe user SCRAM credential configs request")
				return fail(kerr.UnknownServerError.Code, kmsg.StringPtr(kerr.UnknownServerError.Description)), nil
			}
			if r, ok := describeResult(user, cfg); ok {
				results = append(results, r)
			}
		}
		sort.Slice(results, func(i, j int) bool { return results[i].User < results[j].User })
		resp.Results = results
		return resp, nil
	}

	count := map[string]int{}
	for _, u := range req.Users {
		count[u.Name]++
	}
	done := map[string]bool{}
	for _, u := range req.Users {
		user := u.Name
		if done[user] {
			continue // one result per distinct user
		}
		done[user] = true
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = user
		switch {
		case user == "":
			r.ErrorCode, r.ErrorMessage = kerr.ResourceNotFound.Code, kmsg.StringPtr(msgUsernameMustNotBeEmpty)
		case count[user] > 1:
			r.ErrorCode = kerr.DuplicateResource.Code
			r.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + user)
		default:
			cfg, err := ad.zk.GetUserConfig(user)
			if err != nil {
				log.WithError(err).WithField("user", user).Error("error processing describe user SCRAM credential configs request")
				r.ErrorCode = kerr.UnknownServerError.Code
				break
			}
			if dr, ok := describeResult(user, cfg); ok {
				r = dr
			} else {
				r.ErrorCode = kerr.ResourceNotFound.Code
				r.ErrorMessage = kmsg.StringPtr(msgDescribeUserThatDoesNotExist + ": " + user)
			}
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}
