package broker

// conn_quotas.go mirrors kafka.network.ConnectionQuotas: the limits a listener's acceptor
// applies to each new connection before serving it.
//
//   - max.connections (broker-wide) and listener.name.<l>.max.connections: the acceptor waits
//     for a free slot before it takes the connection. The inter-broker listener is exempt from
//     the broker-wide limit when there is more than one listener; connections it takes beyond
//     the limit make the other listeners close their oldest connections.
//   - max.connection.creation.rate (broker-wide, and per listener through the listener
//     prefix, which falls back to the broker-wide value): the acceptor waits until the
//     accepted-connection rate is back under the quota (at most one quota window).
//   - /config/ips/<ip> and /config/ips/<default> connection_creation_rate: a connection over
//     its address's rate is not served and is closed once its throttle time has passed.
//   - max.connections.per.ip and max.connections.per.ip.overrides: a connection over its
//     address's limit is closed at once.
//
// All of them change live: ConnectionQuotas is a Reconfigurable for the max.connections*
// keys and IPConfigChanged applies a /config/ips notification.
//
// Deviation: Kafka closes the least recently active connection of a listener over the
// broker-wide limit; samsa closes the oldest one.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// IPConnectionCreationRateConfig is the only quota of an ip entity (QuotaConfigs'
// IP_CONNECTION_RATE_OVERRIDE_CONFIG): an INT, at least 0, Int.MaxValue when unset.
const IPConnectionCreationRateConfig = "connection_creation_rate"

// ipEntityDefault is ConfigEntityName.Default.
const ipEntityDefault = "<default>"

// ipSensorExpiration is InactiveSensorExpirationTimeSeconds: an address's rate is forgotten
// after an hour without connections.
const ipSensorExpiration = time.Hour

// connectionQuotaKeys are SocketServer.ReconfigurableConfigs; the listener-prefixed forms of
// listenerConnectionQuotaKeys are reconfigurable too.
var (
	connectionQuotaKeys         = []string{"max.connections.per.ip", "max.connections.per.ip.overrides", "max.connections", "max.connection.creation.rate"}
	listenerConnectionQuotaKeys = []string{"max.connections", "max.connection.creation.rate"}
)

// ErrTooManyConnections is TooManyConnectionsException: the address already has its maximum
// number of connections; the connection is closed at once.
var ErrTooManyConnections = errors.New("too many connections")

// connectionThrottledError is ConnectionThrottledException: the address is over its
// connection creation rate; the connection is closed after throttle.
type connectionThrottledError struct {
	ip       string
	throttle time.Duration
}

func (e *connectionThrottledError) Error() string {
	return fmt.Sprintf("%s throttled for %d ms", e.ip, e.throttle.Milliseconds())
}

// IsValidIPEntity is DynamicConfig.Ip.isValidIpEntity: <default>, an IP address or a host
// name that resolves. AlterClientQuotas refuses other ip entities.
func IsValidIPEntity(ip string) bool {
	if ip == ipEntityDefault {
		return true
	}
	_, err := resolveHost(ip)
	return err == nil
}

// ValidateIPQuotaConfig is DynamicConfig.Ip.validate: only connection_creation_rate, an
// integer of at least 0.
func ValidateIPQuotaConfig(cfg map[string]string) error {
	for k, v := range cfg {
		if k != IPConnectionCreationRateConfig {
			return fmt.Errorf("Unknown Dynamic Configuration '%s'.", k)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return fmt.Errorf("Invalid value %s for configuration %s: Not a number of type INT", v, k)
		}
		if n < 0 {
			return fmt.Errorf("Invalid value %s for configuration %s: Value must be at least 0", v, k)
		}
	}
	return nil
}

// resolveHost is InetAddress.getByName: an IP literal as itself, a host name as its first
// address. The result is the canonical text form used as a map key.
func resolveHost(host string) (string, error) {
	h := strings.TrimSpace(host)
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if ip := net.ParseIP(h); ip != nil {
		return ip.String(), nil
	}
	if h == "" {
		return "", fmt.Errorf("empty host")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, h)
	if err != nil {
		return "", err
	}
	if len(addrs) == 0 {
		return "", fmt.Errorf("no address for %s", h)
	}
	return addrs[0].IP.String(), nil
}

