package broker

// 51_alter_user_scram_credentials.go — AlterUserScramCredentials v0
// (KafkaApis.handleAlterUserScramCredentialsRequest, ZkAdminManager.alterUserScramCredentials).
// In ZooKeeper mode only the active controller serves it (others answer NOT_CONTROLLER and
// clients retry there); it needs ALTER on the cluster. The client sends the salt and the
// salted password, never the password; the broker derives stored and server keys
// (ScramFormatter.generateCredential) and writes /config/users/<user> with a change
// notification, which every broker's credential cache follows (scram_credentials.go).
// Per user, in Kafka's order of checks: an empty name → UNACCEPTABLE_CREDENTIAL; an unknown
// mechanism → UNSUPPORTED_SASL_MECHANISM; iterations outside [4096, 16384] →
// UNACCEPTABLE_CREDENTIAL; the same (user, mechanism) twice → DUPLICATE_RESOURCE; deleting a
// credential the user does not have → RESOURCE_NOT_FOUND. A failing user does not stop the
// others. Deviation: results come grouped by outcome and sorted by user within each group
// (Kafka's order there follows Scala hash maps, i.e. is unspecified).

import (
	"context"
	"errors"
	"sort"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/security/scramcred"
)

func init() { registerAPI(0, 0, (*APIs).handleAlterUserScramCredentials) }

// Messages of ZkAdminManager.alterUserScramCredentials.
const (
	msgUnknownScramMechanism   = "Unknown SCRAM mechanism"
	msgTooFewIterations        = "Too few iterations"
	msgTooManyIterations       = "Too many iterations"
	msgAlteredTwice            = "A user credential cannot be altered twice in the same request"
	msgDeleteCredentialMissing = "Attempt to delete a user credential that does not exist"
)

