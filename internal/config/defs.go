package config

import (
	"fmt"
	"math"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Type is a ConfigDef.Type of Kafka: how a property's string value is parsed.
type Type int

const (
	TypeString Type = iota
	TypeInt
	TypeLong
	TypeShort
	TypeDouble
	TypeBoolean
	TypeList
	TypeClass
	TypePassword
)

func (t Type) String() string {
	return [...]string{"STRING", "INT", "LONG", "SHORT", "DOUBLE", "BOOLEAN", "LIST", "CLASS", "PASSWORD"}[t]
}

// Def describes one known broker property, as a KafkaConfig `.define(...)` does.
type Def struct {
	Name       string
	Type       Type
	Default    string                    // Kafka's default, formatted as Kafka prints it; meaningless when !HasDefault
	HasDefault bool                      // false: the default is null
	validate   func(value string) string // "" if valid, else why not
}

// Sensitive reports whether DescribeConfigs must hide the value (Kafka: Type.PASSWORD).
func (d Def) Sensitive() bool { return d.Type == TypePassword }

const (
	intMax    = "2147483647"
	longMax   = "9223372036854775807"
	doubleMax = "1.7976931348623157E308" // Java's Double.MAX_VALUE as Kafka prints it
)

func d(name string, t Type, def string, v ...func(string) string) Def {
	x := Def{Name: name, Type: t, Default: def, HasDefault: true}
	if len(v) > 0 {
		x.validate = v[0]
	}
	return x
}

// null defines a property whose default is null.
func null(name string, t Type, v ...func(string) string) Def {
	x := d(name, t, "", v...)
	x.HasDefault = false
	return x
}

func atLeast(min float64) func(string) string {
	return func(v string) string {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f < min {
			return fmt.Sprintf("value must be at least %v", min)
		}
		return ""
	}
}

func between(min, max float64) func(string) string {
	return func(v string) string {
		if f, err := strconv.ParseFloat(v, 64); err == nil && (f < min || f > max) {
			return fmt.Sprintf("value must be between %v and %v", min, max)
		}
		return ""
	}
}

func oneOf(allowed ...string) func(string) string {
	return func(v string) string {
		for _, a := range allowed {
			if v == a {
				return ""
			}
		}
		return "string must be one of: " + strings.Join(allowed, ", ")
	}
}

// listOf checks every element of a LIST value (Kafka's ValidList).
func listOf(allowed ...string) func(string) string {
	one := oneOf(allowed...)
	return func(v string) string {
		for _, e := range splitList(v) {
			if one(e) != "" {
				return "list elements must be one of: " + strings.Join(allowed, ", ")
			}
		}
		return ""
	}
}

var securityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// DefaultListenerSecurityProtocolMap is Kafka's default listener.security.protocol.map.
const DefaultListenerSecurityProtocolMap = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"

// defs lists the broker properties Kafka 3.7 defines (KafkaConfig.configDef, ZK mode), with
// their types and defaults (from KafkaConfig's definitions), plus samsa's own keys.
var defs = []Def{
	// ZooKeeper
	null("zookeeper.connect", TypeString),
	d("zookeeper.session.timeout.ms", TypeInt, "18000", atLeast(1)),
	null("zookeeper.connection.timeout.ms", TypeInt, atLeast(1)),
	d("zookeeper.max.in.flight.requests", TypeInt, "10", atLeast(1)),
	d("zookeeper.set.acl", TypeBoolean, "false"),
	d("zookeeper.ssl.client.enable", TypeBoolean, "false"),
	null("zookeeper.clientCnxnSocket", TypeString),
	null("zookeeper.ssl.keystore.location", TypeString),
	null("zookeeper.ssl.keystore.password", TypePassword),
	null("zookeeper.ssl.keystore.type", TypeString),
	null("zookeeper.ssl.truststore.location", TypeString),
	null("zookeeper.ssl.truststore.password", TypePassword),
	null("zookeeper.ssl.truststore.type", TypeString),
	d("zookeeper.ssl.protocol", TypeString, "TLSv1.2"),
	null("zookeeper.ssl.enabled.protocols", TypeList),
	null("zookeeper.ssl.cipher.suites", TypeList),
	d("zookeeper.ssl.endpoint.identification.algorithm", TypeString, "HTTPS"),
	d("zookeeper.ssl.crl.enable", TypeBoolean, "false"),
	d("zookeeper.ssl.ocsp.enable", TypeBoolean, "false"),
	d("zookeeper.metadata.migration.enable", TypeBoolean, "false"),

	// KRaft keys: known so they don't warn; process.roles must stay empty (ZK mode only).
	d("process.roles", TypeList, "", listOf("broker", "controller")),
	d("node.id", TypeInt, "-1"),
	null("controller.listener.names", TypeString),
	d("controller.quorum.voters", TypeList, ""),
	null("metadata.log.dir", TypeString),
	d("broker.heartbeat.interval.ms", TypeInt, "2000"),
	d("broker.session.timeout.ms", TypeInt, "9000"),
	d("initial.broker.registration.timeout.ms", TypeInt, "60000"),

	// Identity, listeners, networking
	d("broker.id", TypeInt, "-1"),
	d("broker.id.generation.enable", TypeBoolean, "true"),
	d("reserved.broker.max.id", TypeInt, "1000", atLeast(0)),
	null("broker.rack", TypeString),
	d("listeners", TypeString, "PLAINTEXT://:9092"),
	null("advertised.listeners", TypeString),
	d("listener.security.protocol.map", TypeString, DefaultListenerSecurityProtocolMap),
	null("inter.broker.listener.name", TypeString),
	d("security.inter.broker.protocol", TypeString, "PLAINTEXT", oneOf(securityProtocols...)),
	null("control.plane.listener.name", TypeString),
	null("early.start.listeners", TypeString),
	d("inter.broker.protocol.version", TypeString, "3.7-IV4"),
	d("num.network.threads", TypeInt, "3", atLeast(1)),
	d("num.io.threads", TypeInt, "8", atLeast(1)),
	d("background.threads", TypeInt, "10", atLeast(1)),
	d("queued.max.requests", TypeInt, "500", atLeast(1)),
	d("queued.max.request.bytes", TypeLong, "-1"),
	d("socket.send.buffer.bytes", TypeInt, "102400"),
	d("socket.receive.buffer.bytes", TypeInt, "102400"),
	d("socket.request.max.bytes", TypeInt, "104857600", atLeast(1)),
	d("socket.listen.backlog.size", TypeInt, "50", atLeast(1)),
	d("socket.connection.setup.timeout.ms", TypeLong, "10000"),
	d("socket.connection.setup.timeout.max.ms", TypeLong, "30000"),
	d("connections.max.idle.ms", TypeLong, "600000"),
	d("connection.failed.authentication.delay.ms", TypeInt, "100", atLeast(0)),
	d("max.connections", TypeInt, intMax, atLeast(0)),
	d("max.connections.per.ip", TypeInt, intMax, atLeast(0)),
	d("max.connections.per.ip.overrides", TypeString, ""),
	d("max.connection.creation.rate", TypeInt, intMax, atLeast(0)),
	d("request.timeout.ms", TypeInt, "30000"),
	d("controller.socket.timeout.ms", TypeInt, "30000"),
	d("authorizer.class.name", TypeString, ""),
	null("super.users", TypeString),
	d("allow.everyone.if.no.acl.found", TypeBoolean, "false"),
	d("delete.topic.enable", TypeBoolean, "true"),
	d("auto.create.topics.enable", TypeBoolean, "true"),
	null("create.topic.policy.class.name", TypeClass),
	null("alter.config.policy.class.name", TypeClass),
	d("unstable.api.versions.enable", TypeBoolean, "false"),
	d("unstable.metadata.versions.enable", TypeBoolean, "false"),

	// Log (broker-wide topic defaults)
	d("log.dir", TypeString, "/tmp/kafka-logs"),
	null("log.dirs", TypeString),
	d("num.partitions", TypeInt, "1", atLeast(1)),
	d("default.replication.factor", TypeInt, "1"),
	d("log.segment.bytes", TypeInt, "1073741824", atLeast(14)),
	null("log.roll.ms", TypeLong),
	d("log.roll.hours", TypeInt, "168", atLeast(1)),
	null("log.roll.jitter.ms", TypeLong),
	d("log.roll.jitter.hours", TypeInt, "0", atLeast(0)),
	null("log.retention.ms", TypeLong),
	null("log.retention.minutes", TypeInt),
	d("log.retention.hours", TypeInt, "168"),
	d("log.retention.bytes", TypeLong, "-1"),
	d("log.retention.check.interval.ms", TypeLong, "300000", atLeast(1)),
	d("log.cleanup.policy", TypeList, "delete", listOf("compact", "delete")),
	d("log.index.size.max.bytes", TypeInt, "10485760", atLeast(4)),
	d("log.index.interval.bytes", TypeInt, "4096", atLeast(0)),
	d("log.flush.interval.messages", TypeLong, longMax, atLeast(1)),
	null("log.flush.interval.ms", TypeLong),
	d("log.flush.scheduler.interval.ms", TypeLong, longMax),
	d("log.flush.offset.checkpoint.interval.ms", TypeInt, "60000", atLeast(0)),
	d("log.flush.start.offset.checkpoint.interval.ms", TypeInt, "60000", atLeast(0)),
	d("log.segment.delete.delay.ms", TypeLong, "60000", atLeast(0)),
	d("log.preallocate", TypeBoolean, "false"),
	d("message.max.bytes", TypeInt, "1048588", atLeast(0)),
	d("min.insync.replicas", TypeInt, "1", atLeast(1)),
	d("unclean.leader.election.enable", TypeBoolean, "false"),
	d("compression.type", TypeString, "producer", oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
	d("log.message.timestamp.type", TypeString, "CreateTime", oneOf("CreateTime", "LogAppendTime")),
	d("log.message.timestamp.before.max.ms", TypeLong, longMax, atLeast(0)),
	d("log.message.timestamp.after.max.ms", TypeLong, longMax, atLeast(0)),
	d("log.message.timestamp.difference.max.ms", TypeLong, longMax, atLeast(0)),
	d("log.message.format.version", TypeString, "3.0-IV1"),
	d("log.message.downconversion.enable", TypeBoolean, "true"),
	d("log.local.retention.ms", TypeLong, "-2", atLeast(-2)),
	d("log.local.retention.bytes", TypeLong, "-2", atLeast(-2)),
	d("remote.log.storage.system.enable", TypeBoolean, "false"),
	d("num.recovery.threads.per.data.dir", TypeInt, "1", atLeast(1)),
	null("num.replica.alter.log.dirs.threads", TypeInt),
	d("log.cleaner.enable", TypeBoolean, "true"),
	d("log.cleaner.threads", TypeInt, "1", atLeast(0)),
	d("log.cleaner.dedupe.buffer.size", TypeLong, "134217728"),
	d("log.cleaner.io.buffer.size", TypeInt, "524288", atLeast(0)),
	d("log.cleaner.io.buffer.load.factor", TypeDouble, "0.9"),
	d("log.cleaner.io.max.bytes.per.second", TypeDouble, doubleMax),
	d("log.cleaner.backoff.ms", TypeLong, "15000", atLeast(0)),
	d("log.cleaner.min.cleanable.ratio", TypeDouble, "0.5", between(0, 1)),
	d("log.cleaner.delete.retention.ms", TypeLong, "86400000", atLeast(0)),
	d("log.cleaner.min.compaction.lag.ms", TypeLong, "0", atLeast(0)),
	d("log.cleaner.max.compaction.lag.ms", TypeLong, longMax, atLeast(1)),

	// Replication
	d("replica.lag.time.max.ms", TypeLong, "30000"),
	d("replica.fetch.max.bytes", TypeInt, "1048576", atLeast(0)),
	d("replica.fetch.response.max.bytes", TypeInt, "10485760", atLeast(0)),
	d("replica.fetch.min.bytes", TypeInt, "1"),
	d("replica.fetch.wait.max.ms", TypeInt, "500"),
	d("replica.fetch.backoff.ms", TypeInt, "1000", atLeast(0)),
	d("num.replica.fetchers", TypeInt, "1"),
	d("replica.socket.timeout.ms", TypeInt, "30000"),
	d("replica.socket.receive.buffer.bytes", TypeInt, "65536"),
	d("replica.high.watermark.checkpoint.interval.ms", TypeLong, "5000"),
	null("replica.selector.class", TypeString, validReplicaSelector),
	d("fetch.purgatory.purge.interval.requests", TypeInt, "1000"),
	d("producer.purgatory.purge.interval.requests", TypeInt, "1000"),
	d("delete.records.purgatory.purge.interval.requests", TypeInt, "1"),
	d("fetch.max.bytes", TypeInt, "57671680", atLeast(1024)),
	d("max.incremental.fetch.session.cache.slots", TypeInt, "1000", atLeast(0)),
	d("auto.leader.rebalance.enable", TypeBoolean, "true"),
	d("leader.imbalance.per.broker.percentage", TypeInt, "10"),
	d("leader.imbalance.check.interval.seconds", TypeLong, "300", atLeast(1)),
	d("controlled.shutdown.enable", TypeBoolean, "true"),
	d("controlled.shutdown.max.retries", TypeInt, "3"),
	d("controlled.shutdown.retry.backoff.ms", TypeLong, "5000"),

	// Group coordinator and __consumer_offsets
	d("group.min.session.timeout.ms", TypeInt, "6000"),
	d("group.max.session.timeout.ms", TypeInt, "1800000"),
	d("group.initial.rebalance.delay.ms", TypeInt, "3000"),
	d("group.max.size", TypeInt, intMax, atLeast(1)),
	d("offset.metadata.max.bytes", TypeInt, "4096"),
	d("offsets.load.buffer.size", TypeInt, "5242880", atLeast(1)),
	d("offsets.topic.replication.factor", TypeShort, "3", atLeast(1)),
	d("offsets.topic.num.partitions", TypeInt, "50", atLeast(1)),
	d("offsets.topic.segment.bytes", TypeInt, "104857600", atLeast(1)),
	d("offsets.topic.compression.codec", TypeInt, "0"),
	d("offsets.retention.minutes", TypeInt, "10080", atLeast(1)),
	d("offsets.retention.check.interval.ms", TypeLong, "600000", atLeast(1)),
	d("offsets.commit.timeout.ms", TypeInt, "5000", atLeast(1)),
	d("offsets.commit.required.acks", TypeShort, "-1"),
	d("group.coordinator.new.enable", TypeBoolean, "false"),
	d("group.coordinator.rebalance.protocols", TypeList, "classic", listOf("classic", "consumer")),
	d("group.coordinator.threads", TypeInt, "1", atLeast(1)),
	d("group.consumer.session.timeout.ms", TypeInt, "45000"),
	d("group.consumer.min.session.timeout.ms", TypeInt, "45000"),
	d("group.consumer.max.session.timeout.ms", TypeInt, "60000"),
	d("group.consumer.heartbeat.interval.ms", TypeInt, "5000"),
	d("group.consumer.min.heartbeat.interval.ms", TypeInt, "5000"),
	d("group.consumer.max.heartbeat.interval.ms", TypeInt, "15000"),
	d("group.consumer.max.size", TypeInt, intMax),
	d("group.consumer.assignors", TypeList, "org.apache.kafka.coordinator.group.assignor.UniformAssignor,org.apache.kafka.coordinator.group.assignor.RangeAssignor"),

	// Transactions and producer ids
	d("transaction.max.timeout.ms", TypeInt, "900000", atLeast(1)),
	d("transaction.state.log.load.buffer.size", TypeInt, "5242880", atLeast(1)),
	d("transaction.state.log.replication.factor", TypeShort, "3", atLeast(1)),
	d("transaction.state.log.num.partitions", TypeInt, "50", atLeast(1)),
	d("transaction.state.log.segment.bytes", TypeInt, "104857600", atLeast(1)),
	d("transaction.state.log.min.isr", TypeInt, "2", atLeast(1)),
	d("transactional.id.expiration.ms", TypeInt, "604800000", atLeast(1)),
	d("transaction.abort.timed.out.transaction.cleanup.interval.ms", TypeInt, "10000", atLeast(1)),
	d("transaction.remove.expired.transaction.cleanup.interval.ms", TypeInt, "3600000", atLeast(1)),
	d("transaction.partition.verification.enable", TypeBoolean, "true"),
	d("producer.id.expiration.ms", TypeInt, "86400000", atLeast(1)),
	d("producer.id.expiration.check.interval.ms", TypeInt, "600000", atLeast(1)),

	// Quotas, metrics
	d("quota.window.num", TypeInt, "11", atLeast(1)),
	d("quota.window.size.seconds", TypeInt, "1", atLeast(1)),
	d("replication.quota.window.num", TypeInt, "11", atLeast(1)),
	d("replication.quota.window.size.seconds", TypeInt, "1", atLeast(1)),
	d("alter.log.dirs.replication.quota.window.num", TypeInt, "11", atLeast(1)),
	d("alter.log.dirs.replication.quota.window.size.seconds", TypeInt, "1", atLeast(1)),
	d("controller.quota.window.num", TypeInt, "11", atLeast(1)),
	d("controller.quota.window.size.seconds", TypeInt, "1", atLeast(1)),
	null("client.quota.callback.class", TypeClass),
	d("metric.reporters", TypeList, ""),
	d("metrics.num.samples", TypeInt, "2", atLeast(1)),
	d("metrics.sample.window.ms", TypeLong, "30000", atLeast(1)),
	d("metrics.recording.level", TypeString, "INFO", oneOf("INFO", "DEBUG", "TRACE")),
	d("auto.include.jmx.reporter", TypeBoolean, "true"),
	d("kafka.metrics.reporters", TypeList, ""),
	d("kafka.metrics.polling.interval.secs", TypeInt, "10", atLeast(1)),

	// Security
	d("connections.max.reauth.ms", TypeLong, "0"),
	null("principal.builder.class", TypeClass),
	null("security.providers", TypeString),
	d("ssl.protocol", TypeString, "TLSv1.3"),
	null("ssl.provider", TypeString),
	d("ssl.enabled.protocols", TypeList, "TLSv1.2,TLSv1.3"),
	d("ssl.keystore.type", TypeString, "JKS"),
	null("ssl.keystore.location", TypeString),
	null("ssl.keystore.password", TypePassword),
	null("ssl.key.password", TypePassword),
	null("ssl.keystore.key", TypePassword),
	null("ssl.keystore.certificate.chain", TypePassword),
	d("ssl.truststore.type", TypeString, "JKS"),
	null("ssl.truststore.location", TypeString),
	null("ssl.truststore.password", TypePassword),
	null("ssl.truststore.certificates", TypePassword),
	d("ssl.keymanager.algorithm", TypeString, "SunX509"),
	d("ssl.trustmanager.algorithm", TypeString, "PKIX"),
	d("ssl.endpoint.identification.algorithm", TypeString, "https"),
	null("ssl.secure.random.implementation", TypeString),
	d("ssl.client.auth", TypeString, "none", oneOf("required", "requested", "none")),
	d("ssl.cipher.suites", TypeList, ""),
	d("ssl.principal.mapping.rules", TypeString, "DEFAULT"),
	null("ssl.engine.factory.class", TypeClass),
	d("ssl.allow.dn.changes", TypeBoolean, "false"),
	d("ssl.allow.san.changes", TypeBoolean, "false"),
	d("sasl.mechanism.inter.broker.protocol", TypeString, "GSSAPI"),
	d("sasl.enabled.mechanisms", TypeList, "GSSAPI"),
	null("sasl.jaas.config", TypePassword),
	null("sasl.kerberos.service.name", TypeString),
	d("sasl.kerberos.kinit.cmd", TypeString, "/usr/bin/kinit"),
	d("sasl.kerberos.ticket.renew.window.factor", TypeDouble, "0.8"),
	d("sasl.kerberos.ticket.renew.jitter", TypeDouble, "0.05"),
	d("sasl.kerberos.min.time.before.relogin", TypeLong, "60000"),
	d("sasl.kerberos.principal.to.local.rules", TypeList, "DEFAULT"),
	null("sasl.server.callback.handler.class", TypeClass),
	null("sasl.client.callback.handler.class", TypeClass),
	null("sasl.login.class", TypeClass),
	null("sasl.login.callback.handler.class", TypeClass),
	d("sasl.server.max.receive.size", TypeInt, "524288"),
	d("sasl.login.refresh.window.factor", TypeDouble, "0.8"),
	d("sasl.login.refresh.window.jitter", TypeDouble, "0.05"),
	d("sasl.login.refresh.min.period.seconds", TypeShort, "60"),
	d("sasl.login.refresh.buffer.seconds", TypeShort, "300"),
	null("sasl.login.connect.timeout.ms", TypeInt),
	null("sasl.login.read.timeout.ms", TypeInt),
	d("sasl.login.retry.backoff.max.ms", TypeLong, "10000"),
	d("sasl.login.retry.backoff.ms", TypeLong, "100"),
	d("sasl.oauthbearer.scope.claim.name", TypeString, "scope"),
	d("sasl.oauthbearer.sub.claim.name", TypeString, "sub"),
	null("sasl.oauthbearer.token.endpoint.url", TypeString),
	null("sasl.oauthbearer.jwks.endpoint.url", TypeString),
	d("sasl.oauthbearer.jwks.endpoint.refresh.ms", TypeLong, "3600000"),
	d("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", TypeLong, "10000"),
	d("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", TypeLong, "100"),
	d("sasl.oauthbearer.clock.skew.seconds", TypeInt, "30"),
	null("sasl.oauthbearer.expected.audience", TypeList),
	null("sasl.oauthbearer.expected.issuer", TypeString),
	null("delegation.token.master.key", TypePassword),
	null("delegation.token.secret.key", TypePassword),
	d("delegation.token.max.lifetime.ms", TypeLong, "604800000", atLeast(1)),
	d("delegation.token.expiry.time.ms", TypeLong, "86400000", atLeast(1)),
	d("delegation.token.expiry.check.interval.ms", TypeLong, "3600000", atLeast(1)),
	null("password.encoder.secret", TypePassword),
	null("password.encoder.old.secret", TypePassword),
	null("password.encoder.keyfactory.algorithm", TypeString),
	d("password.encoder.cipher.algorithm", TypeString, "AES/CBC/PKCS5Padding"),
	d("password.encoder.key.length", TypeInt, "128", atLeast(8)),
	d("password.encoder.iterations", TypeInt, "4096", atLeast(1024)),

	// samsa's own keys (not Kafka's): the root logger.
	d("samsa.log.format", TypeString, "text", oneOf("text", "json")),
	d("samsa.log.level", TypeString, "info", oneOf("panic", "fatal", "error", "warn", "warning", "info", "debug", "trace")),
	// samsa's own: host:port of an HTTP listener serving net/http/pprof; empty = off.
	d("samsa.debug.listener", TypeString, "", hostPortOrEmpty),
	d("samsa.http.listener", TypeString, "", hostPortOrEmpty),
	d("samsa.state.change.log.file", TypeString, "", filePathOrEmpty), // samsa's own: Kafka's state-change.log
	null("samsa.zookeeper.digest", TypePassword),                      // samsa's own: user:password for ZooKeeper digest auth (zkmeta.DigestKey)
}

// hostPortOrEmpty accepts "" or a host:port (host may be empty: all interfaces).
func hostPortOrEmpty(v string) string {
	if v == "" {
		return ""
	}
	if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
		return "should be host:port, e.g. 127.0.0.1:6060"
	}
	return ""
}

// filePathOrEmpty accepts "" or a path naming a file: not a directory by its spelling, no NUL.
func filePathOrEmpty(v string) string {
	switch {
	case v == "":
		return ""
	case strings.ContainsRune(v, 0):
		return "should be a file path; it contains a NUL character"
	case strings.HasSuffix(v, "/") || filepath.Base(v) == "." || filepath.Base(v) == "..":
		return "should be a file path, not a directory, e.g. /var/log/samsa/state-change.log"
	}
	return ""
}

var defsByName = func() map[string]Def {
	m := make(map[string]Def, len(defs))
	for _, x := range defs {
		if _, dup := m[x.Name]; dup {
			panic("config: duplicate definition " + x.Name)
		}
		m[x.Name] = x
	}
	return m
}()

// Lookup returns the definition of a known broker property.
func Lookup(name string) (Def, bool) {
	x, ok := defsByName[name]
	return x, ok
}

// Names returns every known broker property name, sorted (for DescribeConfigs).
func Names() []string {
	out := make([]string, 0, len(defs))
	for _, x := range defs {
		out = append(out, x.Name)
	}
	sort.Strings(out)
	return out
}

// knownPrefixes are families Kafka 3.7 defines that samsa does not list key by key:
// per-listener overrides (handed to that listener's channel builder), tiered storage, and
// KRaft's metadata log and quorum settings.
var knownPrefixes = []string{"listener.name.", "remote.log.", "metadata.", "controller.quorum."}

// isKnown reports whether Kafka 3.7 knows the key (unknown keys only get a warning).
func isKnown(name string) bool {
	if _, ok := defsByName[name]; ok {
		return true
	}
	for _, p := range knownPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// normalize parses value as d's type and returns it formatted as Kafka prints it, or an
// error naming the key and the value.
func (x Def) normalize(value string) (string, error) {
	v := strings.TrimSpace(value) // ConfigDef.parseType trims every value
	bad := func(what string) error {
		return fmt.Errorf("invalid value %q for configuration %s: %s", value, x.Name, what)
	}
	switch x.Type {
	case TypeInt, TypeShort, TypeLong:
		bits := map[Type]int{TypeInt: 32, TypeShort: 16, TypeLong: 64}[x.Type]
		n, err := strconv.ParseInt(v, 10, bits)
		if err != nil {
			return "", bad("not a number of type " + x.Type.String())
		}
		v = strconv.FormatInt(n, 10)
	case TypeDouble:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) {
			return "", bad("not a number of type DOUBLE")
		}
	case TypeBoolean:
		switch strings.ToLower(v) {
		case "true":
			v = "true"
		case "false":
			v = "false"
		default:
			return "", bad("expected value to be either true or false")
		}
	case TypeList:
		v = strings.Join(splitList(v), ",")
	}
	if x.validate != nil {
		if why := x.validate(v); why != "" {
			return "", bad(why)
		}
	}
	return v, nil
}

// splitList splits a Kafka LIST value: comma-separated, blanks around commas ignored, an
// empty string is the empty list.
func splitList(v string) []string {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	parts := strings.Split(v, ",")
	out := parts[:0]
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