// remoteIP is the canonical text form of a connection's remote address.
func remoteIP(a net.Addr) string {
	switch t := a.(type) {
	case *net.TCPAddr:
		return t.IP.String()
	case nil:
		return ""
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.String()
	}
	return host
}

// parseMaxConnectionsPerIPOverrides is KafkaConfig.maxConnectionsPerIpOverrides
// (CoreUtils.parseCsvMap: "host:count,..." split at the last colon) with validateValues'
// host-pattern check.
func parseMaxConnectionsPerIPOverrides(s string) (map[string]int, error) {
	out := map[string]int{}
	if s == "" {
		return out, nil
	}
	var invalid []string
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		i := strings.LastIndex(kv, ":")
		if i < 0 {
			return nil, fmt.Errorf("Error parsing configuration property 'max.connections.per.ip.overrides': %q is not host:count", kv)
		}
		host, count := strings.TrimSpace(kv[:i]), strings.TrimSpace(kv[i+1:])
		n, err := strconv.ParseInt(count, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("Error parsing configuration property 'max.connections.per.ip.overrides': For input string: %q", count)
		}
		if !validHostPattern(host) {
			invalid = append(invalid, host)
			continue
		}
		out[host] = int(n)
	}
	if len(invalid) > 0 {
		return nil, fmt.Errorf("max.connections.per.ip.overrides contains invalid addresses : %s", strings.Join(invalid, ","))
	}
	return out, nil
}

// validHostPattern is Utils.validHostPattern: [0-9a-zA-Z\-%._:]*.
func validHostPattern(s string) bool {
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case strings.ContainsRune("-%._:", r):
		default:
			return false
		}
	}
	return true
}

// ValidateConnectionQuotaConfig is the part of KafkaConfig.validateValues about connection
// limits, which samsa's config loader does not check: max.connections.per.ip may be 0 only
// with overrides, and every override must be a valid host.
func ValidateConnectionQuotaConfig(cfg *config.Config) error {
	overrides, err := parseMaxConnectionsPerIPOverrides(cfg.Props["max.connections.per.ip.overrides"])
	if err != nil {
		return err
	}
	if connPropInt(cfg.Props, "max.connections.per.ip", math.MaxInt32) == 0 && len(overrides) == 0 {
		return errors.New("requirement failed: max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set.")
	}
	return nil
}

// connPropInt reads an INT config from props, def when absent or unparsable.
func connPropInt(props map[string]string, key string, def int) int {
	v, ok := props[key]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return def
	}
	return int(n)
}

// listenerProp is valuesWithPrefixOverride for one key: listener.name.<l>.<key> when set,
// else the broker-wide key.
func listenerProp(props map[string]string, listener, key string, def int) int {
	if v, ok := props[config.ListenerPrefix(listener)+key]; ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err == nil {
			return int(n)
		}
	}
	return connPropInt(props, key, def)
}

// listenerConnectionQuota is ListenerConnectionQuota: one listener's connection limit and
// creation-rate sensor.
type listenerConnectionQuota struct {
	maxConnections int
	rate           *connRate
	count          int
	// closeExcess closes up to n of the listener's oldest connections (its SocketServer);
	// nil until the server serves.
	closeExcess func(n int) int
}

// ConnectionQuotas is shared by every SocketServer of a broker. Safe for concurrent use.
type ConnectionQuotas struct {
	log                 *logrus.Entry
	now                 func() time.Time
	interBrokerListener string
	windowMs            int64
	samples             int
	maxThrottle         time.Duration // one quota window (maxThrottleTimeMs)
	// fetchIPConfig reads /config/ips/<ip>; nil ignores IPConfigChanged.
	fetchIPConfig func(ip string) (map[string]string, error)
	listIPs       func() ([]string, error)

	mu                  sync.Mutex // Kafka's lock on `counts`
	changed             chan struct{}
	defaultMaxPerIP     int
	maxPerIPOverrides   map[string]int
	brokerMaxConns      int
	counts              map[string]int
	total               int
	listeners           map[string]*listenerConnectionQuota
	brokerRate          *connRate
	defaultIPRate       int
	ipRates             map[string]int
	ipSensors           map[string]*connRate
	lastIPSensorsPurged time.Time
}

