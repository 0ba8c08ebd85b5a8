package broker

// webview_remote.go — what a broker does not know itself, its internals view gathers from
// the other brokers. Kafka has no HTTP listener, so a broker finds each peer's through
// Kafka's own API: DescribeConfigs on the peer's BROKER resource (sent to that broker over
// the inter-broker listener, as kafka-configs.sh --describe --entity-type brokers does)
// returns its static samsa.http.listener; a listener bound to 0.0.0.0, :: or no host is
// reached at the host the broker advertises in /brokers/ids/<id>. Then the page's
// ?scope=local&format=json is fetched from every live peer in parallel, with a short
// timeout, and kept for webGatherTTL so that many viewers polling every 2 s cost one fan-out
// a second. scope=local answers never fan out again, so brokers cannot call each other in
// circles.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/kclient"
	"github.com/samsa-kafka/samsa/logstore"
)

const (
	webGatherTTL       = time.Second             // a gathered view is reused this long
	webPeerTimeout     = 1500 * time.Millisecond // one peer's discovery or page fetch
	webPeerAddrTTL     = 5 * time.Minute         // a discovered listener is trusted this long (until a fetch fails)
	webPeerNoAddrTTL   = 10 * time.Second        // a failed discovery is retried after this
	webPeerMaxBody     = 64 << 20                // bytes read from a peer's page
	webScopeParam      = "scope"
	webScopeLocal      = "local"
	webHTTPListenerKey = "samsa.http.listener"
)

// webPeerClient fetches peers' pages: never through a proxy from the environment, and
// each request bounded by webPeerTimeout.
var webPeerClient = &http.Client{
	Timeout: webPeerTimeout,
	Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second,
		DialContext: (&net.Dialer{Timeout: webPeerTimeout}).DialContext},
}

// webLocalOnly reports whether the request asks for this broker's own view only (what a
// peer fetches), so the handler must not gather.
func webLocalOnly(r *http.Request) bool { return r.URL.Query().Get(webScopeParam) == webScopeLocal }

// webPeerAnswer is one peer's answer to a gathered page.
type webPeerAnswer struct {
	ID   int32
	HTTP string // host:port of its samsa.http.listener; "" when unknown
	Body []byte // the page's JSON; nil when Err is set
	Err  string
}

// webGather is one fan-out: done is closed when answers (and at) are set.
type webGather struct {
	done    chan struct{}
	at      time.Time
	answers map[int32]webPeerAnswer

	partsOnce sync.Once // the answers decoded as /partitions, once for all readers
	parts     map[int32]webPeerPartitions
}

// webPeerAddr is a discovered listener (or why there is none) for one peer registration.
type webPeerAddr struct {
	endpoint string // the registration's inter-broker endpoint it was discovered through
	addr     string
	err      string
	at       time.Time
}

// webRemoteState is one broker's gather cache and discovered listeners.
type webRemoteState struct {
	mu      sync.Mutex
	addrs   map[int32]webPeerAddr
	gather  map[string]*webGather // by page path
	fanouts int64                 // fan-outs started (tests: viewers share them)
}

// webRemotes holds each running broker's webRemoteState, by the broker's own HTTP address
// (tests run several brokers in one process; the Broker struct has no room for it); an entry
// goes when its broker closes the listener (stopMetrics).
var webRemotes sync.Map

func (b *Broker) webRemote() *webRemoteState {
	v, _ := webRemotes.LoadOrStore(b.HTTPAddr(), &webRemoteState{addrs: map[int32]webPeerAddr{}, gather: map[string]*webGather{}})
	return v.(*webRemoteState)
}

// webGatherPeers answers path (a page path without query) from every live peer: the
// cached fan-out when younger than webGatherTTL, else the one in flight or a new one.
func (b *Broker) webGatherPeers(path string) *webGather {
	rs := b.webRemote()
	rs.mu.Lock()
	if g := rs.gather[path]; g != nil {
		select {
		case <-g.done:
			if time.Since(g.at) < webGatherTTL {
				rs.mu.Unlock()
				return g
			}
		default: // in flight: share it
			rs.mu.Unlock()
			<-g.done
			return g
		}
	}
	g := &webGather{done: make(chan struct{})}
	rs.gather[path] = g
	rs.fanouts++
	rs.mu.Unlock()
	g.answers = b.webFetchPeers(rs, path)
	g.at = time.Now()
	close(g.done)
	return g
}

// webPeerLogEnd is a partition's log end offset as its leader reports it on its own page,
// for pages that need an offset of a partition this broker does not host (a group's lag).
func (b *Broker) webPeerLogEnd(tp logstore.TopicPartition, leader int32) (int64, string, bool) {
	if leader < 0 || leader == b.brokerID {
		return -1, "", false
	}
	pp, ok := b.webGatherPeers("/partitions").peerPartitions()[leader]
	if !ok || pp.answer.Err != "" {
		return -1, "", false
	}
	if p, ok := pp.parts[tp]; ok && p.Hosted && p.IsLeader {
		return p.LogEndOffset, fmt.Sprintf("leader %d's own page (%s)", leader, pp.answer.HTTP), true
	}
	return -1, "", false
}

