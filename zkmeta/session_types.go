package zkmeta

// session_types.go — the values the session plumbing (session.go) hands out: session
// events, watch events, znode stats and create modes.

import (
	"fmt"

	"github.com/go-zookeeper/zk"
)

// SessionEventType says what happened to the ZooKeeper session.
type SessionEventType int

const (
	// SessionExpired: the server expired our session. Ephemeral nodes (broker registration,
	// /controller) and all watches are gone. A controller must resign.
	SessionExpired SessionEventType = iota + 1
	// SessionReestablished: a new session is up after an expiry. Re-register the broker
	// (ReRegisterBroker), re-arm watches, re-run the controller election.
	SessionReestablished
)

func (t SessionEventType) String() string {
	switch t {
	case SessionExpired:
		return "SessionExpired"
	case SessionReestablished:
		return "SessionReestablished"
	}
	return fmt.Sprintf("SessionEventType(%d)", int(t))
}

// SessionEvent is delivered on the channels returned by SessionEvents.
type SessionEvent struct {
	Type      SessionEventType
	SessionID int64 // the expired session (SessionExpired) or the new one (SessionReestablished)
}

// EventType is the type of a watch event.
type EventType int

const (
	EventNodeCreated EventType = iota + 1
	EventNodeDeleted
	EventNodeDataChanged
	EventNodeChildrenChanged
	// EventNotWatching: the watch was dropped without firing (session expired, client closed);
	// Event.Err says why (ErrSessionExpired, ErrClosed). Re-read and re-arm if still relevant.
	EventNotWatching
)

func (t EventType) String() string {
	switch t {
	case EventNodeCreated:
		return "NodeCreated"
	case EventNodeDeleted:
		return "NodeDeleted"
	case EventNodeDataChanged:
		return "NodeDataChanged"
	case EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	case EventNotWatching:
		return "NotWatching"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is one fired watch. Path is chroot-relative.
type Event struct {
	Type EventType
	Path string
	Err  error
}

// Stat is a znode's stat. Version is the data version ("zkVersion").
type Stat struct {
	Czxid, Mzxid   int64
	Ctime, Mtime   int64
	Version        int32
	Cversion       int32
	EphemeralOwner int64
	DataLength     int32
	NumChildren    int32
}

func toStat(s *zk.Stat) Stat {
	if s == nil {
		return Stat{}
	}
	return Stat{Czxid: s.Czxid, Mzxid: s.Mzxid, Ctime: s.Ctime, Mtime: s.Mtime, Version: s.Version,
		Cversion: s.Cversion, EphemeralOwner: s.EphemeralOwner, DataLength: s.DataLength, NumChildren: s.NumChildren}
}

// CreateMode of a new znode.
type CreateMode int32

const (
	Persistent           CreateMode = CreateMode(zk.FlagPersistent)
	Ephemeral            CreateMode = CreateMode(zk.FlagEphemeral)
	PersistentSequential CreateMode = CreateMode(zk.FlagSequence)
	EphemeralSequential  CreateMode = CreateMode(zk.FlagEphemeralSequential)
)
