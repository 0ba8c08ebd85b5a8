package main

// configs_users.go is the SCRAM side of the users entity of samsa configs, as ConfigCommand
// does it with --bootstrap-server (users' quotas are in configs_quotas.go).
//
//	--alter --entity-type users --entity-name alice
//	    --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=pw]'
//	    --delete-config SCRAM-SHA-512
//	--describe --entity-type users [--entity-name alice]
//
// The password never leaves the tool: it sends a random salt and the salted password
// (Hi(password, salt, iterations)) in AlterUserScramCredentials, as Kafka's admin client
// does, and the controller derives the stored credential. Iterations default to 4096.
//
// With --zookeeper (runConfigsZk below) there is no broker: the tool derives the stored
// credential itself and writes it to /config/users/<user>, as ConfigCommand's ZooKeeper path.

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
	"time"
	"unicode/utf16"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/security/scramcred"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// defaultScramIterations is ConfigCommand.DefaultScramIterations.
const defaultScramIterations = 4096

// userQuotaConfigs are QuotaConfigs' client and user quota keys.
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
			return nil, argErr("Invalid character found for config key: %s", k)
		}
	}
	var unknownAdd, unknownDel []string
	hasQuota := false
	for _, k := range addKeys {
		switch {
		case scramcred.IsMechanism(k):
		case userQuotaConfigs[k]:
			hasQuota = true
		default:
			unknownAdd = append(unknownAdd, k)
		}
	}
	for _, k := range del {
		switch {
		case scramcred.IsMechanism(k):
		case userQuotaConfigs[k]:
			hasQuota = true
		default:
			unknownDel = append(unknownDel, k)
		}
	}
	if len(unknownAdd) > 0 {
		return nil, argErr("Only quota and SCRAM credential configs can be added for 'users' using --bootstrap-server. Unexpected config names: %s", scalaSet(unknownAdd))
	}
	if len(unknownDel) > 0 {
		return nil, argErr("Only quota and SCRAM credential configs can be deleted for 'users' using --bootstrap-server. Unexpected config names: %s", scalaArrayBuffer(unknownDel))
	}
	if entityDefault || user == "" {
		return nil, argErr("The use of --entity-default or --user-defaults is not allowed with User SCRAM Credentials using --bootstrap-server.")
	}
	if hasQuota {
		return nil, argErr("Cannot alter both quota and SCRAM credential configs simultaneously for 'users' using --bootstrap-server.")
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
			return nil, argErr("Invalid credential property %s=%s", strings.ReplaceAll(k, "-", "_"), add[k])
		}
		iterations := defaultScramIterations
		if m[1] != "" && m[1] != "-1" {
			n, err := strconv.ParseInt(m[1], 10, 32)
			if err != nil {
				return nil, argErr("For input string: %q", m[1])
			}
			iterations = int(n)
		} else if strings.HasPrefix(add[k], "iterations=,") {
			return nil, argErr("For input string: %q", "")
		}
		if iterations < scramcred.MinIterations {
			return nil, argErr("Iterations %d is less than the minimum %d required for %s", iterations, scramcred.MinIterations, k)
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

// alterUserScram is alterUserScramCredentialConfigs.
func alterUserScram(ctx context.Context, cl *kgo.Client, user string, add map[string]string, del []string) error {
	req, err := userAlterations(user, false, add, del)
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
	return nil
}

// usersDescribeScram is the SCRAM half of describeClientQuotaAndUserScramCredentialConfigs:
// the credentials of the named users, or of every user that has some. A named user without
// credentials prints nothing, as kafka-configs.sh.
func usersDescribeScram(ctx context.Context, cl *kgo.Client, users []string, stdout io.Writer) error {
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, name := range users {
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = name
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

// errConfigInvalid marks the ZooKeeper path's argument errors, which Kafka prints as the bare
// message (IllegalArgumentException, InvalidConfigurationException) rather than as a failed
// command.
var errConfigInvalid = errors.New("invalid config command")

func configInvalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errConfigInvalid, fmt.Sprintf(format, a...))
}

// runConfigsZk is ConfigCommand.processCommandWithZk for users: credentials are derived here
// and written to /config/users/<user> with a change notification, so brokers that run pick
// them up and brokers that start later load them.
func runConfigsZk(o *configsOpts, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stdout, "Warning: --zookeeper is deprecated and will be removed in a future version of Kafka.")
	fmt.Fprintln(stdout, "Use --bootstrap-server instead to specify a broker to connect to.")
	err := configsZk(o, stdout, stderr)
	var ae *argError
	if errors.As(err, &ae) {
		fmt.Fprintln(stderr, ae.msg)
		return 1
	}
	if errors.Is(err, errConfigInvalid) {
		fmt.Fprintln(stderr, strings.TrimPrefix(err.Error(), errConfigInvalid.Error()+": "))
		return 1
	}
	if err != nil {
		fmt.Fprintln(stderr, "Error while executing config command with args '"+strings.Join(args, " ")+"'\n"+err.Error())
		return 1
	}
	return 0
}

