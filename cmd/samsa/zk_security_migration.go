package main

// zookeeper-security-migration mirrors Kafka 3.7's zookeeper-security-migration.sh
// (kafka.admin.ZkSecurityMigrator): it sets Kafka's secure ACLs (--zookeeper.acl secure) or
// open ACLs (unsecure) on the chroot and every znode under Kafka's root paths. The session
// needs an identity to own the znodes: samsa cannot do ZooKeeper SASL (Kafka's JAAS login), so
// it is the digest samsa.zookeeper.digest or a TLS client certificate, both read from
// --zk-tls-config-file.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/zkmeta"
)

const zkMigrationUsage = "ZooKeeper Migration Tool Help. This tool updates the ACLs of znodes as part of the process of setting up ZooKeeper authentication."

type zkMigrationOpts struct {
	acl, connect, tlsConfigFile         optString
	sessionTimeout, connectionTimeout   optInt
	pathCheck                           bool
	secure                              bool // --zookeeper.acl secure
	sessionTimeoutD, connectionTimeoutD time.Duration
}

func parseZkMigrationArgs(args []string, stderr io.Writer) (*zkMigrationOpts, *flag.FlagSet, error) {
	o := &zkMigrationOpts{
		connect:           optString{v: "localhost:2181"},
		sessionTimeout:    optInt{v: 30000},
		connectionTimeout: optInt{v: 30000},
	}
	fs := newFlagSet("samsa zookeeper-security-migration", stderr)
	fs.Var(&o.acl, "zookeeper.acl", "Indicates whether to make the Kafka znodes in ZooKeeper secure or unsecure. The options are 'secure' and 'unsecure'")
	fs.Var(&o.connect, "zookeeper.connect", "Sets the ZooKeeper connect string (ensemble). This parameter takes a comma-separated list of host:port pairs.")
	fs.Var(&o.sessionTimeout, "zookeeper.session.timeout", "Sets the ZooKeeper session timeout (ms).")
	fs.Var(&o.connectionTimeout, "zookeeper.connection.timeout", "Sets the ZooKeeper connection timeout (ms).")
	fs.BoolVar(&o.pathCheck, "enable.path.check", false, "Checks if all the root paths exist in ZooKeeper before migration. If not, exit the command.")
	fs.Var(&o.tlsConfigFile, "zk-tls-config-file", "Identifies the file where ZooKeeper client TLS connectivity properties (zookeeper.ssl.*) and the samsa ZooKeeper digest identity ("+
		zkmeta.DigestKey+"=user:password) are defined. Any other properties are ignored.")
	if len(args) == 0 {
		return nil, fs, usageErr(zkMigrationUsage)
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, fs, err
	}
	switch o.acl.v {
	case "secure":
		o.secure = true
	case "unsecure":
	default:
		// Kafka: anything else, or nothing, prints the usage (ToolsUtils.printUsageAndExit).
		return nil, fs, usageErr(zkMigrationUsage)
	}
	if strings.TrimSpace(o.connect.v) == "" {
		return nil, fs, usageErr("Option zookeeper.connect needs a host:port list")
	}
	for _, t := range []struct {
		name string
		v    optInt
		d    *time.Duration
	}{{"zookeeper.session.timeout", o.sessionTimeout, &o.sessionTimeoutD}, {"zookeeper.connection.timeout", o.connectionTimeout, &o.connectionTimeoutD}} {
		if t.v.v <= 0 || t.v.v > 1<<31-1 {
			return nil, fs, usageErr("Option %s must be a positive number of milliseconds, not %d", t.name, t.v.v)
		}
		*t.d = time.Duration(t.v.v) * time.Millisecond
	}
	return o, fs, nil
}

func runZkSecurityMigration(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o, fs, err := parseZkMigrationArgs(args, stderr)
	if err != nil {
		return reportUsage(fs, stderr, err)
	}
	sec, err := zkMigrationSecurity(o)
	if err != nil {
		fmt.Fprintln(stderr, "ERROR: "+err.Error())
		return 1
	}
	log := logrus.New()
	log.SetOutput(stderr)
	log.SetLevel(logrus.WarnLevel) // Kafka's per-znode progress is info-level logging
	if err := zkSecurityMigration(o, sec, stdout, logrus.NewEntry(log)); err != nil {
		fmt.Fprintln(stderr, "Error: "+err.Error())
		return 1
	}
	return 0
}

