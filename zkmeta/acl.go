package zkmeta

// ZooKeeper security: TLS to the ensemble (Kafka's zookeeper.ssl.* settings, which Kafka hands
// to ZooKeeper's ClientX509Util), an authenticated identity (ZooKeeper digest auth, or the
// client certificate's x509 identity), and the znode ACLs of zookeeper.set.acl=true
// (ZkData.defaultAcls), plus ZkSecurityMigrator's recursive re-ACL of an existing tree.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/samsa-kafka/samsa/internal/security/tlsconf"
)

// DigestKey is samsa's key for the ZooKeeper digest identity ("user:password"). Kafka
// authenticates to ZooKeeper with SASL (a JAAS Client section), which go-zookeeper cannot
// speak; digest auth gives the broker an identity that ZooKeeper's CREATOR_ALL ACL names.
const DigestKey = "samsa.zookeeper.digest"

// authorizerPrefix is the AclAuthorizer's override prefix for its own ZooKeeper client
// (AclAuthorizer.configPrefix).
const authorizerPrefix = "authorizer."

// ErrNoAuth: ZooKeeper refused the operation for lack of permission (NOAUTH).
var ErrNoAuth = errors.New("zkmeta: not authorized by the znode's ACL")

// Security is how a Client secures its ZooKeeper session. The zero value is Kafka's default:
// plaintext, no identity, open ACLs.
type Security struct {
	// TLS, when set, wraps every connection to the ensemble (zookeeper.ssl.client.enable).
	// ServerName is filled per server from the connect string when empty.
	TLS *tls.Config
	// Digest is "user:password" for ZooKeeper digest auth ("" = none).
	Digest string
	// SecureACLs is zookeeper.set.acl: new znodes get ZkData.defaultAcls(isSecure = true).
	SecureACLs bool
}

// authenticated reports whether the session will carry an identity ZooKeeper's "auth" ACL
// scheme can name: a digest user or a TLS client certificate (x509).
func (s Security) authenticated() bool {
	return s.Digest != "" || (s.TLS != nil && (len(s.TLS.Certificates) > 0 || s.TLS.GetClientCertificate != nil))
}

// SecurityFromProps reads the broker's ZooKeeper security settings as KafkaServer's
// zkClientConfigFromKafkaConfig and KafkaZkClient.createZkClient do: the zookeeper.ssl.*
// keys when zookeeper.ssl.client.enable=true, zookeeper.set.acl, and samsa.zookeeper.digest.
// zookeeper.set.acl=true without an identity (a digest or a TLS key store) is refused, as
// Kafka refuses it without SASL or TLS client authentication.
func SecurityFromProps(props map[string]string) (Security, error) {
	return securityFrom(props, "")
}

// AuthorizerSecurityFromProps is SecurityFromProps for the AclAuthorizer's own client
// (authorizer.zookeeper.url): authorizer.zookeeper.ssl.* override zookeeper.ssl.*, and
// authorizer.zookeeper.ssl.client.enable switches TLS on or off for that client alone
// (AclAuthorizer.zkClientConfigFromKafkaConfigAndMap). zookeeper.set.acl is the broker's.
func AuthorizerSecurityFromProps(props map[string]string) (Security, error) {
	return securityFrom(props, authorizerPrefix)
}

