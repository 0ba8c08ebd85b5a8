package broker

import (
	"context"
	"fmt"
	"maps"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/samsa-kafka/samsa/internal/config"
	"github.com/samsa-kafka/samsa/internal/security/sasl"
	"github.com/samsa-kafka/samsa/internal/security/tlsconf"
	"github.com/samsa-kafka/samsa/internal/sockopt"
	"github.com/samsa-kafka/samsa/zkmeta"
)

// bindListener binds one `listeners` entry; start-up and dynamic additions share it so both
// report a clash the same way. socket.receive.buffer.bytes is set on the listening socket,
// as Kafka's Acceptor does, so accepted connections inherit it from their first segment.
func bindListener(l config.Listener, sec *ListenerSecurity, cfg *config.Config) (*boundListener, error) {
	lc := net.ListenConfig{Control: sockopt.Control(0, int(propInt(cfg.Props, "socket.receive.buffer.bytes", 102400)))}
	ln, err := lc.Listen(context.Background(), "tcp", net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))))
	if err != nil {
		return nil, fmt.Errorf("listen on %s://%s:%d: %w", l.Name, l.Host, l.Port, err)
	}
	return &boundListener{cfg: l, ln: ln, port: int32(ln.Addr().(*net.TCPAddr).Port), sec: sec}, nil
}

// serveListener starts bl's SocketServer with its security and the broker's connection
// quotas, so a listener added at runtime is served exactly like one from start-up.
func (b *Broker) serveListener(bl *boundListener, cfg *config.Config, quotas *ConnectionQuotas) {
	maxReq := cfg.SocketRequestMaxBytes
	if maxReq <= 0 {
		maxReq = 104857600
	}
	log := b.log.WithField("listener", bl.cfg.Name)
	bl.server = NewSocketServer(bl.ln, bl.cfg.Name, b.apis, maxReq, log)
	bl.server.Security = bl.sec
	bl.server.Quotas = quotas
	bl.server.SendBufferBytes = int(propInt(cfg.Props, "socket.send.buffer.bytes", 102400))
	b.wg.Add(1)
	go func(s *SocketServer) {
		defer b.wg.Done()
		if err := s.Serve(b.runCtx); err != nil && b.runCtx.Err() == nil {
			log.WithError(err).Error("socket server stopped")
		}
	}(bl.server)
}

// newListenerSecurity builds one listener's security from cfg (nil for PLAINTEXT): the
// per-listener part of listenerSecurities, for a listener that did not exist at start-up.
func (b *Broker) newListenerSecurity(cfg *config.Config, l config.Listener) (*ListenerSecurity, error) {
	proto := l.SecurityProtocol
	if proto == "" || proto == ProtocolPlaintext {
		return nil, nil
	}
	props := cfg.Props
	ls := &ListenerSecurity{
		Protocol:        proto,
		ReauthMax:       listenerMs(props, l.Name, "connections.max.reauth.ms", 0),
		FailedAuthDelay: listenerMs(props, l.Name, "connection.failed.authentication.delay.ms", 100),
	}
	if proto == ProtocolSSL || proto == ProtocolSASLSSL {
		tc, err := tlsconf.ServerConfig(props, l.Name)
		if err != nil {
			return nil, listenerError(l, err)
		}
		ls.TLS = tc
	}
	if proto == ProtocolSSL {
		pm, err := tlsconf.PrincipalMapperFor(props, l.Name)
		if err != nil {
			return nil, listenerError(l, err)
		}
		ls.Principals = pm
	}
	if proto == ProtocolSASLPlaintext || proto == ProtocolSASLSSL {
		srv, err := sasl.NewServer(sasl.Config{Props: props, Listener: l.Name, Credentials: b.scram})
		if err != nil {
			return nil, listenerError(l, err)
		}
		ls.SASL = srv
	}
	if err := ls.Validate(); err != nil {
		return nil, listenerError(l, err)
	}
	return ls, nil
}

// dynamicListenerConfig is Kafka's DynamicListenerConfig: listeners added to `listeners`
// are bound and served, removed ones closed, and the registration in ZooKeeper rewritten so
// the controller and the other brokers learn the new endpoints.
type dynamicListenerConfig struct {
	b      *Broker
	quotas *ConnectionQuotas
	log    *logrus.Entry
}

func (r *dynamicListenerConfig) ReconfigurableConfigs() []string {
	return []string{"advertised.listeners", "listener.security.protocol.map", "listeners"}
}

// listenerMutableKeys are the listener.name.<l>.* keys an existing listener may see change
// with its listeners update (key stores and connection limits are reloaded on their own).
var listenerMutableKeys = func() map[string]bool {
	m := map[string]bool{"max.connections": true, "max.connection.creation.rate": true, "num.network.threads": true}
	for _, k := range sslReconfigurableKeys {
		m[k] = true
	}
	return m
}()

// immutableListenerProps are cfg's listener.name.<name>.* keys an existing listener keeps.
func immutableListenerProps(cfg *config.Config, name string) map[string]string {
	prefix := "listener.name." + strings.ToLower(name) + "."
	out := map[string]string{}
	for k, v := range cfg.Props {
		if rest, ok := strings.CutPrefix(strings.ToLower(k), prefix); ok && !listenerMutableKeys[rest] {
			out[rest] = v
		}
	}
	return out
}

func listenerNames(ls []config.Listener) string {
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.String()
	}
	return strings.Join(names, ",")
}

