package zkmeta

// client_brokers.go — KafkaZkClient's broker registration and reads: /brokers/ids/<id>
// (registerBroker with the stale-session wait, updateBrokerInfo, getBroker, getAllBrokers)
// and broker id generation (/brokers/seqid).

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"
)

// GenerateBrokerID bumps /brokers/seqid and returns its new version + reservedMax
// (KafkaZkClient.generateBrokerSequenceId + reserved.broker.max.id; first id 1001).
func (c *Client) GenerateBrokerID(reservedMax int32) (int32, error) {
	st, err := c.Set(BrokerSeqIDPath, []byte{}, -1)
	if errors.Is(err, ErrNoNode) {
		if cerr := c.CreateRecursive(BrokerSeqIDPath, []byte{}); cerr != nil && !errors.Is(cerr, ErrNodeExists) {
			return -1, cerr
		}
		st, err = c.Set(BrokerSeqIDPath, []byte{}, -1)
	}
	if err != nil {
		return -1, fmt.Errorf("generate broker id: %w", err)
	}
	return st.Version + reservedMax, nil
}

// RegisterBroker creates the ephemeral /brokers/ids/<id> (create with null data, then setData
// version 0, in one multi, as Kafka) and returns the broker epoch (the node's czxid).
//
// If the node exists: ours (a retried create) → its czxid; owned by an earlier session of
// this client → deleted and re-created (ZOOKEEPER-2985). Owned by another session, e.g. a
// broker killed with -9 whose session has not expired yet: wait up to the session timeout for
// it to go, then fail with ErrBrokerIDTaken.
func (c *Client) RegisterBroker(ctx context.Context, info BrokerInfo) (brokerEpoch int64, err error) {
	if info.Timestamp == 0 {
		info.Timestamp = c.now().UnixMilli()
	}
	if info.JMXPort == 0 {
		info.JMXPort = -1
	}
	path := BrokerIDPath(info.ID)
	data := EncodeBrokerInfo(info)
	log := c.log.WithField("broker", info.ID)
	var deadline time.Time
	for {
		var res []zk.MultiResponse
		err = c.do(func() (err error) {
			res, err = c.multi("register broker", path,
				&zk.CreateRequest{Path: c.abs(path), Data: nil, Acl: c.acls(path), Flags: zk.FlagEphemeral},
				&zk.SetDataRequest{Path: c.abs(path), Data: data, Version: 0})
			return err
		})
		if err == nil {
			epoch := res[1].Stat.Czxid
			info.Epoch = epoch
			info.Version = BrokerInfoVersion
			c.mu.Lock()
			c.mu.registered = &info
			c.mu.Unlock()
			log.WithFields(logrus.Fields{"zk_path": path, "broker_epoch": epoch, "endpoints": endpointStrings(info.Endpoints)}).
				Info("registered broker")
			return epoch, nil
		}
		if !errors.Is(err, ErrNodeExists) {
			return -1, fmt.Errorf("register broker %d: %w", info.ID, err)
		}
		exists, evCh, werr := c.ExistsW(path)
		if werr != nil {
			return -1, fmt.Errorf("register broker %d: %w", info.ID, werr)
		}
		if !exists {
			continue
		}
		_, st, gerr := c.Get(path)
		if errors.Is(gerr, ErrNoNode) {
			continue
		}
		if gerr != nil {
			return -1, fmt.Errorf("register broker %d: %w", info.ID, gerr)
		}
		owner := st.EphemeralOwner
		switch {
		case owner == c.SessionID():
			// Our own create went through before a connection loss. Make sure the data is ours.
			if _, err := c.Set(path, data, -1); err != nil {
				return -1, fmt.Errorf("register broker %d: %w", info.ID, err)
			}
			c.mu.Lock()
			info.Epoch, info.Version = st.Czxid, BrokerInfoVersion
			c.mu.registered = &info
			c.mu.Unlock()
			log.WithField("broker_epoch", st.Czxid).Info("registered broker")
			return st.Czxid, nil
		case c.isPreviousSession(owner):
			log.WithField("session_id", fmt.Sprintf("0x%x", owner)).
				Info("deleting broker registration left by an expired session of this broker")
			if err := c.Delete(path, st.Version); err != nil && !errors.Is(err, ErrNoNode) && !errors.Is(err, ErrBadVersion) {
				return -1, fmt.Errorf("register broker %d: %w", info.ID, err)
			}
			continue
		}
		if deadline.IsZero() {
			deadline = c.now().Add(c.staleRegistrationWait())
			log.WithFields(logrus.Fields{"zk_path": path, "owner_session": fmt.Sprintf("0x%x", owner),
				"session_timeout": c.sessionTimeout}).
				Info("broker id is registered by another ZooKeeper session; waiting up to the session timeout for it to expire")
		}
		wait := deadline.Sub(c.now())
		if wait <= 0 {
			return -1, fmt.Errorf("%w: broker id %d is registered at %s by ZooKeeper session 0x%x and it did not go away within "+
				"zookeeper.session.timeout.ms (%v, waited %v): another broker with this id is running, or a crashed one's session has not expired",
				ErrBrokerIDTaken, info.ID, path, owner, c.sessionTimeout, c.staleRegistrationWait())
		}
		timer := time.NewTimer(wait)
		select {
		case <-evCh:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return -1, fmt.Errorf("register broker %d: %w", info.ID, ctx.Err())
		case <-c.quit:
			timer.Stop()
			return -1, ErrClosed
		}
		timer.Stop()
	}
}