func configsZk(o *configsOpts, stdout, stderr io.Writer) error {
	if o.entityTypes()[0] == entityBrokers {
		return configsZkBrokers(o, stdout, stderr)
	}
	// Everything is checked before connecting, so a bad argument costs no ZooKeeper session.
	var prepared *zkUserAlteration
	if o.alter.set {
		var err error
		if prepared, err = prepareZkUserAlteration(o); err != nil {
			return err
		}
	}
	zk, err := connectConfigsZk(o, stderr)
	if err != nil {
		return err
	}
	defer zk.Close()
	if o.alter.set {
		return prepared.apply(zk, stdout)
	}
	return usersDescribeZk(zk, o, stdout)
}

// connectConfigsZk opens ConfigCommand's KafkaZkClient: 30 s session and connection timeouts.
func connectConfigsZk(o *configsOpts, stderr io.Writer) (*zkmeta.Client, error) {
	sec, err := configsZkSecurity(o.zkTLSConfigFile)
	if err != nil {
		return nil, err
	}
	log := logrus.New()
	log.SetOutput(stderr)
	log.SetLevel(logrus.WarnLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	zk, err := zkmeta.ConnectSecure(ctx, o.zookeeper.v, 30*time.Second, logrus.NewEntry(log), sec)
	if err != nil {
		return nil, fmt.Errorf("connect to ZooKeeper %s: %w", o.zookeeper.v, err)
	}
	return zk, nil
}

// configsZkSecurity reads --zk-tls-config-file as Kafka does (only the ZooKeeper client keys;
// zookeeper.set.acl is ignored). New znodes get Kafka's secure ACLs when the session has an
// identity, as KafkaZkClient's isSecure is SASL or TLS client authentication.
func configsZkSecurity(file optString) (zkmeta.Security, error) {
	props := map[string]string{}
	if file.set {
		all, err := loadPropsFile(file.v)
		if err != nil {
			return zkmeta.Security{}, fmt.Errorf("read --zk-tls-config-file: %w", err)
		}
		for k, v := range all {
			if strings.HasPrefix(k, "zookeeper.ssl.") || k == "zookeeper.clientCnxnSocket" || k == zkmeta.DigestKey {
				props[k] = v
			}
		}
	}
	sec, err := zkmeta.SecurityFromProps(props)
	if err != nil {
		return zkmeta.Security{}, fmt.Errorf("--zk-tls-config-file %s: %w", file.v, err)
	}
	hasCert := sec.TLS != nil && (len(sec.TLS.Certificates) > 0 || sec.TLS.GetClientCertificate != nil)
	sec.SecureACLs = sec.Digest != "" || hasCert
	return sec, nil
}

// zkScramPattern is preProcessScramCredentials' pattern: unlike the admin path, no sign is
// allowed in the iterations.
var zkScramPattern = regexp.MustCompile(`^(?:iterations=([0-9]*),)?password=(.*)$`)

// zkUserAlteration is a validated --alter: the stored forms of the added credentials and the
// mechanisms to delete.
type zkUserAlteration struct {
	user      string // as given; "" for the default user
	sanitized string
	add       map[string]string
	del       []string
}

// prepareZkUserAlteration is alterConfigWithZk up to reading the znode, with its checks in its
// order: the keys' characters, SCRAM keys only, then each credential (SHA-256 first).
func prepareZkUserAlteration(o *configsOpts) (*zkUserAlteration, error) {
	add, del, err := o.alterations()
	if err != nil {
		return nil, configInvalid("%s", err.Error())
	}
	addKeys := make([]string, 0, len(add))
	for k := range add {
		addKeys = append(addKeys, k)
	}
	sort.Strings(addKeys)
	for _, k := range addKeys {
		if !configKeyPattern.MatchString(k) {
			return nil, configInvalid("Invalid character found for config key: %s", k)
		}
	}
	user := o.entityNames()[0]
	a := &zkUserAlteration{user: user, add: map[string]string{}, del: del}
	if user == "" {
		a.sanitized = zkmeta.ConfigEntityDefault
	} else {
		a.sanitized = zkmeta.SanitizeUser(user)
	}
	scramOnly := true
	for _, k := range addKeys {
		scramOnly = scramOnly && scramcred.IsMechanism(k)
	}
	for _, k := range del {
		scramOnly = scramOnly && scramcred.IsMechanism(k)
	}
	if !scramOnly {
		// Kafka prints the Properties and the Scala Seq as they are, passwords included.
		delText := "List()"
		if len(o.deleteConfig) > 0 {
			delText = "ArrayBuffer(" + strings.Join(del, ", ") + ")"
		}
		return nil, configInvalid("requirement failed: --bootstrap-server option must be specified to update users configs: {add: %s, delete: %s}. "+
			"User configuration updates using ZooKeeper are only supported for SCRAM credential updates.", javaPropsString(add), delText)
	}
	for _, mech := range scramcred.Mechanisms() {
		v, ok := add[mech]
		if !ok {
			continue
		}
		cred, err := zkScramCredential(mech, v)
		if err != nil {
			return nil, err
		}
		a.add[mech] = cred
	}
	return a, nil
}

// zkScramCredential is preProcessScramCredentials.scramCredential: the credential derived
// from "[iterations=n,]password=pw" in its stored form. Kafka names the mechanism by its
// enum constant (SCRAM_SHA_256) in these messages, and sets no upper bound on iterations.
func zkScramCredential(mech, value string) (string, error) {
	enumName := strings.ReplaceAll(mech, "-", "_")
	m := zkScramPattern.FindStringSubmatchIndex(value)
	if m == nil {
		return "", configInvalid("Invalid credential property %s=%s", enumName, value)
	}
	iterations := defaultScramIterations
	if m[2] >= 0 {
		s := value[m[2]:m[3]]
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return "", configInvalid("For input string: %q", s)
		}
		iterations = int(n)
	}
	if iterations < scramcred.MinIterations {
		return "", configInvalid("Iterations %d is less than the minimum %d required for %s", iterations, scramcred.MinIterations, enumName)
	}
	password := value[m[4]:m[5]]
	salt, err := scramSalt()
	if err != nil {
		return "", err
	}
	salted, err := scramcred.SaltedPassword(mech, password, salt, iterations)
	if err != nil {
		return "", fmt.Errorf("derive %s credential: %w", mech, err)
	}
	cred, err := scramcred.FromSaltedPassword(mech, salt, salted, iterations)
	if err != nil {
		return "", fmt.Errorf("derive %s credential: %w", mech, err)
	}
	return cred.String(), nil
}

