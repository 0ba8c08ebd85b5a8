package broker

// reconfigurables.go holds the broker components that apply dynamic broker configs live,
// each a Reconfigurable (Kafka's BrokerReconfigurable) registered with the
// DynamicBrokerConfig through (*Broker).reconfigurables:
//
//   - dynamicLogConfig (DynamicLogConfig): the broker defaults of the topic keys reach every
//     live log and the logs created later; topic overrides still win. A switch of
//     unclean.leader.election.enable to true makes the controller elect leaderless
//     partitions again (KafkaController.enableDefaultUncleanLeaderElection).
//   - logCleanerReconfigurable (LogCleaner): log.cleaner.* restart the cleaner threads.
//   - dynamicThreadPool (BrokerDynamicThreadPool with SocketServer's num.network.threads):
//     num.replica.fetchers resizes the fetcher pool (ReplicaFetcherManager.resizeThreadPool),
//     num.recovery.threads.per.data.dir the log closers. samsa has no request handler,
//     network processor or scheduler pools (a goroutine serves each connection; background
//     tasks have their own goroutines), so num.io.threads, num.network.threads and
//     background.threads are validated as Kafka does, stored and otherwise have no effect.
//   - listenerTLSReconfigurable (a listener's SslFactory and SslChannelBuilder): new key and
//     trust stores, and the listener's ssl.client.auth, protocols, cipher suites and principal
//     mapping rules, for new handshakes; open connections are kept.
//   - listenerSASLReconfigurable (SaslChannelBuilder): the listener's enabled mechanisms and
//     JAAS entries (PLAIN users...) for new authentications; open sessions are kept.
//   - producerStateReconfigurable (ProducerStateManagerConfig): producer.id.expiration.ms for
//     every log's next producer expiry check.
//   - interBrokerSASLReconfigurable (DynamicListenerConfig's inter-broker mechanism): the
//     shared inter-broker dialer logs in to peers with the new mechanism on new connections.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	kclientsasl "github.com/twmb/franz-go/pkg/sasl"

	"github.com/samsa-kafka/samsa/controller"
	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/kclient"
	"github.com/samsa-kafka/samsa/internal/security/sasl"
	"github.com/samsa-kafka/samsa/logstore"
)

// reconfigurables are this broker's components that apply dynamic configs, for
// DynamicBrokerConfig.AddReconfigurable. Call once the log manager, replica manager,
// controller and listeners exist (after the listeners are bound).
func (b *Broker) reconfigurables() []Reconfigurable {
	cur := b.cfg
	if b.apis != nil {
		cur = b.apis.config()
	}
	log := b.log.WithField("component", "dynamic.config")
	rs := []Reconfigurable{
		&dynamicLogConfig{logs: b.logs, ctrl: b.ctrl, log: log},
		&logCleanerReconfigurable{logs: b.logs},
		newDynamicThreadPool(cur, b.replicas, b.logs, log),
		&producerStateReconfigurable{logs: b.logs},
		&interBrokerSASLReconfigurable{b: b, log: log},
	}
	names := make([]string, 0, len(b.tlsReloaders))
	for name := range b.tlsReloaders {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		rs = append(rs, &listenerTLSReconfigurable{r: b.tlsReloaders[name], log: log.WithField("listener", name)})
	}
	b.listenersMu.RLock()
	defer b.listenersMu.RUnlock()
	for _, l := range b.listeners {
		if l.sec != nil && l.sec.liveSASL != nil {
			rs = append(rs, &listenerSASLReconfigurable{listener: l.cfg.Name, cur: l.sec.liveSASL,
				build: b.saslServerFrom, log: log.WithField("listener", l.cfg.Name)})
		}
	}
	return rs
}

// dynamicLogConfigKeys are DynamicLogConfig.ReconfigurableConfigs: the broker synonym of
// every topic key (the primary one: log.retention.ms, not .hours) except
// log.message.format.version, which Kafka leaves out until every broker supports it.
var dynamicLogConfigKeys = func() []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range logstore.TopicConfigNames() {
		k := logstore.BrokerSynonym(t)
		if k == "" || k == "log.message.format.version" || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}()

