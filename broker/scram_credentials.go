package broker

// scram_credentials.go mirrors kafka.security.CredentialProvider and its CredentialCache:
// the SCRAM credentials of every user, read from /config/users/<user> at start-up (before
// the listeners serve, as ZkConfigManager.startup bootstraps the UserConfigHandler) and
// kept current by the config change listener (config_handler.go), which calls
// userConfigChanged for each users/<user> notification. SASL/SCRAM authentication reads it
// through sasl.CredentialStore; the admin APIs 50 and 51 go to ZooKeeper instead, as
// ZkAdminManager does.
// Deviation: a stored credential that does not parse is dropped from the cache (and
// logged) rather than keeping whatever was cached before, so a damaged znode cannot leave
// an outdated password working.

import (
	"strings"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/security/sasl"
	"github.com/samsa-kafka/samsa/internal/security/scramcred"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// scramCredentialCache is safe for concurrent use: SASL sessions read it from connection
// goroutines while the config change listener updates it.
type scramCredentialCache struct {
	zk  *zkmeta.Client
	log *logrus.Entry

	mu sync.RWMutex
	// creds: mechanism → user (desanitized) → credential.
	creds map[string]map[string]scramcred.Credential
}

var _ sasl.CredentialStore = (*scramCredentialCache)(nil)

// newScramCredentialCache returns an empty cache for both SCRAM mechanisms (KafkaServer
// builds its CredentialProvider with every ScramMechanism, enabled or not). Call load
// before the listeners serve.
func newScramCredentialCache(zk *zkmeta.Client, log *logrus.Entry) *scramCredentialCache {
	c := &scramCredentialCache{zk: zk, log: log, creds: map[string]map[string]scramcred.Credential{}}
	for _, m := range scramcred.Mechanisms() {
		c.creds[m] = map[string]scramcred.Credential{}
	}
	return c
}

// ScramCredential implements sasl.CredentialStore.
func (c *scramCredentialCache) ScramCredential(mechanism, user string) (scramcred.Credential, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	cred, ok := c.creds[mechanism][user]
	return cred, ok
}

// load reads every user's credentials (ZkConfigManager.startup for the users entity type).
// An error here stops start-up: serving SCRAM from an unknown state would refuse users
// whose credentials exist.
func (c *scramCredentialCache) load() error {
	all, err := c.zk.GetAllUserConfigs()
	if err != nil {
		return err // already says what it read; Broker.Start adds "load SCRAM credentials"
	}
	for sanitized, cfg := range all {
		if sanitized == zkmeta.ConfigEntityDefault {
			continue
		}
		user, err := zkmeta.DesanitizeUser(sanitized)
		if err != nil {
			c.log.WithError(err).WithField("zk_path", zkmeta.ConfigEntityPath(zkmeta.ConfigTypeUser, sanitized)).
				Warn("ignoring user config znode whose name is not a sanitized user name")
			continue
		}
		c.updateCredentials(user, cfg)
	}
	c.log.WithField("users", len(all)).Info("loaded SCRAM credentials")
	return nil
}

// userConfigChanged is UserConfigHandler.processConfigChanges for the entity path after
// "users/": "<sanitized user>" re-reads that user's credentials; "<user>/clients/<id>"
// (quotas) and the <default> user carry none and are ignored.
func (c *scramCredentialCache) userConfigChanged(entityPath string) error {
	if entityPath == "" || entityPath == zkmeta.ConfigEntityDefault || strings.Contains(entityPath, "/") {
		return nil
	}
	user, err := zkmeta.DesanitizeUser(entityPath)
	if err != nil {
		return err
	}
	cfg, err := c.zk.GetUserConfig(user)
	if err != nil {
		return err
	}
	c.updateCredentials(user, cfg)
	return nil
}

// updateCredentials is CredentialProvider.updateCredentials: for each mechanism, the
// user's credential is the config's value for that mechanism name, or none.
func (c *scramCredentialCache) updateCredentials(user string, cfg map[string]string) {
	parsed := map[string]scramcred.Credential{}
	for _, m := range scramcred.Mechanisms() {
		v, ok := cfg[m]
		if !ok {
			continue
		}
		cred, err := scramcred.Parse(v)
		if err != nil {
			c.log.WithError(err).WithFields(logrus.Fields{"user": user, "mechanism": m}).
				Error("stored SCRAM credential does not parse; the user cannot authenticate with this mechanism")
			continue
		}
		parsed[m] = cred
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range scramcred.Mechanisms() {
		if cred, ok := parsed[m]; ok {
			c.creds[m][user] = cred
		} else {
			delete(c.creds[m], user)
		}
	}
}

// ScramMechanism (org.apache.kafka.clients.admin.ScramMechanism) type ids on the wire.
const (
	scramMechanismUnknown int8 = 0
	scramMechanismSHA256  int8 = 1
	scramMechanismSHA512  int8 = 2
)

// scramMechanismName maps a wire type to its mechanism name; "" for UNKNOWN and anything
// else (ScramMechanism.fromType).
func scramMechanismName(t int8) string {
	switch t {
	case scramMechanismSHA256:
		return scramcred.SHA256
	case scramMechanismSHA512:
		return scramcred.SHA512
	}
	return ""
}

// scramMechanismType is the inverse of scramMechanismName.
func scramMechanismType(name string) int8 {
	switch name {
	case scramcred.SHA256:
		return scramMechanismSHA256
	case scramcred.SHA512:
		return scramMechanismSHA512
	}
	return scramMechanismUnknown
}