// zkMigrationSecurity reads the ZooKeeper client settings from --zk-tls-config-file and refuses
// a session without an identity, as Kafka refuses one without a JAAS file or TLS client
// certificate: with no owner the secure ACLs would lock everyone out, and open ACLs cannot be
// restored on znodes only their owner may administer.
func zkMigrationSecurity(o *zkMigrationOpts) (zkmeta.Security, error) {
	props := map[string]string{}
	if o.tlsConfigFile.set {
		all, err := loadPropsFile(o.tlsConfigFile.v)
		if err != nil {
			return zkmeta.Security{}, fmt.Errorf("--zk-tls-config-file: %w", err)
		}
		// Like Kafka, only the ZooKeeper client keys count (so zookeeper.set.acl is ignored).
		for k, v := range all {
			if strings.HasPrefix(k, "zookeeper.ssl.") || k == "zookeeper.clientCnxnSocket" || k == zkmeta.DigestKey {
				props[k] = v
			}
		}
	}
	sec, err := zkmeta.SecurityFromProps(props)
	if err != nil {
		return zkmeta.Security{}, fmt.Errorf("--zk-tls-config-file %s: %w", o.tlsConfigFile.v, err)
	}
	hasCert := sec.TLS != nil && (len(sec.TLS.Certificates) > 0 || sec.TLS.GetClientCertificate != nil)
	if sec.Digest == "" && !hasCert {
		return zkmeta.Security{}, fmt.Errorf("No ZooKeeper digest identity and no TLS client certificate have been specified "+
			"(samsa cannot use a JAAS file: its ZooKeeper client has no SASL). Please set %s=user:password, or "+
			"zookeeper.ssl.client.enable=true with zookeeper.ssl.keystore.location, in the file given with --zk-tls-config-file <filename>",
			zkmeta.DigestKey)
	}
	// The client creates missing root paths with the ACLs being migrated to, as Kafka's does.
	sec.SecureACLs = o.secure
	return sec, nil
}

func zkSecurityMigration(o *zkMigrationOpts, sec zkmeta.Security, stdout io.Writer, log *logrus.Entry) error {
	connect := func(connStr string, s zkmeta.Security) (*zkmeta.Client, error) {
		ctx, cancel := context.WithTimeout(context.Background(), o.connectionTimeoutD)
		defer cancel()
		c, err := zkmeta.ConnectSecure(ctx, connStr, o.sessionTimeoutD, log, s)
		if err != nil {
			return nil, fmt.Errorf("connect to ZooKeeper: %w", err)
		}
		return c, nil
	}
	// zkmeta creates a missing chroot on connect; look for it first so that a mistyped chroot
	// is reported by the path check rather than created.
	chrootMissing := false
	if hosts, chroot, ok := strings.Cut(o.connect.v, "/"); ok && strings.Trim(chroot, "/") != "" {
		bareSec := sec
		bareSec.SecureACLs = false // this client creates nothing
		bare, err := connect(hosts, bareSec)
		if err != nil {
			return err
		}
		found, _, err := bare.Exists("/" + strings.TrimRight(chroot, "/"))
		bare.Close()
		if err != nil {
			return fmt.Errorf("look for the chroot /%s: %w", chroot, err)
		}
		chrootMissing = !found
	}
	var missing []string
	var c *zkmeta.Client
	if chrootMissing {
		missing = zkmeta.SecureRootPaths
	} else {
		var err error
		if c, err = connect(o.connect.v, sec); err != nil {
			return err
		}
		defer c.Close()
		for _, p := range zkmeta.SecureRootPaths {
			found, _, err := c.Exists(p)
			if err != nil {
				return fmt.Errorf("check root path %s: %w", p, err)
			}
			if !found {
				missing = append(missing, p)
			}
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(stdout, "Warning: The following secure root paths do not exist in ZooKeeper: %s\n", strings.Join(missing, ","))
		fmt.Fprintln(stdout, "That might be due to an incorrect chroot is specified when executing the command.")
		if o.pathCheck {
			fmt.Fprintln(stdout, "Exit the command.")
			return errors.New("secure root paths missing (--enable.path.check)")
		}
	}
	if c == nil {
		var err error
		if c, err = connect(o.connect.v, sec); err != nil {
			return err
		}
		defer c.Close()
	}
	if err := c.MigrateACLs(context.Background(), o.secure); err != nil {
		return fmt.Errorf("set ACLs (zookeeper.acl=%s): %w", o.acl.v, err)
	}
	return nil
}
