package zkmeta

// Session and watch plumbing (Kafka's ZooKeeperClient): connection, chroot, state tracking,
// session expiry, one-shot watches delivered as events, retry on connection loss.
//
// go-zookeeper keeps one *zk.Conn for the client's life: it reconnects by itself (same session
// while the server still knows it) and, after the server reports the session expired, opens
// a new session on the same Conn. We turn its state callbacks into SessionEvents.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"
)

// Client is samsa's KafkaZkClient. Safe for concurrent use. Close stops its goroutines.
type Client struct {
	conn           *zk.Conn
	chroot         string // "" or "/kafka"; prefixed to every path
	sec            Security
	dialErr        atomic.Pointer[error] // last failed TLS dial, for Connect's time-out error
	sessionTimeout time.Duration
	log            *logrus.Entry
	now            func() time.Time

	quit        chan struct{}
	sessionDone chan struct{}
	connected   chan struct{} // closed once the first session is up
	closeOnce   sync.Once
	watchers    sync.WaitGroup // one goroutine per armed watch
	subsWG      sync.WaitGroup // one delivery goroutine per SessionEvents subscriber

	// Raw go-zookeeper events, queued by its callback (which must not block).
	evMu     sync.Mutex
	evQueue  []zk.Event
	evSignal chan struct{}

	mu struct {
		sync.Mutex
		closed       bool
		sessionID    int64
		prevSessions []int64 // expired sessions of this client (ZOOKEEPER-2985 workaround)
		expired      bool
		hadSession   bool
		lastState    zk.State
		stateCh      chan struct{} // closed and replaced on every state change
		subs         []*sessionSub
		registered   *BrokerInfo // last RegisterBroker, for ReRegisterBroker
	}
	stats clientStats // metrics.go
}

// Connect opens a session with the ensemble in connect ("host:port,host:port[/chroot]"),
// waits for it (bounded by ctx: Kafka's zookeeper.connection.timeout.ms), and creates the
// chroot if missing. log should carry component=zkmeta or it gets it.
func Connect(ctx context.Context, connect string, sessionTimeout time.Duration, log *logrus.Entry) (*Client, error) {
	return ConnectSecure(ctx, connect, sessionTimeout, log, Security{})
}

// ConnectSecure is Connect with ZooKeeper security (see SecurityFromProps): TLS connections,
// a digest identity sent before any other request (and again by go-zookeeper on every
// reconnect), and Kafka's znode ACLs for everything the client creates, the chroot included.
func ConnectSecure(ctx context.Context, connect string, sessionTimeout time.Duration, log *logrus.Entry, sec Security) (*Client, error) {
	if sec.SecureACLs && !sec.authenticated() {
		return nil, fmt.Errorf("zkmeta: secure ACLs need an authenticated ZooKeeper client (digest or TLS client certificate)")
	}
	servers, chroot, err := parseConnect(connect)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = logrus.NewEntry(logrus.StandardLogger())
	}
	log = log.WithField("component", "zkmeta")
	c := &Client{
		chroot:         chroot,
		sec:            sec,
		sessionTimeout: sessionTimeout,
		log:            log,
		now:            time.Now,
		quit:           make(chan struct{}),
		sessionDone:    make(chan struct{}),
		connected:      make(chan struct{}),
		evSignal:       make(chan struct{}, 1),
	}
	c.mu.stateCh = make(chan struct{})
	dialer := zk.Dialer(net.DialTimeout) // go-zookeeper's default
	if sec.TLS != nil {
		dialer = c.tlsDialer(sec.TLS)
	}
	conn, _, err := zk.Connect(servers, sessionTimeout,
		zk.WithLogger(zkLogger{log}), zk.WithLogInfo(false), zk.WithEventCallback(c.onZKEvent), zk.WithDialer(dialer))
	if err != nil {
		return nil, fmt.Errorf("zkmeta: connect %s: %w", connect, err)
	}
	c.conn = conn
	go c.sessionLoop()

	select {
	case <-c.connected:
	case <-ctx.Done():
		c.Close()
		if last := c.dialErr.Load(); last != nil {
			return nil, fmt.Errorf("zkmeta: timed out waiting for a ZooKeeper session with %s (last error: %v): %w", connect, *last, ctx.Err())
		}
		return nil, fmt.Errorf("zkmeta: timed out waiting for a ZooKeeper session with %s: %w", connect, ctx.Err())
	}
	if sec.Digest != "" {
		// Before any create: ZooKeeper's "auth" ACL scheme names the identities the session
		// holds when the znode is created.
		if err := c.do(func() error { return mapErr("add auth", "/", c.conn.AddAuth("digest", []byte(sec.Digest))) }); err != nil {
			c.Close()
			return nil, fmt.Errorf("zkmeta: ZooKeeper digest authentication: %w", err)
		}
	}
	if chroot != "" {
		// Kafka creates the chroot with a client that has no chroot (KafkaServer.initZkClient).
		if err := c.do(func() error { return c.createRecursiveAbs(chroot, nil) }); err != nil && !errors.Is(err, ErrNodeExists) {
			c.Close()
			return nil, fmt.Errorf("zkmeta: create chroot %s: %w", chroot, err)
		}
	}
	log.WithFields(logrus.Fields{"zk_connect": connect, "session_id": fmt.Sprintf("0x%x", c.SessionID()),
		"zk_tls": sec.TLS != nil, "zk_digest_auth": sec.Digest != "", "zk_secure_acls": sec.SecureACLs}).Info("connected to ZooKeeper")
	return c, nil
}