// webFetchPeers fetches path from every live broker but this one, in parallel.
func (b *Broker) webFetchPeers(rs *webRemoteState, path string) map[int32]webPeerAnswer {
	out := map[int32]webPeerAnswer{}
	if b.metadata == nil {
		return out
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, bm := range b.metadata.AliveBrokers() {
		if bm.ID == b.brokerID {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := b.webFetchPeer(rs, bm, path)
			mu.Lock()
			out[bm.ID] = a
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func (b *Broker) webFetchPeer(rs *webRemoteState, bm BrokerMetadata, path string) webPeerAnswer {
	a := webPeerAnswer{ID: bm.ID}
	addr, err := b.webPeerHTTP(rs, bm)
	if err != nil {
		a.Err = err.Error()
		return a
	}
	a.HTTP = addr
	u := url.URL{Scheme: "http", Host: addr, Path: path, RawQuery: webScopeParam + "=" + webScopeLocal + "&format=json"}
	resp, err := webPeerClient.Get(u.String())
	if err == nil {
		defer resp.Body.Close()
		var body []byte
		if body, err = io.ReadAll(io.LimitReader(resp.Body, webPeerMaxBody)); err == nil {
			if resp.StatusCode == http.StatusOK {
				a.Body = body
				return a
			}
			err = fmt.Errorf("%s answered %s", u.String(), resp.Status)
		}
	}
	a.Err = err.Error()
	// The listener may have moved (a restart on another port): discover it again next time.
	rs.mu.Lock()
	delete(rs.addrs, bm.ID)
	rs.mu.Unlock()
	return a
}

// webPeerHTTP is the peer's samsa.http.listener address, discovered with DescribeConfigs
// and cached per registration endpoint.
func (b *Broker) webPeerHTTP(rs *webRemoteState, bm BrokerMetadata) (string, error) {
	listener := b.cfg.InterBrokerListenerName
	if listener == "" {
		listener = ProtocolPlaintext
	}
	ep, ok := bm.Endpoint(listener)
	if !ok {
		return "", fmt.Errorf("broker %d registers no %s endpoint", bm.ID, listener)
	}
	endpoint := net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
	rs.mu.Lock()
	c, ok := rs.addrs[bm.ID]
	rs.mu.Unlock()
	if ok && c.endpoint == endpoint {
		if c.err == "" && time.Since(c.at) < webPeerAddrTTL {
			return c.addr, nil
		}
		if c.err != "" && time.Since(c.at) < webPeerNoAddrTTL {
			return "", errors.New(c.err)
		}
	}
	addr, err := b.webDescribeHTTPListener(bm.ID, endpoint, ep.Host)
	c = webPeerAddr{endpoint: endpoint, addr: addr, at: time.Now()}
	if err != nil {
		c.err = err.Error()
	}
	rs.mu.Lock()
	rs.addrs[bm.ID] = c
	rs.mu.Unlock()
	return addr, err
}

// webDescribeHTTPListener asks broker id at endpoint for its samsa.http.listener
// (DescribeConfigs, resource BROKER "<id>": only the broker itself answers for its id) and
// resolves it to an address this broker can reach.
func (b *Broker) webDescribeHTTPListener(id int32, endpoint, advertisedHost string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), webPeerTimeout)
	defer cancel()
	var conn *kclient.Conn
	var err error
	clientID := fmt.Sprintf("broker-%d-internals-view", b.brokerID)
	if b.dialer != nil {
		conn, err = b.dialer.Dial(ctx, endpoint, clientID)
	} else {
		conn, err = kclient.Dial(ctx, endpoint, clientID)
	}
	if err != nil {
		return "", fmt.Errorf("DescribeConfigs to broker %d: %v", id, err)
	}
	defer conn.Close()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(id))
	res.ConfigNames = []string{webHTTPListenerKey}
	req.Resources = append(req.Resources, res)
	r, err := conn.Request(ctx, req)
	if err != nil {
		return "", fmt.Errorf("DescribeConfigs to broker %d: %v", id, err)
	}
	resp, ok := r.(*kmsg.DescribeConfigsResponse)
	if !ok || len(resp.Resources) != 1 {
		return "", fmt.Errorf("DescribeConfigs to broker %d: unexpected answer", id)
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		return "", fmt.Errorf("DescribeConfigs to broker %d: %v", id, err)
	}
	value := ""
	for _, c := range resp.Resources[0].Configs {
		if c.Name == webHTTPListenerKey && c.Value != nil {
			value = *c.Value
		}
	}
	return webResolveListener(id, value, advertisedHost)
}

// webResolveListener turns a samsa.http.listener value into an address to dial: a wildcard
// or empty host becomes the host the broker advertises; port 0 is unusable (the bound port
// is not published anywhere).
func webResolveListener(id int32, value, advertisedHost string) (string, error) {
	if value == "" {
		return "", fmt.Errorf("broker %d has no samsa.http.listener", id)
	}
	host, port, err := net.SplitHostPort(value)
	if err != nil {
		return "", fmt.Errorf("broker %d: samsa.http.listener %q: %v", id, value, err)
	}
	if port == "0" {
		return "", fmt.Errorf("broker %d: samsa.http.listener %q binds an ephemeral port, which it does not publish", id, value)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = advertisedHost
	}
	return net.JoinHostPort(host, port), nil
}

// webKnownPeerHTTP is the peer's listener as already discovered, "" when not (yet) known;
// it never asks the network, so an error page can point to the peer's pages cheaply.
func (b *Broker) webKnownPeerHTTP(id int32) string {
	rs := b.webRemote()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if c, ok := rs.addrs[id]; ok && c.err == "" {
		return c.addr
	}
	return ""
}