// DynamicLogConfigKeys returns the broker keys whose dynamic change reaches the live logs.
func DynamicLogConfigKeys() []string { return append([]string(nil), dynamicLogConfigKeys...) }

// dynamicLogConfig is Kafka's DynamicLogConfig.
type dynamicLogConfig struct {
	logs *logstore.Manager
	ctrl *controller.Controller
	log  *logrus.Entry
}

func (d *dynamicLogConfig) ReconfigurableConfigs() []string { return DynamicLogConfigKeys() }

// ValidateReconfiguration is DynamicLogConfig.validateReconfiguration (the local retention
// bounds against the total ones) plus a check that the defaults resolve at all.
func (d *dynamicLogConfig) ValidateReconfiguration(newCfg *config.Config) error {
	p := newCfg.Props
	num := func(k string, def int64) int64 {
		if n, err := strconv.ParseInt(p[k], 10, 64); err == nil {
			return n
		}
		return def
	}
	retMs, localMs := num("log.retention.ms", 604800000), num("log.local.retention.ms", -2)
	if retMs != -1 && localMs != -2 {
		if localMs == -1 {
			return fmt.Errorf("Invalid value %d for configuration log.local.retention.ms: Value must not be -1 as log.retention.ms value is set as %d.", localMs, retMs)
		}
		if localMs > retMs {
			return fmt.Errorf("Invalid value %d for configuration log.local.retention.ms: Value must not be more than log.retention.ms property value: %d", localMs, retMs)
		}
	}
	retBytes, localBytes := num("log.retention.bytes", -1), num("log.local.retention.bytes", -2)
	if retBytes > -1 && localBytes != -2 {
		if localBytes == -1 {
			return fmt.Errorf("Invalid value %d for configuration log.local.retention.bytes: Value must not be -1 as log.retention.bytes value is set as %d.", localBytes, retBytes)
		}
		if localBytes > retBytes {
			return fmt.Errorf("Invalid value %d for configuration log.local.retention.bytes: Value must not be more than log.retention.bytes property value: %d", localBytes, retBytes)
		}
	}
	if _, err := logstore.NewLogConfig(p, nil); err != nil {
		return fmt.Errorf("broker log defaults: %w", err)
	}
	return nil
}

// Reconfigure is DynamicLogConfig.reconfigure.
func (d *dynamicLogConfig) Reconfigure(oldCfg, newCfg *config.Config) {
	if d.logs != nil {
		d.logs.SetBrokerProps(newCfg.Props)
	}
	if d.ctrl != nil && oldCfg.UncleanLeaderElectionEnable != newCfg.UncleanLeaderElectionEnable {
		d.log.WithField("unclean_leader_election_enable", newCfg.UncleanLeaderElectionEnable).Info("broker default of unclean leader election changed")
		d.ctrl.SetDefaultUncleanLeaderElection(newCfg.UncleanLeaderElectionEnable)
	}
}

// logCleanerReconfigurable is LogCleaner as a BrokerReconfigurable.
type logCleanerReconfigurable struct{ logs *logstore.Manager }

// logCleanerKeys are LogCleaner.ReconfigurableConfigs (message.max.bytes bounds Kafka's
// I/O buffer growth; samsa's cleaner reads whole batches, so it changes nothing here).
var logCleanerKeys = []string{
	"log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
	"log.cleaner.io.buffer.size", "message.max.bytes", "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms",
}

func (c *logCleanerReconfigurable) ReconfigurableConfigs() []string {
	return append([]string(nil), logCleanerKeys...)
}

func (c *logCleanerReconfigurable) ValidateReconfiguration(newCfg *config.Config) error {
	if c.logs == nil {
		return nil
	}
	return c.logs.ValidateCleanerSettings(logstore.CleanerSettingsFromProps(newCfg.Props))
}

func (c *logCleanerReconfigurable) Reconfigure(_, newCfg *config.Config) {
	if c.logs != nil {
		c.logs.ReconfigureCleaner(logstore.CleanerSettingsFromProps(newCfg.Props))
	}
}

// threadPoolKeys are DynamicThreadPool.ReconfigurableConfigs and SocketServer's
// num.network.threads, with what samsa does on a change.
var threadPoolKeys = []string{"num.io.threads", "num.network.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir", "background.threads"}