// parseConnect splits "h1:p1,h2:p2/chroot".
func parseConnect(connect string) (servers []string, chroot string, err error) {
	hosts := connect
	if i := strings.IndexByte(connect, '/'); i >= 0 {
		hosts, chroot = connect[:i], connect[i:]
		chroot = strings.TrimRight(chroot, "/")
		if strings.Contains(chroot, "//") {
			return nil, "", fmt.Errorf("zkmeta: invalid chroot in zookeeper.connect %q", connect)
		}
	}
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			servers = append(servers, h)
		}
	}
	if len(servers) == 0 {
		return nil, "", fmt.Errorf("zkmeta: no servers in zookeeper.connect %q", connect)
	}
	return servers, chroot, nil
}

// Close ends the session (its ephemeral nodes go at once), fires EventNotWatching on all armed
// watches, closes the SessionEvents channels, and waits for the client's goroutines.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.mu.closed = true
		c.mu.Unlock()
		close(c.quit)
		c.conn.Close()
		<-c.sessionDone
		c.watchers.Wait()
		// sessionLoop has ended, so no event is queued any more; the delivery goroutines
		// stop on quit. Events a subscriber had not taken are dropped with the channel.
		c.subsWG.Wait()
		c.mu.Lock()
		for _, sub := range c.mu.subs {
			close(sub.out)
		}
		c.mu.subs = nil
		c.mu.Unlock()
		c.log.Info("closed ZooKeeper client")
	})
	return nil
}

// SessionID is the current session id (0 while none).
func (c *Client) SessionID() int64 { return c.conn.SessionID() }

// SessionTimeout is the session timeout the client asked for.
func (c *Client) SessionTimeout() time.Duration { return c.sessionTimeout }

// Connected reports whether the client has a live session right now.
func (c *Client) Connected() bool { return c.conn.State() == zk.StateHasSession }

// State is the connection state's name (e.g. "StateHasSession", "StateDisconnected").
func (c *Client) State() string { return c.conn.State().String() }

// Chroot is the chroot from zookeeper.connect ("" if none).
func (c *Client) Chroot() string { return c.chroot }