func (r *dynamicListenerConfig) ValidateReconfiguration(newCfg *config.Config) error {
	old := r.b.dynConfig.Current()
	newByName := map[string]config.Listener{}
	for _, l := range newCfg.Listeners {
		newByName[l.Name] = l
	}
	adv := newCfg.AdvertisedListeners
	if len(adv) == 0 {
		adv = newCfg.Listeners
	}
	for _, l := range adv {
		if _, ok := newByName[l.Name]; !ok {
			return fmt.Errorf("Advertised listeners '%s' must be a subset of listeners '%s'", listenerNames(adv), listenerNames(newCfg.Listeners))
		}
	}
	for _, l := range newCfg.Listeners {
		if _, ok := newCfg.ListenerSecurityProtocolMap[l.Name]; !ok {
			return fmt.Errorf("Listeners '%s' must be subset of listener map '%v'", listenerNames(newCfg.Listeners), newCfg.ListenerSecurityProtocolMap)
		}
	}
	for _, o := range old.Listeners {
		n, ok := newByName[o.Name]
		if !ok {
			if o.Name == newCfg.InterBrokerListenerName {
				return fmt.Errorf("the inter-broker listener %s cannot be removed", o.Name)
			}
			if o.Name == old.ControlPlaneListenerName {
				return fmt.Errorf("the control plane listener %s cannot be removed", o.Name)
			}
			continue
		}
		if !maps.Equal(immutableListenerProps(newCfg, o.Name), immutableListenerProps(old, o.Name)) {
			return fmt.Errorf("Configs cannot be updated dynamically for existing listener %s, restart broker or create a new listener for update", o.Name)
		}
		if n.SecurityProtocol != o.SecurityProtocol {
			return fmt.Errorf("Security protocol cannot be updated for existing listener %s", o.Name)
		}
		// Kafka ignores such a change silently; refusing it keeps the stored value honest.
		if n.Host != o.Host || n.Port != o.Port && n.Port != r.b.boundPort(o.Name) {
			return fmt.Errorf("host and port cannot be updated for existing listener %s; remove it and add it under a new name", o.Name)
		}
	}
	if !slices.ContainsFunc(adv, func(l config.Listener) bool { return l.Name == newCfg.InterBrokerListenerName }) {
		return fmt.Errorf("Advertised listener must be specified for inter-broker listener %s", newCfg.InterBrokerListenerName)
	}
	// New listeners' security must build now, so a bad key store is refused, not logged.
	for _, l := range r.added(old, newCfg) {
		if _, err := r.b.newListenerSecurity(newCfg, l); err != nil {
			return err
		}
	}
	return nil
}

// added are newCfg's listeners whose name old does not have.
func (r *dynamicListenerConfig) added(old, newCfg *config.Config) []config.Listener {
	var out []config.Listener
	for _, l := range newCfg.Listeners {
		if !slices.ContainsFunc(old.Listeners, func(o config.Listener) bool { return o.Name == l.Name }) {
			out = append(out, l)
		}
	}
	return out
}

func (r *dynamicListenerConfig) Reconfigure(oldCfg, newCfg *config.Config) {
	b := r.b
	removed := r.added(newCfg, oldCfg)
	added := r.added(oldCfg, newCfg)

	b.listenersMu.Lock()
	if b.listenersClosed {
		b.listenersMu.Unlock()
		return
	}
	var closing []*boundListener
	if len(removed) > 0 {
		keep := b.listeners[:0:0]
		for _, bl := range b.listeners {
			if slices.ContainsFunc(removed, func(l config.Listener) bool { return l.Name == bl.cfg.Name }) {
				closing = append(closing, bl)
			} else {
				keep = append(keep, bl)
			}
		}
		b.listeners = keep
	}
	for _, l := range added {
		sec, err := b.newListenerSecurity(newCfg, l)
		if err == nil {
			var bl *boundListener
			if bl, err = bindListener(l, sec, newCfg); err == nil {
				r.quotas.addListener(newCfg, l.Name)
				b.serveListener(bl, newCfg, r.quotas)
				b.listeners = append(b.listeners, bl)
				r.log.WithField("listener", bl.cfg.Name).WithField("port", bl.port).Info("listener added")
			}
		}
		if err != nil {
			// Kafka logs a failed addition and carries on with the others.
			r.log.WithError(err).WithField("listener", l.Name).Error("could not add listener")
		}
	}
	b.listenersMu.Unlock()
	for _, bl := range closing {
		bl.server.Close()
		r.log.WithField("listener", bl.cfg.Name).Info("listener removed")
	}

	oldEps, newEps := b.endpointsFor(oldCfg), b.endpointsFor(newCfg)
	if reflect.DeepEqual(oldEps, newEps) {
		return
	}
	info := zkmeta.BrokerInfo{ID: b.brokerID, Endpoints: newEps, Rack: newCfg.Rack, JMXPort: -1}
	if err := b.zk.UpdateBrokerInfo(info); err != nil {
		r.log.WithError(err).Error("could not update the broker registration with the new listeners")
		return
	}
	r.log.WithField("endpoints", endpointList(newEps)).Info("updated broker registration")
}

// boundPort is the port the listener name is bound to, -1 if there is none.
func (b *Broker) boundPort(name string) int32 {
	b.listenersMu.RLock()
	defer b.listenersMu.RUnlock()
	for _, bl := range b.listeners {
		if bl.cfg.Name == name {
			return bl.port
		}
	}
	return -1
}