// dynamicThreadPool is BrokerDynamicThreadPool (and the network threads part of
// SocketServer's reconfiguration).
type dynamicThreadPool struct {
	replicas *ReplicaManager
	logs     *logstore.Manager
	log      *logrus.Entry

	mu  sync.Mutex
	cur map[string]int // the counts in force
}

func newDynamicThreadPool(cur *config.Config, replicas *ReplicaManager, logs *logstore.Manager, log *logrus.Entry) *dynamicThreadPool {
	return &dynamicThreadPool{replicas: replicas, logs: logs, log: log, cur: threadCounts(cur)}
}

// threadCounts reads the pool sizes; an unset or unreadable one counts as 1.
func threadCounts(c *config.Config) map[string]int {
	out := make(map[string]int, len(threadPoolKeys))
	for _, k := range threadPoolKeys {
		n, err := strconv.Atoi(c.Props[k])
		if err != nil {
			n = 1
		}
		out[k] = n
	}
	return out
}

func (p *dynamicThreadPool) ReconfigurableConfigs() []string {
	return append([]string(nil), threadPoolKeys...)
}

// ValidateReconfiguration is DynamicThreadPool.validateReconfiguration: a changed count must
// be at least 1 and between half and double the current one.
func (p *dynamicThreadPool) ValidateReconfiguration(newCfg *config.Config) error {
	next := threadCounts(newCfg)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range threadPoolKeys {
		n, old := next[k], p.cur[k]
		if n == old {
			continue
		}
		msg := fmt.Sprintf("Dynamic thread count update validation failed for %s=%d", k, n)
		switch {
		case n <= 0:
			return fmt.Errorf("%s, value should be at least 1", msg)
		case n < old/2:
			return fmt.Errorf("%s, value should be at least half the current value %d", msg, old)
		case n > old*2:
			return fmt.Errorf("%s, value should not be greater than double the current value %d", msg, old)
		}
	}
	return nil
}

func (p *dynamicThreadPool) Reconfigure(_, newCfg *config.Config) {
	next := threadCounts(newCfg)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range threadPoolKeys {
		n, old := next[k], p.cur[k]
		if n == old {
			continue
		}
		p.cur[k] = n
		log := p.log.WithFields(logrus.Fields{"config": k, "old": old, "new": n})
		switch k {
		case "num.replica.fetchers":
			if p.replicas != nil {
				p.replicas.fetchers.resizeThreadPool(n)
			}
		case "num.recovery.threads.per.data.dir":
			if p.logs != nil {
				p.logs.SetRecoveryThreadsPerDir(n)
			}
		default:
			log.Info("thread count updated; samsa has no such pool, so it has no effect")
			continue
		}
		log.Info("resized thread pool")
	}
}

// resizeThreadPool is AbstractFetcherManager.resizeThreadPool: every partition is
// reassigned by the new fetcher id hash, fetchers with an id past the new size stop and
// fetchers left without partitions are shut down. A partition that stays with its fetcher
// keeps its state; one that moves continues from the same fetch offset and epoch.
func (m *ReplicaFetcherManager) resizeThreadPool(n int) {
	if n < 1 {
		n = 1
	}
	m.mu.Lock()
	cur := m.cfg.NumFetchers
	m.cfg.NumFetchers = n
	if n == cur || m.ctx == nil || m.ctx.Err() != nil {
		m.mu.Unlock()
		return
	}
	type held struct {
		from fetcherKey
		st   *fetchState
	}
	var all []held
	for key, f := range m.fetchers {
		f.mu.Lock() // waits for a response being processed
		for tp, st := range f.partitions {
			all = append(all, held{key, st})
			delete(f.partitions, tp)
		}
		f.mu.Unlock()
	}
	for _, h := range all {
		tp := h.st.p.tp
		key := fetcherKey{h.from.source, m.fetcherID(tp)}
		f, ok := m.fetchers[key]
		if !ok {
			f = newReplicaFetcher(m, key)
			m.fetchers[key] = f
			m.wg.Add(1)
			go func() {
				defer m.wg.Done()
				f.run()
			}()
		}
		st := h.st
		if key != h.from {
			// A fresh value: a response the old fetcher still has in flight is dropped.
			cp := *st
			st = &cp
		}
		f.mu.Lock()
		f.partitions[tp] = st
		f.mu.Unlock()
		f.wakeUp()
	}
	var idle []*replicaFetcher
	for key, f := range m.fetchers {
		f.mu.Lock()
		empty := len(f.partitions) == 0
		f.mu.Unlock()
		if empty || key.id >= n {
			delete(m.fetchers, key)
			idle = append(idle, f)
		}
	}
	m.mu.Unlock()
	for _, f := range idle {
		f.stop()
	}
	m.log.WithFields(logrus.Fields{"old": cur, "new": n, "partitions": len(all)}).Info("resized replica fetcher pool")
}