// staleRegistrationWait is how long RegisterBroker waits for another session's registration
// to vanish: the session timeout, plus a grace because ZooKeeper expires sessions on tick
// boundaries, up to one tickTime (2 s by default) after the timeout, and a broker restarted
// at once looks for its old node almost as soon as the old process died.
func (c *Client) staleRegistrationWait() time.Duration {
	grace := c.sessionTimeout / 2
	if grace > 2*time.Second {
		grace = 2 * time.Second
	}
	return c.sessionTimeout + grace
}

func endpointStrings(eps []Endpoint) []string {
	s := make([]string, len(eps))
	for i, e := range eps {
		s[i] = e.ConnectionString()
	}
	return s
}

func (c *Client) isPreviousSession(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.mu.prevSessions {
		if s == id {
			return true
		}
	}
	return false
}

// ReRegisterBroker registers the last BrokerInfo passed to RegisterBroker again, with a fresh
// timestamp: call it on SessionReestablished. Returns the new broker epoch.
func (c *Client) ReRegisterBroker(ctx context.Context) (int64, error) {
	c.mu.Lock()
	reg := c.mu.registered
	c.mu.Unlock()
	if reg == nil {
		return -1, errors.New("zkmeta: ReRegisterBroker before RegisterBroker")
	}
	info := *reg
	info.Timestamp = 0
	info.Epoch = 0
	return c.RegisterBroker(ctx, info)
}

// UpdateBrokerInfo rewrites this broker's registration (setData, any version), as Kafka does
// when listeners change dynamically.
func (c *Client) UpdateBrokerInfo(info BrokerInfo) error {
	if info.Timestamp == 0 {
		info.Timestamp = c.now().UnixMilli()
	}
	if _, err := c.Set(BrokerIDPath(info.ID), EncodeBrokerInfo(info), -1); err != nil {
		return err
	}
	// A re-registration after session expiry must carry the new endpoints, not the first ones.
	c.mu.Lock()
	if c.mu.registered != nil && c.mu.registered.ID == info.ID {
		c.mu.registered = &info
	}
	c.mu.Unlock()
	return nil
}

// GetBroker reads one registration, with Epoch = czxid. ErrNoNode if not registered.
func (c *Client) GetBroker(id int32) (BrokerInfo, error) {
	data, st, err := c.Get(BrokerIDPath(id))
	if err != nil {
		return BrokerInfo{}, err
	}
	b, err := DecodeBrokerInfo(id, data)
	if err != nil {
		return BrokerInfo{}, err
	}
	b.Epoch = st.Czxid
	return b, nil
}

// GetBrokerIDs lists the registered broker ids, sorted.
func (c *Client) GetBrokerIDs() ([]int32, error) {
	children, err := c.Children(BrokerIDsPath)
	if errors.Is(err, ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ids := make([]int32, 0, len(children))
	for _, ch := range children {
		if id, err := strconv.ParseInt(ch, 10, 32); err == nil {
			ids = append(ids, int32(id))
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// GetAllBrokers reads every registration, sorted by id; brokers that vanish meanwhile are skipped.
func (c *Client) GetAllBrokers() ([]BrokerInfo, error) {
	ids, err := c.GetBrokerIDs()
	if err != nil {
		return nil, err
	}
	out := make([]BrokerInfo, 0, len(ids))
	for _, id := range ids {
		b, err := c.GetBroker(id)
		if errors.Is(err, ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// ---- topics ----