// apply is the rest of alterConfigWithZk: deleted keys must be set, then the merged config
// is written with its change notification (AdminZkClient.changeUserOrUserClientIdConfig).
func (a *zkUserAlteration) apply(zk *zkmeta.Client, stdout io.Writer) error {
	cfg, err := zk.GetEntityConfig(zkmeta.ConfigTypeUser, a.sanitized)
	if err != nil {
		return fmt.Errorf("read config of %s: %w", zkUserEntity(a.sanitized), err)
	}
	var invalid []string
	for _, k := range a.del {
		if _, ok := cfg[k]; !ok {
			invalid = append(invalid, k)
		}
	}
	if len(invalid) > 0 {
		return configInvalid("Invalid config(s): %s", strings.Join(invalid, ","))
	}
	if a.sanitized == zkmeta.ConfigEntityDefault {
		// Kafka refuses SCRAM keys for <default> (client quota keys only) in
		// DynamicConfig.Client.validate; samsa has no quotas to write there either.
		return configInvalid("SCRAM credentials cannot be set for the default user (--entity-default): " +
			"its config holds only client quotas, which samsa does not support")
	}
	for k, v := range a.add {
		cfg[k] = v
	}
	for _, k := range a.del {
		delete(cfg, k)
	}
	if _, err := zk.SetUserConfig(a.user, cfg); err != nil {
		return err // SetUserConfig names the user and the step
	}
	fmt.Fprintf(stdout, "Completed updating config for entity: %s.\n", zkUserEntity(a.sanitized))
	return nil
}