// listenerTLSReconfigurable is one TLS listener's SslFactory as a reconfigurable.
type listenerTLSReconfigurable struct {
	r   *serverTLSReloader
	log *logrus.Entry
}

// ReconfigurableConfigs are the store keys under the listener's prefix (the way Kafka
// takes them per broker) and unprefixed, and the listener's other ssl.* settings.
func (l *listenerTLSReconfigurable) ReconfigurableConfigs() []string {
	prefix := config.ListenerPrefix(l.r.listener)
	out := make([]string, 0, 2*len(sslReconfigurableKeys)+len(sslListenerKeys))
	for _, k := range sslReconfigurableKeys {
		out = append(out, prefix+k, k)
	}
	for _, k := range sslListenerKeys {
		out = append(out, prefix+k)
	}
	return out
}

// ValidateReconfiguration builds the new configuration (stores, client auth, protocols,
// cipher suites, principal mapping) and checks the stores against the current ones.
func (l *listenerTLSReconfigurable) ValidateReconfiguration(newCfg *config.Config) error {
	_, _, err := l.r.build(newCfg.Props)
	return err
}

// Reconfigure swaps the new configuration in; handshakes from now on use it, open
// connections stay. The stores are read again even when their locations did not change
// (Kafka reloads a key store file updated in place).
func (l *listenerTLSReconfigurable) Reconfigure(_, newCfg *config.Config) {
	if err := l.r.reload(newCfg.Props); err != nil {
		// Validated just before; a file changed in between. Keep serving the old stores.
		l.log.WithError(err).Error("could not reload the listener's SSL configuration; keeping the current one")
		return
	}
	l.log.Info("reloaded the listener's SSL configuration")
}

// listenerSASLReconfigurable is one SASL listener's SaslChannelBuilder as a reconfigurable:
// the SASL server new authentications (and re-authentications) start on.
type listenerSASLReconfigurable struct {
	listener string
	cur      *atomic.Pointer[sasl.Server]
	build    func(props map[string]string, listener string) (*sasl.Server, error)
	log      *logrus.Entry
}

// ReconfigurableConfigs are the listener-prefixed sasl.enabled.mechanisms and the JAAS
// entry of every mechanism samsa serves.
func (l *listenerSASLReconfigurable) ReconfigurableConfigs() []string {
	prefix := config.ListenerPrefix(l.listener)
	out := []string{prefix + "sasl.enabled.mechanisms"}
	for _, m := range sasl.SupportedMechanisms() {
		out = append(out, prefix+strings.ToLower(m)+".sasl.jaas.config")
	}
	return out
}

// ValidateReconfiguration builds the new server, with the start-up checks (every enabled
// mechanism needs its JAAS entry with the right login module).
func (l *listenerSASLReconfigurable) ValidateReconfiguration(newCfg *config.Config) error {
	_, err := l.build(newCfg.Props, l.listener)
	return err
}

// Reconfigure swaps the new server in; authenticated connections keep their sessions.
func (l *listenerSASLReconfigurable) Reconfigure(_, newCfg *config.Config) {
	srv, err := l.build(newCfg.Props, l.listener)
	if err != nil {
		l.log.WithError(err).Error("could not rebuild the listener's SASL server; keeping the current one")
		return
	}
	l.cur.Store(srv)
	l.log.WithField("mechanisms", srv.Mechanisms()).Info("reloaded the listener's SASL configuration")
}

// producerStateReconfigurable is ProducerStateManagerConfig as a reconfigurable.
type producerStateReconfigurable struct{ logs *logstore.Manager }