func securityFrom(props map[string]string, prefix string) (Security, error) {
	get := func(key string) (string, bool) {
		if prefix != "" {
			if v, ok := props[prefix+key]; ok {
				return strings.TrimSpace(v), true
			}
		}
		v, ok := props[key]
		return strings.TrimSpace(v), ok
	}
	var sec Security
	sec.SecureACLs = strings.EqualFold(strings.TrimSpace(props["zookeeper.set.acl"]), "true")
	if d, ok := props[DigestKey]; ok && d != "" {
		user, _, found := strings.Cut(d, ":")
		if !found || user == "" {
			return Security{}, fmt.Errorf("invalid value for configuration %s: expected user:password", DigestKey)
		}
		sec.Digest = d
	}
	if enable, _ := get("zookeeper.ssl.client.enable"); strings.EqualFold(enable, "true") {
		cfg, err := zkTLSConfig(get)
		if err != nil {
			return Security{}, err
		}
		sec.TLS = cfg
	}
	if sec.SecureACLs && !sec.authenticated() {
		return Security{}, fmt.Errorf("zookeeper.set.acl is true, but the ZooKeeper client has no identity to own the znodes: "+
			"set %s=user:password (ZooKeeper digest auth; samsa cannot use ZooKeeper SASL), or zookeeper.ssl.client.enable=true "+
			"with zookeeper.ssl.keystore.location (TLS client authentication)", DigestKey)
	}
	return sec, nil
}

// zkTLSConfig maps zookeeper.ssl.* onto the ssl.* keys tlsconf reads, with the rules of
// ZooKeeper's client (X509Util), which is what Kafka's settings end up in:
//   - a store type left unset is taken from the file name (.pem, .p12/.pfx, .jks), not
//     Kafka's JKS default (ZooKeeper's KeyStoreFileType.fromPropertyValueOrFileName);
//   - a PEM key store's password decrypts its key, a PEM trust store has none;
//   - zookeeper.ssl.protocol defaults to TLSv1.2 and, with zookeeper.ssl.enabled.protocols
//     unset, is the only protocol enabled;
//   - zookeeper.ssl.endpoint.identification.algorithm: "HTTPS" (any case, the default)
//     verifies the host name, anything else only the certificate chain.
func zkTLSConfig(get func(string) (string, bool)) (*tls.Config, error) {
	m := map[string]string{}
	for _, which := range []string{"keystore", "truststore"} {
		loc, _ := get("zookeeper.ssl." + which + ".location")
		pw, hasPW := get("zookeeper.ssl." + which + ".password")
		typ, _ := get("zookeeper.ssl." + which + ".type")
		if loc == "" {
			continue
		}
		if typ == "" {
			var err error
			if typ, err = storeTypeFromName(loc); err != nil {
				return nil, fmt.Errorf("zookeeper.ssl.%s.location: %w", which, err)
			}
		}
		typ = strings.ToUpper(typ)
		m["ssl."+which+".location"] = loc
		m["ssl."+which+".type"] = typ
		switch {
		case !hasPW || pw == "":
		case typ == "PEM" && which == "keystore":
			m["ssl.key.password"] = pw
		case typ == "PEM":
			// ZooKeeper's PEM trust store loader ignores the password.
		default:
			m["ssl."+which+".password"] = pw
		}
	}
	proto, ok := get("zookeeper.ssl.protocol")
	if !ok || proto == "" {
		proto = "TLSv1.2"
	}
	m["ssl.protocol"] = proto
	if v, _ := get("zookeeper.ssl.enabled.protocols"); v != "" {
		m["ssl.enabled.protocols"] = v
	} else if proto == "TLSv1.2" || proto == "TLSv1.3" {
		m["ssl.enabled.protocols"] = proto
	}
	if v, _ := get("zookeeper.ssl.cipher.suites"); v != "" {
		m["ssl.cipher.suites"] = v
	}
	alg, ok := get("zookeeper.ssl.endpoint.identification.algorithm")
	if !ok {
		alg = "HTTPS"
	}
	if strings.EqualFold(alg, "HTTPS") {
		m["ssl.endpoint.identification.algorithm"] = "https"
	} else {
		m["ssl.endpoint.identification.algorithm"] = ""
	}
	for _, k := range []string{"zookeeper.ssl.crl.enable", "zookeeper.ssl.ocsp.enable"} {
		if v, _ := get(k); strings.EqualFold(v, "true") {
			return nil, fmt.Errorf("invalid value true for configuration %s: samsa does not check certificate revocation", k)
		}
	}
	cfg, err := tlsconf.ClientConfig(m, "")
	if err != nil {
		return nil, fmt.Errorf("ZooKeeper TLS client settings (zookeeper.ssl.*, read as the ssl.* keys they mirror): %w", err)
	}
	return cfg, nil
}