func (a *APIs) handleAlterUserScramCredentials(ctx context.Context, rc *RequestContext, req *kmsg.AlterUserSCRAMCredentialsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	ad := a.admin()
	switch {
	case !ad.isController():
		return alterScramErrorResponse(resp, req, kerr.NotController.Code), nil
	case !a.authorizeCluster(rc, kmsg.ACLOperationAlter):
		return alterScramErrorResponse(resp, req, kerr.ClusterAuthorizationFailed.Code), nil
	}
	log := ad.log.WithField("api", "AlterUserScramCredentials")
	add := func(user string, code int16, msg *string) {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User, r.ErrorCode, r.ErrorMessage = user, code, msg
		resp.Results = append(resp.Results, r)
	}

	// Illegal requests: the deletions' verdicts first, an upsertion's overriding a
	// deletion's for the same user, as Kafka builds its map.
	illegal := map[string]string{}
	for _, d := range req.Deletions {
		switch {
		case d.Name == "":
			illegal[d.Name] = msgUsernameMustNotBeEmpty
		case scramMechanismName(d.Mechanism) == "":
			illegal[d.Name] = msgUnknownScramMechanism
		}
	}
	for _, u := range req.Upsertions {
		switch {
		case u.Name == "":
			illegal[u.Name] = msgUsernameMustNotBeEmpty
		case scramMechanismName(u.Mechanism) == "":
			illegal[u.Name] = msgUnknownScramMechanism
		case u.Iterations > scramcred.MaxIterations:
			illegal[u.Name] = msgTooManyIterations
		case u.Iterations < scramcred.MinIterations:
			illegal[u.Name] = msgTooFewIterations
		}
	}
	for _, user := range sortedStringKeys(illegal) {
		code := kerr.UnacceptableCredential.Code
		if illegal[user] == msgUnknownScramMechanism {
			code = kerr.UnsupportedSaslMechanism.Code
		}
		add(user, code, kmsg.StringPtr(illegal[user]))
	}

	// A (user, mechanism) pair altered twice fails the user.
	type pair struct {
		user string
		mech int8
	}
	pairs := map[pair]int{}
	for _, u := range req.Upsertions {
		if _, bad := illegal[u.Name]; !bad {
			pairs[pair{u.Name, u.Mechanism}]++
		}
	}
	for _, d := range req.Deletions {
		if _, bad := illegal[d.Name]; !bad {
			pairs[pair{d.Name, d.Mechanism}]++
		}
	}
	duplicated := map[string]bool{}
	for p, n := range pairs {
		if n > 1 {
			duplicated[p.user] = true
		}
	}
	for _, user := range sortedStringKeys(duplicated) {
		add(user, kerr.DuplicateResource.Code, kmsg.StringPtr(msgAlteredTwice))
	}
	candidates := map[string]map[string]string{} // user → its current config
	for p := range pairs {
		if !duplicated[p.user] {
			candidates[p.user] = nil
		}
	}
	for _, user := range sortedStringKeys(candidates) {
		cfg, err := ad.zk.GetUserConfig(user)
		if err != nil {
			// Kafka lets this escape to KafkaApis, which fails the whole request.
			log.WithError(err).WithField("user", user).Error("error reading user configs")
			resp.Results = nil
			return alterScramErrorResponse(resp, req, kerr.UnknownServerError.Code), nil
		}
		candidates[user] = cfg
	}

	// Deleting a credential that does not exist fails the user.
	missing := map[string]bool{}
	for _, d := range req.Deletions {
		if cfg, ok := candidates[d.Name]; ok {
			if _, has := cfg[scramMechanismName(d.Mechanism)]; !has {
				missing[d.Name] = true
			}
		}
	}
	for _, user := range sortedStringKeys(missing) {
		add(user, kerr.ResourceNotFound.Code, kmsg.StringPtr(msgDeleteCredentialMissing))
	}

	// Prepare the new configs, then persist them, user by user.
	failed := map[string]error{}
	var succeeded []string
	for _, user := range sortedStringKeys(candidates) {
		if missing[user] {
			continue
		}
		cfg := candidates[user]
		for _, d := range req.Deletions {
			if d.Name == user {
				delete(cfg, scramMechanismName(d.Mechanism))
			}
		}
		var err error
		for _, u := range req.Upsertions {
			if u.Name != user {
				continue
			}
			var cred scramcred.Credential
			if cred, err = upsertionCredential(u); err != nil {
				break
			}
			cfg[scramMechanismName(u.Mechanism)] = cred.String()
		}
		if err == nil {
			_, err = ad.zk.SetUserConfig(user, cfg)
		}
		if err != nil {
			log.WithError(err).WithField("user", user).Info("error encountered while altering user SCRAM credentials")
			failed[user] = err
			continue
		}
		succeeded = append(succeeded, user)
	}
	for _, user := range sortedStringKeys(failed) {
		add(user, kerr.UnknownServerError.Code, kmsg.StringPtr(kerr.UnknownServerError.Description))
	}
	for _, user := range succeeded {
		add(user, 0, nil)
	}
	log.WithFields(logrus.Fields{"altered": len(succeeded), "results": len(resp.Results)}).Info("altered user SCRAM credentials")
	return resp, nil
}

// upsertionCredential is ScramFormatter.generateCredential(salt, saltedPassword,
// iterations). An empty salted password is refused as Java's HMAC refuses an empty key.
func upsertionCredential(u kmsg.AlterUserSCRAMCredentialsRequestUpsertion) (scramcred.Credential, error) {
	if len(u.SaltedPassword) == 0 {
		return scramcred.Credential{}, errEmptySaltedPassword
	}
	return scramcred.FromSaltedPassword(scramMechanismName(u.Mechanism), u.Salt, u.SaltedPassword, int(u.Iterations))
}

var errEmptySaltedPassword = errors.New("empty salted password")

// alterScramErrorResponse is AlterUserScramCredentialsRequest.getErrorResponse: one result
// per distinct user of the request, sorted, each with the error.
func alterScramErrorResponse(resp *kmsg.AlterUserSCRAMCredentialsResponse, req *kmsg.AlterUserSCRAMCredentialsRequest, code int16) kmsg.Response {
	users := map[string]bool{}
	for _, d := range req.Deletions {
		users[d.Name] = true
	}
	for _, u := range req.Upsertions {
		users[u.Name] = true
	}
	for _, user := range sortedStringKeys(users) {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User, r.ErrorCode = user, code
		resp.Results = append(resp.Results, r)
	}
	return resp
}

// sortedStringKeys returns a map's keys in order.
func sortedStringKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