// NewConnectionQuotas builds the quotas from cfg with every configured listener registered.
// zk, when not nil, is where IPConfigChanged and LoadIPConfigs read /config/ips.
func NewConnectionQuotas(cfg *config.Config, zk *zkmeta.Client, log *logrus.Entry) (*ConnectionQuotas, error) {
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	overrides, err := parseMaxConnectionsPerIPOverrides(cfg.Props["max.connections.per.ip.overrides"])
	if err != nil {
		return nil, err
	}
	windowSec := connPropInt(cfg.Props, "quota.window.size.seconds", 1)
	q := &ConnectionQuotas{
		log:                 log.WithField("component", "connection.quotas"),
		now:                 time.Now,
		interBrokerListener: cfg.InterBrokerListenerName,
		windowMs:            int64(windowSec) * 1000,
		samples:             connPropInt(cfg.Props, "quota.window.num", 11),
		maxThrottle:         time.Duration(windowSec) * time.Second,
		changed:             make(chan struct{}),
		defaultMaxPerIP:     connPropInt(cfg.Props, "max.connections.per.ip", math.MaxInt32),
		brokerMaxConns:      connPropInt(cfg.Props, "max.connections", math.MaxInt32),
		counts:              map[string]int{},
		listeners:           map[string]*listenerConnectionQuota{},
		defaultIPRate:       math.MaxInt32,
		ipRates:             map[string]int{},
		ipSensors:           map[string]*connRate{},
	}
	q.maxPerIPOverrides = q.resolveOverrides(overrides)
	q.brokerRate = q.newRate(connPropInt(cfg.Props, "max.connection.creation.rate", math.MaxInt32))
	for _, l := range cfg.Listeners {
		q.addListener(cfg, l.Name)
	}
	if zk != nil {
		q.fetchIPConfig = func(ip string) (map[string]string, error) {
			return zk.GetEntityConfig(zkmeta.ConfigTypeIP, ip)
		}
		q.listIPs = func() ([]string, error) {
			names, err := zk.Children(zkmeta.ConfigPath + "/" + zkmeta.ConfigTypeIP)
			if errors.Is(err, zkmeta.ErrNoNode) {
				return nil, nil
			}
			return names, err
		}
	}
	return q, nil
}

func (q *ConnectionQuotas) newRate(limit int) *connRate {
	return &connRate{cfg: rateConfig{samples: q.samples, windowMs: q.windowMs}, bound: float64(limit)}
}

// resolveOverrides turns override hosts into addresses, as Kafka's InetAddress.getByName; a
// host that does not resolve is logged and left out.
func (q *ConnectionQuotas) resolveOverrides(in map[string]int) map[string]int {
	out := make(map[string]int, len(in))
	for host, n := range in {
		ip, err := resolveHost(host)
		if err != nil {
			q.log.WithError(err).WithField("host", host).Warn("max.connections.per.ip.overrides host does not resolve; ignored")
			continue
		}
		out[ip] = n
	}
	return out
}

// addListener is ConnectionQuotas.addListener; a listener already there is left as it is.
func (q *ConnectionQuotas) addListener(cfg *config.Config, name string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.listeners[name]; !ok {
		q.listeners[name] = &listenerConnectionQuota{
			maxConnections: listenerProp(cfg.Props, name, "max.connections", math.MaxInt32),
			rate:           q.newRate(listenerProp(cfg.Props, name, "max.connection.creation.rate", math.MaxInt32)),
		}
	}
	q.notifyLocked()
}

// notifyLocked wakes every acceptor waiting for a slot (counts.notifyAll).
func (q *ConnectionQuotas) notifyLocked() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// register attaches a SocketServer's excess-connection closer to its listener.
func (q *ConnectionQuotas) register(listener string, closeExcess func(n int) int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	l, ok := q.listeners[listener]
	if !ok {
		l = &listenerConnectionQuota{maxConnections: q.brokerMaxConns, rate: q.newRate(int(q.brokerRate.bound))}
		q.listeners[listener] = l
	}
	l.closeExcess = closeExcess
}