// usersDescribeZk is describeConfigWithZk for users: the named (or default) user even without
// configs, or every user znode that has some, as "Configs for <entity> are k=v,k2=v2".
func usersDescribeZk(zk *zkmeta.Client, o *configsOpts, stdout io.Writer) error {
	var names []string
	given := o.entityNames()
	all := len(given) == 0
	configs := map[string]map[string]string{}
	switch {
	case all:
		var err error
		if configs, err = zk.GetAllUserConfigs(); err != nil {
			return err
		}
		for n := range configs {
			names = append(names, n)
		}
		sort.Strings(names) // ZooKeeper lists children in no particular order
	case given[0] == "":
		names = []string{zkmeta.ConfigEntityDefault}
	default:
		names = []string{zkmeta.SanitizeUser(given[0])}
	}
	for _, n := range names {
		cfg, ok := configs[n]
		if !ok {
			var err error
			if cfg, err = zk.GetEntityConfig(zkmeta.ConfigTypeUser, n); err != nil {
				return fmt.Errorf("read config of %s: %w", zkUserEntity(n), err)
			}
		}
		if all && len(cfg) == 0 {
			continue // a user znode with only <user, client> quotas
		}
		pairs := make([]string, 0, len(cfg))
		for _, k := range javaPropsOrder(cfg) {
			pairs = append(pairs, k+"="+cfg[k])
		}
		fmt.Fprintf(stdout, "Configs for %s are %s\n", zkUserEntity(n), strings.Join(pairs, ","))
	}
	return nil
}

// zkUserEntity is ConfigCommand.Entity.toString for a user znode name.
func zkUserEntity(sanitized string) string {
	if sanitized == zkmeta.ConfigEntityDefault {
		return "default user-principal"
	}
	name, err := zkmeta.DesanitizeUser(sanitized)
	if err != nil {
		name = sanitized // only a znode Kafka did not write gets here; show it as stored
	}
	return "user-principal '" + name + "'"
}

// javaPropsOrder returns m's keys in the order a java.util.Properties holding them iterates:
// a ConcurrentHashMap of 16 buckets (doubled at three quarters full), walked by bucket, each
// key in bucket spread(String.hashCode) & (n-1). Kafka prints configs in that order. Keys
// sharing a bucket are left sorted (Java: insertion order).
func javaPropsOrder[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	n := uint32(16)
	for uint32(len(keys)) >= n-n/4 {
		n *= 2
	}
	bucket := func(k string) uint32 {
		var h int32
		for _, u := range utf16.Encode([]rune(k)) {
			h = 31*h + int32(u)
		}
		x := uint32(h)
		return (x ^ x>>16) & 0x7fffffff & (n - 1)
	}
	sort.SliceStable(keys, func(i, j int) bool { return bucket(keys[i]) < bucket(keys[j]) })
	return keys
}

// javaPropsString is Properties.toString: "{k=v, k2=v2}" in iteration order.
func javaPropsString(m map[string]string) string {
	pairs := make([]string, 0, len(m))
	for _, k := range javaPropsOrder(m) {
		pairs = append(pairs, k+"="+m[k])
	}
	return "{" + strings.Join(pairs, ", ") + "}"
}