// SessionEvents returns a new channel that receives every later session event, in order
// (each caller gets its own; broker and controller can both listen). None is lost, however
// late the reader: a SessionExpired missed would leave a broker or controller acting on a
// dead session. Closed by Close.
func (c *Client) SessionEvents() <-chan SessionEvent {
	sub := &sessionSub{out: make(chan SessionEvent, 1), wake: make(chan struct{}, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		close(sub.out)
		return sub.out
	}
	c.mu.subs = append(c.mu.subs, sub)
	c.subsWG.Add(1)
	go c.deliver(sub)
	return sub.out
}

// sessionSub is one SessionEvents subscriber: a one-slot channel and, behind it, a queue
// that a delivery goroutine drains into the channel as the subscriber reads.
//
// The queue is not bounded and not coalesced. It cannot grow fast: each SessionExpired
// needs the server to have heard nothing for a whole session timeout, and each expiry
// queues two events. Coalescing it would be wrong: the controller matches SessionExpired
// against the session its term was elected in, so folding the expiries of two sessions
// into one event could hide the one that ends its term.
type sessionSub struct {
	out  chan SessionEvent // cap 1; closed by Close
	wake chan struct{}     // cap 1; a non-blocking send says the queue grew

	mu     sync.Mutex // leaf; guards queued only, no send under it
	queued []SessionEvent
}

// publish hands ev to the subscriber without blocking: straight into the channel's slot
// when it is free and nothing is queued ahead (so a reader that checks the channel right
// after the state change sees the event, as before), else onto the queue. Only sessionLoop
// calls it, so the queue cannot fill between the check and the send.
func (s *sessionSub) publish(ev SessionEvent) {
	s.mu.Lock()
	empty := len(s.queued) == 0
	s.mu.Unlock()
	if empty {
		select {
		case s.out <- ev:
			return
		default:
		}
	}
	s.mu.Lock()
	s.queued = append(s.queued, ev)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// deliver moves queued events into the subscriber's channel, waiting for the subscriber to
// read, until Close.
func (c *Client) deliver(s *sessionSub) {
	defer c.subsWG.Done()
	for {
		select {
		case <-c.quit:
			return
		case <-s.wake:
		}
		for {
			s.mu.Lock()
			if len(s.queued) == 0 {
				s.mu.Unlock()
				break
			}
			ev := s.queued[0]
			s.mu.Unlock()
			select {
			case s.out <- ev:
			case <-c.quit:
				return
			}
			// Dequeue only once sent: publish sees a non-empty queue until then and queues
			// behind it, so the order holds.
			s.mu.Lock()
			s.queued[0] = SessionEvent{}
			s.queued = s.queued[1:]
			s.mu.Unlock()
		}
	}
}

// onZKEvent runs on go-zookeeper's goroutines: queue and return.
func (c *Client) onZKEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return // watch events reach us through the per-watch channels
	}
	c.evMu.Lock()
	c.evQueue = append(c.evQueue, ev)
	c.evMu.Unlock()
	select {
	case c.evSignal <- struct{}{}:
	default:
	}
}

func (c *Client) sessionLoop() {
	defer close(c.sessionDone)
	for {
		select {
		case <-c.quit:
			return
		case <-c.evSignal:
		}
		c.evMu.Lock()
		evs := c.evQueue
		c.evQueue = nil
		c.evMu.Unlock()
		for _, ev := range evs {
			c.handleState(ev.State)
		}
	}
}