// Inc is ConnectionQuotas.inc, called by the acceptor for each accepted connection before
// it is served: it waits for a connection slot and for the broker and listener creation
// rates (returning ctx's error if ctx ends first), then checks the address's creation rate
// (a *connectionThrottledError: not counted, close after the throttle) and its connection
// limit (ErrTooManyConnections: counted, so call Dec, then close). On nil the connection is
// counted; call Dec when it closes.
func (q *ConnectionQuotas) Inc(ctx context.Context, listener, ip string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.waitForConnectionSlotLocked(ctx, listener); err != nil {
		return err
	}
	if err := q.recordIPConnectionMaybeThrottleLocked(listener, ip); err != nil {
		return err
	}
	count := q.counts[ip]
	q.counts[ip] = count + 1
	q.total++
	if l, ok := q.listeners[listener]; ok {
		l.count++
	}
	limit, ok := q.maxPerIPOverrides[ip]
	if !ok {
		limit = q.defaultMaxPerIP
	}
	if count >= limit {
		return fmt.Errorf("%w from /%s (maximum = %d)", ErrTooManyConnections, ip, limit)
	}
	if q.protectedListenerLocked(listener) && q.total > q.brokerMaxConns {
		q.closeExcessLocked()
	}
	return nil
}

// Dec is ConnectionQuotas.dec: a counted connection closed.
func (q *ConnectionQuotas) Dec(listener, ip string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch n := q.counts[ip]; {
	case n <= 0:
		q.log.WithField("ip", ip).Error("Attempted to decrease connection count for address with no connections")
	case n == 1:
		delete(q.counts, ip)
	default:
		q.counts[ip] = n - 1
	}
	if q.total <= 0 {
		q.log.Error("Attempted to decrease total connection count for broker with no connections")
	}
	q.total--
	if l, ok := q.listeners[listener]; ok {
		if l.count == 0 {
			q.log.WithField("listener", listener).Error("Attempted to decrease connection count for listener with no connections")
		} else {
			l.count--
		}
	}
	q.notifyLocked()
}

// Get is the number of counted connections from ip.
func (q *ConnectionQuotas) Get(ip string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.counts[ip]
}

// Total is the number of counted connections.
func (q *ConnectionQuotas) Total() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.total
}

// waitForConnectionSlotLocked records the connection in the broker and listener rate
// sensors and waits, with the lock released, until the throttle time has passed and the
// listener and broker have a free slot.
func (q *ConnectionQuotas) waitForConnectionSlotLocked(ctx context.Context, listener string) error {
	start := q.now()
	throttle := q.recordConnectionAndGetThrottleLocked(listener, start.UnixMilli())
	if throttle <= 0 && q.connectionSlotAvailableLocked(listener) {
		return nil
	}
	end := start.Add(throttle)
	for {
		remaining := end.Sub(q.now())
		if remaining <= 0 && q.connectionSlotAvailableLocked(listener) {
			return nil
		}
		changed := q.changed
		q.mu.Unlock()
		var timeout <-chan time.Time
		var t *time.Timer
		if remaining > 0 {
			t = time.NewTimer(remaining)
			timeout = t.C
		}
		var err error
		select {
		case <-changed:
		case <-timeout:
		case <-ctx.Done():
			err = ctx.Err()
		}
		if t != nil {
			t.Stop()
		}
		q.mu.Lock()
		if err != nil {
			return err
		}
	}
}

func (q *ConnectionQuotas) connectionSlotAvailableLocked(listener string) bool {
	if l, ok := q.listeners[listener]; ok && l.count >= l.maxConnections {
		return false
	}
	if q.protectedListenerLocked(listener) {
		return true
	}
	return q.total < q.brokerMaxConns
}