// storeTypeFromName is ZooKeeper's KeyStoreFileType.fromFilename.
func storeTypeFromName(name string) (string, error) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".pem":
		return "PEM", nil
	case ".p12", ".pfx":
		return "PKCS12", nil
	case ".jks":
		return "JKS", nil
	}
	return "", fmt.Errorf("unable to auto-detect store file type from file name %q; set its type (PEM or PKCS12)", name)
}

// tlsDialer dials a ZooKeeper server over TLS, checking the certificate against the host in
// the connect string. The handshake is bounded by go-zookeeper's connect timeout. A failed
// handshake is a configuration problem more often than not: it is logged at warning level
// (go-zookeeper only logs at debug level here) and kept for Connect's time-out error.
func (c *Client) tlsDialer(cfg *tls.Config) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		raw, err := (&net.Dialer{Timeout: timeout}).Dial(network, address)
		if err != nil {
			c.dialErr.Store(&err)
			return nil, err
		}
		conf := cfg
		if cfg.ServerName == "" {
			conf = cfg.Clone()
			if host, _, err := net.SplitHostPort(address); err == nil {
				conf.ServerName = host
			}
		}
		conn := tls.Client(raw, conf)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := conn.HandshakeContext(ctx); err != nil {
			raw.Close()
			err = fmt.Errorf("TLS handshake with ZooKeeper %s: %w", address, err)
			c.dialErr.Store(&err)
			c.log.WithError(err).WithField("zk_server", address).Warn("cannot open a TLS connection to ZooKeeper")
			return nil, err
		}
		return conn, nil
	}
}

// ACL is one entry of a znode's access control list.
type ACL struct {
	Perms  int32  // PermRead | PermWrite | ...
	Scheme string // "world", "auth", "digest", "x509", "ip", "sasl"
	ID     string
}

// ZooKeeper's permission bits.
const (
	PermRead   = zk.PermRead
	PermWrite  = zk.PermWrite
	PermCreate = zk.PermCreate
	PermDelete = zk.PermDelete
	PermAdmin  = zk.PermAdmin
	PermAll    = zk.PermAll
)

// The ZooDefs.Ids lists Kafka builds its ACLs from.
var (
	openACL    = zk.WorldACL(zk.PermAll) // OPEN_ACL_UNSAFE
	creatorAll = zk.AuthACL(zk.PermAll)  // CREATOR_ALL_ACL: every identity of the creating session
	// CREATOR_ALL_ACL plus READ_ACL_UNSAFE (world may read).
	secureACL = []zk.ACL{creatorAll[0], zk.WorldACL(zk.PermRead)[0]}
)

// SensitivePaths are the roots whose znodes nobody but their creator may read when ACLs are
// on (ZkData.SensitiveRootPaths): SCRAM credentials, broker configs (passwords), delegation
// tokens.
var SensitivePaths = []string{ConfigPath + "/" + ConfigTypeUser, ConfigPath + "/" + ConfigTypeBroker, "/delegation_token/tokens"}

// SecureRootPaths are the roots ZkSecurityMigrator re-ACLs (ZkData.SecureRootPaths with the
// ACL stores' paths).
var SecureRootPaths = []string{AdminPath, BrokersPath, ClusterPath, ConfigPath, ControllerPath, ControllerEpochPath,
	IsrChangeNotificationPath, LatestProducerIDBlockPath, LogDirEventNotificationPath, "/delegation_token",
	"/kafka-acl-extended", "/migration", FeaturePath,
	"/kafka-acl", "/kafka-acl-changes", "/kafka-acl-extended/prefixed", "/kafka-acl-extended-changes"}