func (p *producerStateReconfigurable) ReconfigurableConfigs() []string {
	return []string{"producer.id.expiration.ms"}
}

// producerIDExpirationMs reads producer.id.expiration.ms (1 day when unset).
func producerIDExpirationMs(c *config.Config) (int64, error) {
	v, ok := c.Props["producer.id.expiration.ms"]
	if !ok {
		return logstore.DefaultProducerIDExpirationMs, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("Invalid value %s for configuration producer.id.expiration.ms: Not a number of type LONG", v)
	}
	return n, nil
}

// ValidateReconfiguration is ProducerStateManagerConfig.validateReconfiguration (the
// config's own bound, at least 1, included).
func (p *producerStateReconfigurable) ValidateReconfiguration(newCfg *config.Config) error {
	n, err := producerIDExpirationMs(newCfg)
	if err != nil {
		return err
	}
	if n < 1 {
		return fmt.Errorf("producer.id.expiration.ms cannot be less than 1, current value is %d", n)
	}
	return nil
}

func (p *producerStateReconfigurable) Reconfigure(_, newCfg *config.Config) {
	if n, err := producerIDExpirationMs(newCfg); err == nil && n > 0 && p.logs != nil {
		p.logs.SetProducerIDExpiration(time.Duration(n) * time.Millisecond)
	}
}

// interBrokerSASLReconfigurable switches the inter-broker dialer's SASL mechanism.
type interBrokerSASLReconfigurable struct {
	b   *Broker
	log *logrus.Entry
}

func (r *interBrokerSASLReconfigurable) ReconfigurableConfigs() []string {
	return []string{"sasl.mechanism.inter.broker.protocol"}
}

// interBrokerSASL reports the inter-broker listener and whether it uses SASL.
func (r *interBrokerSASLReconfigurable) interBrokerSASL() (string, bool) {
	name := r.b.cfg.InterBrokerListenerName
	if name == "" {
		name = ProtocolPlaintext
	}
	proto := r.b.cfg.ListenerSecurityProtocolMap[name]
	return name, proto == ProtocolSASLPlaintext || proto == ProtocolSASLSSL
}

// build makes the new mechanism as interBrokerDialer does, after Kafka's check that the
// inter-broker listener enables it. Nil when inter-broker traffic does not use SASL.
func (r *interBrokerSASLReconfigurable) build(props map[string]string) (kclientsasl.Mechanism, error) {
	name, isSASL := r.interBrokerSASL()
	if !isSASL {
		return nil, nil
	}
	mech := strings.TrimSpace(props["sasl.mechanism.inter.broker.protocol"])
	if mech == "" {
		mech = "GSSAPI"
	}
	srv, err := r.b.saslServerFrom(props, name)
	if err != nil {
		return nil, err
	}
	if !srv.Enabled(mech) {
		return nil, fmt.Errorf("sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms of the inter-broker listener %s (%v) when SASL is used for inter-broker communication", name, srv.Mechanisms())
	}
	entry, err := interBrokerJAAS(props, name, mech)
	if err != nil {
		return nil, fmt.Errorf("inter-broker listener %s: %w", name, err)
	}
	m, err := kclient.MechanismFromJAAS(mech, entry.LoginModule, entry.Options, nil)
	if err != nil {
		return nil, fmt.Errorf("inter-broker listener %s: sasl.mechanism.inter.broker.protocol %s: %w", name, mech, err)
	}
	return m, nil
}

func (r *interBrokerSASLReconfigurable) ValidateReconfiguration(newCfg *config.Config) error {
	_, err := r.build(newCfg.Props)
	return err
}

// Reconfigure swaps the mechanism in; connections already open stay authenticated.
func (r *interBrokerSASLReconfigurable) Reconfigure(_, newCfg *config.Config) {
	if _, isSASL := r.interBrokerSASL(); !isSASL || r.b.dialer == nil {
		return
	}
	m, err := r.build(newCfg.Props)
	if err != nil {
		r.log.WithError(err).Error("could not build the new inter-broker SASL mechanism; keeping the current one")
		return
	}
	r.b.dialer.SetSASL(m)
	r.log.WithField("mechanism", m.Name()).Info("inter-broker connections now authenticate with the new SASL mechanism")
}
