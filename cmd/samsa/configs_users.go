package main

// configs_users.go is the users entity of samsa configs, as ConfigCommand does it with
// --bootstrap-server: SCRAM credentials only (samsa has no client quotas).
//
//	--alter --entity-type users --entity-name alice
//	    --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=pw]'
//	    --delete-config SCRAM-SHA-512
//	--describe --entity-type users [--entity-name alice]
//
// The password never leaves the tool: it sends a random salt and the salted password
// (Hi(password, salt, iterations)) in AlterUserScramCredentials, as Kafka's admin client
// does, and the controller derives the stored credential. Iterations default to 4096.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/security/scramcred"
)

// defaultScramIterations is ConfigCommand.DefaultScramIterations.
const defaultScramIterations = 4096

// userQuotaConfigs are QuotaConfigs' client and user quota keys: accepted by Kafka for
// users, refused here because samsa enforces no quotas.
var userQuotaConfigs = map[string]bool{
	"producer_byte_rate": true, "consumer_byte_rate": true, "request_percentage": true, "controller_mutation_rate": true,
}

// configKeyPattern is ConfigCommand.validatePropsKey's rule for added keys.
var configKeyPattern = regexp.MustCompile(`^[a-zA-Z0-9._-]*$`)

// scramCredentialPattern is the value syntax of a SCRAM key in --add-config (brackets already
// removed): an optional iterations, then the password (everything after "password=").
var scramCredentialPattern = regexp.MustCompile(`^(?:iterations=(-?[0-9]*),)?password=(.*)$`)

// scalaSet and scalaList print names as the Scala collections in Kafka's messages do.
func scalaSet(names []string) string  { return "Set(" + strings.Join(names, ", ") + ")" }
func scalaList(names []string) string { return "List(" + strings.Join(names, ", ") + ")" }

// userAlterations turns the parsed --add-config / --delete-config into the request, with
// ConfigCommand.alterConfig's and alterUserScramCredentialConfigs' checks.
func userAlterations(user string, entityDefault bool, add map[string]string, del []string) (*kmsg.AlterUserSCRAMCredentialsRequest, error) {
	addKeys := make([]string, 0, len(add))
	for k := range add {
		addKeys = append(addKeys, k)
	}
	sort.Strings(addKeys)
	for _, k := range addKeys {
		if !configKeyPattern.MatchString(k) {
			return nil, fmt.Errorf("Invalid character found for config key: %s", k)
		}
	}
	var unknownAdd, quotaKeys, unknownDel []string
	for _, k := range addKeys {
		switch {
		case scramcred.IsMechanism(k):
		case userQuotaConfigs[k]:
			quotaKeys = append(quotaKeys, k)
		default:
			unknownAdd = append(unknownAdd, k)
		}
	}
	for _, k := range del {
		switch {
		case scramcred.IsMechanism(k):
		case userQuotaConfigs[k]:
			quotaKeys = append(quotaKeys, k)
		default:
			unknownDel = append(unknownDel, k)
		}
	}
	if len(unknownAdd) > 0 {
		return nil, fmt.Errorf("Only quota and SCRAM credential configs can be added for 'users' using --bootstrap-server. Unexpected config names: %s", scalaSet(unknownAdd))
	}
	if len(unknownDel) > 0 {
		return nil, fmt.Errorf("Only quota and SCRAM credential configs can be deleted for 'users' using --bootstrap-server. Unexpected config names: %s", scalaList(unknownDel))
	}
	if len(quotaKeys) > 0 {
		return nil, fmt.Errorf("samsa does not support client quotas: %s cannot be set or deleted", strings.Join(quotaKeys, ", "))
	}
	if entityDefault || user == "" {
		return nil, errors.New("The use of --entity-default or --user-defaults is not allowed with User SCRAM Credentials using --bootstrap-server.")
	}

	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	for _, k := range del {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = user, scramMechanismType(k)
		req.Deletions = append(req.Deletions, d)
	}
	for _, k := range addKeys {
		m := scramCredentialPattern.FindStringSubmatch(add[k])
		if m == nil {
			return nil, fmt.Errorf("Invalid credential property %s=%s", k, add[k])
		}
		iterations := defaultScramIterations
		if m[1] != "" && m[1] != "-1" {
			n, err := strconv.ParseInt(m[1], 10, 32)
			if err != nil {
				return nil, fmt.Errorf("For input string: %q", m[1])
			}
			iterations = int(n)
		} else if strings.HasPrefix(add[k], "iterations=,") {
			return nil, fmt.Errorf("For input string: %q", "")
		}
		if iterations < scramcred.MinIterations {
			return nil, fmt.Errorf("Iterations %d is less than the minimum %d required for %s", iterations, scramcred.MinIterations, k)
		}
		password := m[2]
		if password == "" {
			return nil, errors.New("Password must not be empty") // the admin client's check
		}
		salt, err := scramSalt()
		if err != nil {
			return nil, err
		}
		salted, err := scramcred.SaltedPassword(k, password, salt, iterations)
		if err != nil {
			return nil, err
		}
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = user, scramMechanismType(k), int32(iterations), salt, salted
		req.Upsertions = append(req.Upsertions, u)
	}
	return req, nil
}