func (c *Client) handleState(st zk.State) {
	var publish *SessionEvent
	c.mu.Lock()
	switch st {
	case zk.StateHasSession:
		sid := c.conn.SessionID()
		newSession := c.mu.expired || (c.mu.sessionID != 0 && sid != 0 && sid != c.mu.sessionID)
		first := !c.mu.hadSession
		c.mu.hadSession = true
		c.mu.sessionID = sid
		c.mu.expired = false
		switch {
		case first:
			close(c.connected)
		case newSession:
			c.log.WithField("session_id", fmt.Sprintf("0x%x", sid)).Info("new ZooKeeper session established after expiry")
			publish = &SessionEvent{Type: SessionReestablished, SessionID: sid}
		default:
			c.log.WithField("session_id", fmt.Sprintf("0x%x", sid)).Info("reconnected to ZooKeeper")
		}
	case zk.StateExpired:
		old := c.mu.sessionID
		if old != 0 {
			c.mu.prevSessions = append(c.mu.prevSessions, old)
		}
		c.mu.expired = true
		c.log.WithField("session_id", fmt.Sprintf("0x%x", old)).Warn("ZooKeeper session expired")
		publish = &SessionEvent{Type: SessionExpired, SessionID: old}
	case zk.StateDisconnected:
		if c.mu.lastState == zk.StateHasSession && !c.mu.closed {
			c.log.Warn("disconnected from ZooKeeper; reconnecting")
		}
	case zk.StateAuthFailed:
		c.log.Error("ZooKeeper authentication failed")
	}
	c.mu.lastState = c.stats.counted(st)
	close(c.mu.stateCh)
	c.mu.stateCh = make(chan struct{})
	subs := c.mu.subs
	c.mu.Unlock()
	if publish != nil {
		// Only sessionLoop publishes, so subscribers see events in state-change order.
		for _, sub := range subs {
			sub.publish(*publish)
		}
	}
}