// protectedListenerLocked: the inter-broker listener is exempt from the broker-wide limit
// when the broker has other listeners.
func (q *ConnectionQuotas) protectedListenerLocked(listener string) bool {
	return q.interBrokerListener == listener && len(q.listeners) > 1
}

// maxConnectionsExceededLocked is maxConnectionsExceeded: the listener must shed a
// connection.
func (q *ConnectionQuotas) maxConnectionsExceededLocked(listener string) bool {
	return q.total > q.brokerMaxConns && !q.protectedListenerLocked(listener)
}

// closeExcessLocked is the processors' closeExcessConnections: while the broker is over
// max.connections, listeners other than the protected one close their oldest connections.
func (q *ConnectionQuotas) closeExcessLocked() {
	excess := q.total - q.brokerMaxConns
	if excess <= 0 {
		return
	}
	names := make([]string, 0, len(q.listeners))
	for n := range q.listeners {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		l := q.listeners[n]
		if excess <= 0 {
			break
		}
		if l.closeExcess == nil || !q.maxConnectionsExceededLocked(n) {
			continue
		}
		excess -= l.closeExcess(excess)
	}
}

// recordConnectionAndGetThrottleLocked is recordConnectionAndGetThrottleTimeMs: the longer of
// the broker's and the listener's throttle (the protected listener skips the broker's).
func (q *ConnectionQuotas) recordConnectionAndGetThrottleLocked(listener string, nowMs int64) time.Duration {
	var throttle time.Duration
	if !q.protectedListenerLocked(listener) {
		throttle = q.brokerRate.recordAndThrottle(nowMs, q.maxThrottle)
	}
	if l, ok := q.listeners[listener]; ok {
		throttle = max(throttle, l.rate.recordAndThrottle(nowMs, q.maxThrottle))
	} else {
		throttle = 0 // Kafka: no listener quota, no delay
	}
	return throttle
}

// recordIPConnectionMaybeThrottleLocked is recordIpConnectionMaybeThrottle: over its rate, the
// address's connection is taken back out of every rate it was recorded in and refused.
func (q *ConnectionQuotas) recordIPConnectionMaybeThrottleLocked(listener, ip string) error {
	limit := q.connectionRateForIPLocked(ip)
	if limit == math.MaxInt32 {
		return nil
	}
	now := q.now()
	nowMs := now.UnixMilli()
	q.purgeIPSensorsLocked(now)
	s, ok := q.ipSensors[ip]
	if !ok {
		s = q.newRate(limit)
		q.ipSensors[ip] = s
	}
	s.lastUsed = now
	throttle := s.recordAndThrottle(nowMs, q.maxThrottle)
	if throttle <= 0 {
		return nil
	}
	s.record(-1, nowMs)
	if !q.protectedListenerLocked(listener) {
		q.brokerRate.record(-1, nowMs)
	}
	if l, ok := q.listeners[listener]; ok {
		l.rate.record(-1, nowMs)
	}
	return &connectionThrottledError{ip: ip, throttle: throttle}
}

// purgeIPSensorsLocked forgets addresses idle for an hour (sensor expiration); at most
// once a minute.
func (q *ConnectionQuotas) purgeIPSensorsLocked(now time.Time) {
	if now.Sub(q.lastIPSensorsPurged) < time.Minute {
		return
	}
	q.lastIPSensorsPurged = now
	for ip, s := range q.ipSensors {
		if now.Sub(s.lastUsed) > ipSensorExpiration {
			delete(q.ipSensors, ip)
		}
	}
}

// ConnectionRateForIP is connectionRateForIp: the address's override, else the default.
func (q *ConnectionQuotas) ConnectionRateForIP(ip string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.connectionRateForIPLocked(ip)
}

func (q *ConnectionQuotas) connectionRateForIPLocked(ip string) int {
	if r, ok := q.ipRates[ip]; ok {
		return r
	}
	return q.defaultIPRate
}