// scramSalt is ScramFormatter.secureRandomBytes: the UTF-8 form of a random 130-bit number
// in base 36, the salt Kafka's admin client sends.
func scramSalt() ([]byte, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 130))
	if err != nil {
		return nil, fmt.Errorf("generate SCRAM salt: %w", err)
	}
	return []byte(n.Text(36)), nil
}

// scramMechanismType is ScramMechanism.type (0 = UNKNOWN).
func scramMechanismType(name string) int8 {
	switch name {
	case scramcred.SHA256:
		return 1
	case scramcred.SHA512:
		return 2
	}
	return 0
}

func scramMechanismName(t int8) string {
	switch t {
	case 1:
		return scramcred.SHA256
	case 2:
		return scramcred.SHA512
	}
	return "UNKNOWN"
}

func usersAlter(ctx context.Context, cl *kgo.Client, o *configsOpts, stdout io.Writer) error {
	add, del, err := o.alterations()
	if err != nil {
		return err
	}
	req, err := userAlterations(o.entityName.v, o.entityDefault, add, del)
	if err != nil {
		return err
	}
	resp, err := cl.Request(ctx, req) // kgo sends it to the controller, as the admin client does
	if err != nil {
		return err
	}
	for _, r := range resp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
		if err := kafkaErr(r.ErrorCode, r.ErrorMessage); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "Completed updating config for user %s.\n", o.entityName.v)
	return nil
}

// usersDescribe is describeClientQuotaAndUserScramCredentialConfigs without quotas: the
// SCRAM credentials of the named user, or of every user that has some. A named user without
// credentials prints nothing, as kafka-configs.sh.
func usersDescribe(ctx context.Context, cl *kgo.Client, o *configsOpts, stdout io.Writer) error {
	if o.entityDefault {
		return nil // only quotas exist for the default user, and samsa has none
	}
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	if o.entityName.set {
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = o.entityName.v
		req.Users = append(req.Users, u)
	}
	r, err := cl.Request(ctx, req)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if err := kafkaErr(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return err
	}
	for _, res := range resp.Results {
		if res.ErrorCode == kerr.ResourceNotFound.Code {
			continue
		}
		if res.ErrorCode != 0 {
			fmt.Fprintf(stdout, "Error retrieving SCRAM credential configs for user-principal '%s': %s\n", res.User, javaErrorText(res.ErrorCode, res.ErrorMessage))
			continue
		}
		infos := make([]string, 0, len(res.CredentialInfos))
		for _, ci := range res.CredentialInfos {
			infos = append(infos, fmt.Sprintf("%s=iterations=%d", scramMechanismName(ci.Mechanism), ci.Iterations))
		}
		fmt.Fprintf(stdout, "SCRAM credential configs for user-principal '%s' are %s\n", res.User, strings.Join(infos, ", "))
	}
	return nil
}

// javaErrorText is "<ExceptionSimpleName>: <message>" as kafka-configs.sh prints a failed
// description, the message defaulting to the error's description.
func javaErrorText(code int16, msg *string) string {
	name := "ApiException"
	text := ""
	if e := kerr.ErrorForCode(code); e != nil {
		var ke *kerr.Error
		if errors.As(e, &ke) {
			name, text = scramErrExceptionName(ke.Message), ke.Description
		}
	}
	if msg != nil && *msg != "" {
		text = *msg
	}
	return name + ": " + text
}

// scramErrExceptionName maps an error name such as UNKNOWN_SERVER_ERROR to Kafka's exception
// class name for the errors a description can carry.
func scramErrExceptionName(errName string) string {
	switch errName {
	case "UNKNOWN_SERVER_ERROR":
		return "UnknownServerException"
	case "DUPLICATE_RESOURCE":
		return "DuplicateResourceException"
	case "RESOURCE_NOT_FOUND":
		return "ResourceNotFoundException"
	}
	var b strings.Builder
	for _, part := range strings.Split(strings.ToLower(errName), "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String() + "Exception"
}