// DefaultACLs is ZkData.defaultAcls for a chroot-relative path: open when ACLs are off and
// for /consumers (old consumers write under it); otherwise all rights to the creator plus
// world read, except under the sensitive roots, which only the creator may read.
func DefaultACLs(secure bool, path string) []ACL {
	return fromZKACLs(defaultACLs(secure, path))
}

func defaultACLs(secure bool, path string) []zk.ACL {
	if !secure || path == ConsumersPath {
		return openACL
	}
	for _, p := range SensitivePaths {
		if strings.HasPrefix(path, p) {
			return creatorAll
		}
	}
	return secureACL
}

// acls is the ACL list this client gives a new znode at the chroot-relative path.
func (c *Client) acls(path string) []zk.ACL { return defaultACLs(c.sec.SecureACLs, path) }

// SecureACLs reports whether the client creates znodes with Kafka's secure ACLs.
func (c *Client) SecureACLs() bool { return c.sec.SecureACLs }

func fromZKACLs(l []zk.ACL) []ACL {
	out := make([]ACL, len(l))
	for i, a := range l {
		out[i] = ACL{Perms: a.Perms, Scheme: a.Scheme, ID: a.ID}
	}
	return out
}

func toZKACLs(l []ACL) []zk.ACL {
	out := make([]zk.ACL, len(l))
	for i, a := range l {
		out[i] = zk.ACL{Perms: a.Perms, Scheme: a.Scheme, ID: a.ID}
	}
	return out
}

// GetACL reads a znode's ACL as ZooKeeper stores it (an "auth" entry appears expanded to the
// creator's identities, e.g. digest user:hash or x509 subject).
func (c *Client) GetACL(path string) ([]ACL, Stat, error) {
	var acl []zk.ACL
	var st *zk.Stat
	err := c.do(func() (err error) {
		acl, st, err = c.conn.GetACL(c.abs(path))
		return mapErr("get acl", path, err)
	})
	return fromZKACLs(acl), toStat(st), err
}

// SetACL replaces a znode's ACL if its ACL version matches (-1 = any).
func (c *Client) SetACL(path string, acl []ACL, aclVersion int32) error {
	return c.do(func() error {
		_, err := c.conn.SetACL(c.abs(path), toZKACLs(acl), aclVersion)
		return mapErr("set acl", path, err)
	})
}

// MigrateACLs is ZkSecurityMigrator (zookeeper-security-migration.sh --zookeeper.acl=secure
// or unsecure): it sets DefaultACLs(secure, path) on the chroot's root and on every znode
// under SecureRootPaths, creating missing roots (except /controller). Znodes deleted
// meanwhile are skipped. Other trees (/consumers, anything not Kafka's) are left alone.
func (c *Client) MigrateACLs(ctx context.Context, secure bool) error {
	if secure && !c.sec.authenticated() {
		return errors.New("zkmeta: securing ACLs needs an authenticated ZooKeeper client (digest or TLS client certificate)")
	}
	set := func(path string) error {
		err := c.SetACL(path, fromZKACLs(defaultACLs(secure, path)), -1)
		if errors.Is(err, ErrNoNode) {
			c.log.WithField("zk_path", path).Warn("znode is gone, it could have been legitimately deleted")
			return nil
		}
		return err
	}
	if err := set("/"); err != nil {
		return err
	}
	var walk func(path string) error
	walk = func(path string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := set(path); err != nil {
			return err
		}
		children, err := c.Children(path)
		if errors.Is(err, ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, ch := range children {
			if err := walk(path + "/" + ch); err != nil {
				return err
			}
		}
		return nil
	}
	for _, root := range SecureRootPaths {
		if root == ControllerPath {
			if ok, _, err := c.Exists(root); err != nil {
				return err
			} else if !ok {
				continue
			}
		} else if err := c.CreateRecursive(root, nil); err != nil && !errors.Is(err, ErrNodeExists) {
			return err
		}
		if err := walk(root); err != nil {
			return fmt.Errorf("zkmeta: set ACLs under %s: %w", root, err)
		}
	}
	return nil
}