// UpdateIPConnectionRateQuota is updateIpConnectionRateQuota: ip "" or <default> sets the
// default for every address; rate nil removes the override (or resets the default).
func (q *ConnectionQuotas) UpdateIPConnectionRateQuota(ip string, rate *int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if ip == "" || ip == ipEntityDefault {
		q.defaultIPRate = math.MaxInt32
		if rate != nil {
			q.defaultIPRate = *rate
		}
		q.log.WithField("rate", q.defaultIPRate).Info("Updated default max IP connection rate")
		for addr, s := range q.ipSensors {
			s.bound = float64(q.connectionRateForIPLocked(addr))
		}
		return
	}
	if rate != nil {
		q.log.WithFields(logrus.Fields{"ip": ip, "rate": *rate}).Info("Updating max connection rate override")
		q.ipRates[ip] = *rate
	} else {
		q.log.WithField("ip", ip).Info("Removing max connection rate override")
		delete(q.ipRates, ip)
	}
	if s, ok := q.ipSensors[ip]; ok {
		s.bound = float64(q.connectionRateForIPLocked(ip))
	}
}

// IPConfigChanged is IpConfigHandler.processConfigChanges for /config/ips/<ip> (or
// <default>), re-read from ZooKeeper: the config handler calls it on each ips/<name>
// notification.
func (q *ConnectionQuotas) IPConfigChanged(ip string) error {
	if q.fetchIPConfig == nil {
		return nil
	}
	cfg, err := q.fetchIPConfig(ip)
	if err != nil {
		return fmt.Errorf("read ip quota %s: %w", ip, err)
	}
	return q.applyIPConfig(ip, cfg)
}

func (q *ConnectionQuotas) applyIPConfig(ip string, cfg map[string]string) error {
	var rate *int
	if v, ok := cfg[IPConnectionCreationRateConfig]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return fmt.Errorf("ip quota %s: %s=%q: %w", ip, IPConnectionCreationRateConfig, v, err)
		}
		r := int(n)
		rate = &r
	}
	addr := ip
	if ip != ipEntityDefault {
		a, err := resolveHost(ip)
		if err != nil {
			return fmt.Errorf("Unable to resolve address %s", ip)
		}
		addr = a
	}
	q.UpdateIPConnectionRateQuota(addr, rate)
	return nil
}