// waitConnected blocks until there is a session or the client closes.
func (c *Client) waitConnected() error {
	for {
		c.mu.Lock()
		ch, closed := c.mu.stateCh, c.mu.closed
		c.mu.Unlock()
		if closed {
			return ErrClosed
		}
		if c.conn.State() == zk.StateHasSession {
			return nil
		}
		select {
		case <-ch:
		case <-c.quit:
			return ErrClosed
		// go-zookeeper may reach HasSession before our loop processed it; re-check now and then.
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// do runs op, retrying after connection loss once connected again (Kafka's
// retryRequestsUntilConnected). Other errors, session expiry included, are returned.
func (c *Client) do(op func() error) error {
	for {
		err := c.stats.timed(op)
		if err == nil || !errors.Is(err, ErrConnectionLoss) {
			return err
		}
		c.mu.Lock()
		closed := c.mu.closed
		c.mu.Unlock()
		if closed {
			return fmt.Errorf("%w (%v)", ErrClosed, err)
		}
		c.log.WithError(err).Debug("retrying ZooKeeper request after connection loss")
		if werr := c.waitConnected(); werr != nil {
			return werr
		}
	}
}

// ---- chroot ----

func (c *Client) abs(p string) string {
	if c.chroot == "" {
		return p
	}
	if p == "/" {
		return c.chroot
	}
	return c.chroot + p
}

func (c *Client) rel(p string) string {
	if c.chroot == "" {
		return p
	}
	if p == c.chroot {
		return "/"
	}
	return strings.TrimPrefix(p, c.chroot)
}

// ---- plain znode operations (chroot-relative paths) ----

// Get reads a znode.
func (c *Client) Get(path string) ([]byte, Stat, error) {
	var data []byte
	var st *zk.Stat
	err := c.do(func() (err error) {
		data, st, err = c.conn.Get(c.abs(path))
		return mapErr("get", path, err)
	})
	return data, toStat(st), err
}

// Exists reports whether a znode exists.
func (c *Client) Exists(path string) (bool, Stat, error) {
	var ok bool
	var st *zk.Stat
	err := c.do(func() (err error) {
		ok, st, err = c.conn.Exists(c.abs(path))
		return mapErr("exists", path, err)
	})
	return ok, toStat(st), err
}

// Children lists a znode's children (names, unsorted as ZooKeeper returns them).
func (c *Client) Children(path string) ([]string, error) {
	var ch []string
	err := c.do(func() (err error) {
		ch, _, err = c.conn.Children(c.abs(path))
		return mapErr("children", path, err)
	})
	return ch, err
}

// Create creates a znode with the client's default ACLs (DefaultACLs) and returns its
// chroot-relative path (with the sequence suffix for sequential modes). Parents must exist.
func (c *Client) Create(path string, data []byte, mode CreateMode) (string, error) {
	var created string
	err := c.do(func() (err error) {
		created, err = c.conn.Create(c.abs(path), data, int32(mode), c.acls(path))
		return mapErr("create", path, err)
	})
	if err != nil {
		return "", err
	}
	return c.rel(created), nil
}

// CreateRecursive creates a persistent znode and its missing parents (parents get null
// data). ErrNodeExists if the node itself exists.
func (c *Client) CreateRecursive(path string, data []byte) error {
	return c.do(func() error { return c.createRecursiveAbs(c.abs(path), data) })
}

// createRecursiveAbs works on absolute paths (used for the chroot itself). Each znode gets
// the ACLs of its own path, as KafkaZkClient.createRecursive.
func (c *Client) createRecursiveAbs(abs string, data []byte) error {
	_, err := c.conn.Create(abs, data, zk.FlagPersistent, c.acls(c.rel(abs)))
	if errors.Is(err, zk.ErrNoNode) {
		parent := abs[:strings.LastIndexByte(abs, '/')]
		if parent != "" {
			if perr := c.createRecursiveAbs(parent, nil); perr != nil && !errors.Is(perr, ErrNodeExists) {
				return perr
			}
		}
		_, err = c.conn.Create(abs, data, zk.FlagPersistent, c.acls(c.rel(abs)))
	}
	return mapErr("create", c.rel(abs), err)
}

// Set writes data if the version matches (-1 = any) and returns the new stat.
func (c *Client) Set(path string, data []byte, version int32) (Stat, error) {
	var st *zk.Stat
	err := c.do(func() (err error) {
		st, err = c.conn.Set(c.abs(path), data, version)
		return mapErr("set", path, err)
	})
	return toStat(st), err
}

// Delete deletes a znode if the version matches (-1 = any).
func (c *Client) Delete(path string, version int32) error {
	return c.do(func() error { return mapErr("delete", path, c.conn.Delete(c.abs(path), version)) })
}

// DeleteRecursive deletes a znode and everything under it; a missing node is no error.
func (c *Client) DeleteRecursive(path string) error {
	return c.deleteRecursive(path, -1)
}

// deleteRecursive deletes path and its subtree (KafkaZkClient.deleteRecursive). The tree is
// read level by level, the reads of a level pipelined on the session (up to maxInFlight),
// then deleted deepest first in multi requests: a 64-partition topic's /brokers/topics/<t>
// is some 130 znodes, which one round trip each (as Kafka deletes them) kept near 85 ms
// here. With ctrlEpochZkVersion ≥ 0 each multi also checks the controller epoch's
// zkVersion, so a deposed controller deletes nothing.
func (c *Client) deleteRecursive(path string, ctrlEpochZkVersion int32) error {
	levels := [][]string{{path}}
	for {
		var mu sync.Mutex
		var next []string
		var firstErr error
		cur := levels[len(levels)-1]
		c.parallel(len(cur), func(run func(func())) {
			for _, p := range cur {
				run(func() {
					children, err := c.Children(p)
					mu.Lock()
					defer mu.Unlock()
					if err != nil && !errors.Is(err, ErrNoNode) && firstErr == nil {
						firstErr = err
					}
					for _, ch := range children {
						next = append(next, p+"/"+ch)
					}
				})
			}
		})
		if firstErr != nil {
			return firstErr
		}
		if len(next) == 0 {
			break
		}
		levels = append(levels, next)
	}
	// The deletes, deepest first, go in multis of up to deleteBatch ops: one transaction
	// (and one ZooKeeper log write) each, fenced like a single delete.
	var paths []string
	for i := len(levels) - 1; i >= 0; i-- {
		paths = append(paths, levels[i]...)
	}
	for len(paths) > 0 {
		n := min(len(paths), deleteBatch)
		ops := make([]any, n)
		for i, p := range paths[:n] {
			ops[i] = &zk.DeleteRequest{Path: c.abs(p), Version: -1}
		}
		var err error
		if ctrlEpochZkVersion >= 0 {
			_, err = c.checkedMulti("delete", path, ctrlEpochZkVersion, ops...)
		} else {
			err = c.do(func() error { _, err := c.multi("delete", path, ops...); return err })
		}
		if errors.Is(err, ErrNotEmpty) || errors.Is(err, ErrNoNode) {
			// The tree changed while it was read (a child created, a node deleted by someone
			// else): the batch did nothing; finish one request at a time.
			return c.deleteRecursiveSeq(path, ctrlEpochZkVersion)
		}
		if err != nil {
			return err
		}
		paths = paths[n:]
	}
	return nil
}

// deleteBatch bounds the deletes of one multi, well under ZooKeeper's 1 MB request limit
// (jute.maxbuffer) for any path length Kafka allows.
const deleteBatch = 1000

// deleteOne deletes one znode, fenced by the controller epoch when ctrlEpochZkVersion ≥ 0.
func (c *Client) deleteOne(path string, ctrlEpochZkVersion int32) error {
	if ctrlEpochZkVersion >= 0 {
		_, err := c.checkedMulti("delete", path, ctrlEpochZkVersion, &zk.DeleteRequest{Path: c.abs(path), Version: -1})
		return err
	}
	return c.Delete(path, -1)
}

// deleteRecursiveSeq is deleteRecursive one request at a time, for a subtree that grew
// while it was being deleted.
func (c *Client) deleteRecursiveSeq(path string, ctrlEpochZkVersion int32) error {
	children, err := c.Children(path)
	if errors.Is(err, ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, ch := range children {
		if err := c.deleteRecursiveSeq(path+"/"+ch, ctrlEpochZkVersion); err != nil {
			return err
		}
	}
	err = c.deleteOne(path, ctrlEpochZkVersion)
	if errors.Is(err, ErrNoNode) {
		return nil
	}
	if errors.Is(err, ErrNotEmpty) { // a child appeared meanwhile: go again
		return c.deleteRecursiveSeq(path, ctrlEpochZkVersion)
	}
	return err
}

// ---- watches ----

// GetW reads a znode and arms a one-shot data watch (fires on data change or deletion).
func (c *Client) GetW(path string) ([]byte, int32, <-chan Event, error) {
	var data []byte
	var st *zk.Stat
	var zch <-chan zk.Event
	err := c.do(func() (err error) {
		data, st, zch, err = c.conn.GetW(c.abs(path))
		return mapErr("get", path, err)
	})
	if err != nil {
		return nil, 0, nil, err
	}
	ch, err := c.forward(zch)
	if err != nil {
		return nil, 0, nil, err
	}
	return data, st.Version, ch, nil
}

// ExistsW reports whether a znode exists and arms a one-shot watch (creation, data change,
// deletion). Armed also when the node does not exist.
func (c *Client) ExistsW(path string) (bool, <-chan Event, error) {
	var ok bool
	var zch <-chan zk.Event
	err := c.do(func() (err error) {
		ok, _, zch, err = c.conn.ExistsW(c.abs(path))
		return mapErr("exists", path, err)
	})
	if err != nil {
		return false, nil, err
	}
	ch, err := c.forward(zch)
	return ok, ch, err
}

// ChildrenW lists children and arms a one-shot child watch (children change or deletion).
func (c *Client) ChildrenW(path string) ([]string, <-chan Event, error) {
	var children []string
	var zch <-chan zk.Event
	err := c.do(func() (err error) {
		children, _, zch, err = c.conn.ChildrenW(c.abs(path))
		return mapErr("children", path, err)
	})
	if err != nil {
		return nil, nil, err
	}
	ch, err := c.forward(zch)
	return children, ch, err
}

// forward converts go-zookeeper's watch channel into ours; the goroutine ends when the watch
// fires or is dropped (which Close guarantees).
func (c *Client) forward(zch <-chan zk.Event) (<-chan Event, error) {
	out := make(chan Event, 1)
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	c.watchers.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.watchers.Done()
		defer close(out)
		ev, ok := <-zch
		if !ok {
			out <- Event{Type: EventNotWatching, Err: ErrClosed}
			return
		}
		out <- c.convertEvent(ev)
	}()
	return out, nil
}

func (c *Client) convertEvent(ev zk.Event) Event {
	e := Event{Path: c.rel(ev.Path)}
	switch ev.Type {
	case zk.EventNodeCreated:
		e.Type = EventNodeCreated
	case zk.EventNodeDeleted:
		e.Type = EventNodeDeleted
	case zk.EventNodeDataChanged:
		e.Type = EventNodeDataChanged
	case zk.EventNodeChildrenChanged:
		e.Type = EventNodeChildrenChanged
	default:
		e.Type = EventNotWatching
		switch {
		case errors.Is(ev.Err, zk.ErrSessionExpired):
			e.Err = ErrSessionExpired
		case ev.Err == nil:
			e.Err = ErrClosed
		default:
			e.Err = mapErr("watch", e.Path, ev.Err)
			if errors.Is(ev.Err, zk.ErrClosing) {
				e.Err = ErrClosed
			}
		}
	}
	return e
}

// ---- multi ----

// checkedMulti runs ops atomically behind check(/controller_epoch, ctrlEpochZkVersion), as
// every controller write in Kafka does (KafkaZkClient.wrapRequestWithControllerEpochCheck),
// and behind check(/controller, version 0): /controller exists. Every election creates
// /controller and bumps the epoch in one multi, so both checks pass only while the znode of
// the election that produced ctrlEpochZkVersion exists. The second check is samsa's: it fences
// a controller whose session ended (its ephemeral /controller is gone) before another broker
// has bumped the epoch, e.g. when go-zookeeper sends a write queued while disconnected in its
// next session (Kafka blocks its new session until the controller has resigned instead).
// A failed check is ErrControllerMoved; other failures map to the failing op's error.
func (c *Client) checkedMulti(op, path string, ctrlEpochZkVersion int32, ops ...any) ([]zk.MultiResponse, error) {
	all := append([]any{
		&zk.CheckVersionRequest{Path: c.abs(ControllerEpochPath), Version: ctrlEpochZkVersion},
		&zk.CheckVersionRequest{Path: c.abs(ControllerPath), Version: 0},
	}, ops...)
	var res []zk.MultiResponse
	err := c.do(func() error {
		var err error
		res, err = c.multi(op, path, all...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res[2:], nil
}

// multi runs ops atomically. On failure the error is that of the first failing op; a failed
// check op on /controller_epoch becomes ErrControllerMoved.
func (c *Client) multi(op, path string, ops ...any) ([]zk.MultiResponse, error) {
	res, err := c.conn.Multi(ops...)
	if err != nil && isConnLoss(err) {
		return nil, mapErr(op, path, err)
	}
	for i, r := range res {
		if r.Error == nil {
			continue
		}
		if chk, ok := ops[i].(*zk.CheckVersionRequest); ok && chk.Path == c.abs(ControllerEpochPath) {
			return res, fmt.Errorf("%s %s: controller epoch zkVersion %d no longer current: %w", op, path, chk.Version, ErrControllerMoved)
		}
		if chk, ok := ops[i].(*zk.CheckVersionRequest); ok && chk.Path == c.abs(ControllerPath) {
			return res, fmt.Errorf("%s %s: /controller is gone (%v): %w", op, path, r.Error, ErrControllerMoved)
		}
		return res, mapErr(op, path, r.Error)
	}
	if err != nil {
		return res, mapErr(op, path, err)
	}
	return res, nil
}

type zkLogger struct{ log *logrus.Entry }

func (l zkLogger) Printf(format string, args ...any) { l.log.Debugf("go-zookeeper: "+format, args...) }