// LoadIPConfigs applies every /config/ips entity, as ZkConfigManager.startup does for each
// config type before notifications are processed.
func (q *ConnectionQuotas) LoadIPConfigs() error {
	if q.listIPs == nil {
		return nil
	}
	names, err := q.listIPs()
	if err != nil {
		return fmt.Errorf("list ip quotas: %w", err)
	}
	var errs []error
	for _, n := range names {
		if err := q.IPConfigChanged(n); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ReconfigurableConfigs implements Reconfigurable: SocketServer.ReconfigurableConfigs and
// each listener's prefixed max.connections and max.connection.creation.rate.
func (q *ConnectionQuotas) ReconfigurableConfigs() []string {
	keys := append([]string(nil), connectionQuotaKeys...)
	q.mu.Lock()
	defer q.mu.Unlock()
	names := make([]string, 0, len(q.listeners))
	for n := range q.listeners {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, k := range listenerConnectionQuotaKeys {
			keys = append(keys, config.ListenerPrefix(n)+k)
		}
	}
	return keys
}

// ValidateReconfiguration implements Reconfigurable: KafkaConfig.validateValues' connection
// rules and ListenerConnectionQuota.validateReconfiguration (a listener's effective limit
// and rate must be positive).
func (q *ConnectionQuotas) ValidateReconfiguration(newCfg *config.Config) error {
	if err := ValidateConnectionQuotaConfig(newCfg); err != nil {
		return err
	}
	q.mu.Lock()
	names := make([]string, 0, len(q.listeners))
	for n := range q.listeners {
		names = append(names, n)
	}
	q.mu.Unlock()
	sort.Strings(names)
	for _, n := range names {
		if v := listenerProp(newCfg.Props, n, "max.connections", math.MaxInt32); v <= 0 {
			return fmt.Errorf("Invalid max.connections %d", v)
		}
		if v := listenerProp(newCfg.Props, n, "max.connection.creation.rate", math.MaxInt32); v <= 0 {
			return fmt.Errorf("Invalid max.connection.creation.rate %d", v)
		}
	}
	return nil
}

// Reconfigure implements Reconfigurable (SocketServer.reconfigure and each
// ListenerConnectionQuota.reconfigure). Waiting acceptors re-check their slot; a lower
// max.connections makes listeners close their oldest connections.
func (q *ConnectionQuotas) Reconfigure(oldCfg, newCfg *config.Config) {
	overrides, err := parseMaxConnectionsPerIPOverrides(newCfg.Props["max.connections.per.ip.overrides"])
	if err != nil { // validated before; keep the old overrides
		q.log.WithError(err).Warn("invalid max.connections.per.ip.overrides; keeping the previous overrides")
		overrides = nil
	}
	var resolved map[string]int
	if overrides != nil && newCfg.Props["max.connections.per.ip.overrides"] != oldCfg.Props["max.connections.per.ip.overrides"] {
		resolved = q.resolveOverrides(overrides) // may resolve names: outside the lock
	}

	q.mu.Lock()
	defer q.mu.Unlock()
	log := q.log
	if v := connPropInt(newCfg.Props, "max.connections.per.ip", math.MaxInt32); v != q.defaultMaxPerIP {
		log.WithField("max_connections_per_ip", v).Info("Updating maxConnectionsPerIp")
		q.defaultMaxPerIP = v
	}
	if resolved != nil {
		log.WithField("overrides", newCfg.Props["max.connections.per.ip.overrides"]).Info("Updating maxConnectionsPerIpOverrides")
		q.maxPerIPOverrides = resolved
	}
	if v := connPropInt(newCfg.Props, "max.connections", math.MaxInt32); v != q.brokerMaxConns {
		log.WithField("max_connections", v).Info("Updating broker-wide maxConnections")
		q.brokerMaxConns = v
	}
	if v := connPropInt(newCfg.Props, "max.connection.creation.rate", math.MaxInt32); float64(v) != q.brokerRate.bound {
		// A connection already waiting keeps its delay, as in Kafka.
		log.WithField("max_connection_creation_rate", v).Info("Updating broker-wide maxConnectionCreationRate")
		q.brokerRate.bound = float64(v)
	}
	for name, l := range q.listeners {
		maxConns := listenerProp(newCfg.Props, name, "max.connections", math.MaxInt32)
		rate := listenerProp(newCfg.Props, name, "max.connection.creation.rate", math.MaxInt32)
		if maxConns != l.maxConnections || float64(rate) != l.rate.bound {
			log.WithFields(logrus.Fields{"listener": name, "max_connections": maxConns, "max_connection_creation_rate": rate}).
				Info("Updating listener connection quotas")
		}
		l.maxConnections = maxConns
		l.rate.bound = float64(rate)
	}
	q.notifyLocked()
	q.closeExcessLocked()
}

// connRate is a Kafka Sensor holding one Rate (quota_rate.go's windowedRate) with an upper
// bound, the way ConnectionQuotas uses it.
type connRate struct {
	cfg      rateConfig
	rate     windowedRate
	bound    float64
	lastUsed time.Time
}

func (r *connRate) record(v float64, nowMs int64) { r.rate.record(r.cfg, v, nowMs) }
func (r *connRate) windowSize(nowMs int64) int64  { return r.rate.windowSize(r.cfg, nowMs) }
func (r *connRate) measure(nowMs int64) float64   { return r.rate.measure(r.cfg, nowMs) }

// recordAndThrottle records one event and, when the rate is then over the bound, returns the
// delay that brings it back (QuotaUtils.boundedThrottleTime), capped at maxThrottle.
func (r *connRate) recordAndThrottle(nowMs int64, maxThrottle time.Duration) time.Duration {
	r.record(1, nowMs)
	v := r.measure(nowMs)
	if v <= r.bound {
		return 0
	}
	if r.bound <= 0 { // Kafka's division by a zero quota gives an infinite delay, then the cap
		return maxThrottle
	}
	ms := math.Round((v - r.bound) / r.bound * float64(r.windowSize(nowMs)))
	d := time.Duration(ms) * time.Millisecond
	return min(d, maxThrottle)
}
