package broker

// webview_groups_remote.go — consumer groups across the cluster. A broker's GroupCoordinator
// caches only the groups whose __consumer_offsets partition it leads
// (GroupMetadataManager.ownedPartitions), so /groups and /follow add what the other brokers'
// coordinators hold, read from their own /groups pages (scope=local), which then carry the
// committed offsets too.

import (
	"encoding/json"
	"net/url"
	"sort"
	"strconv"
)

// webMaxCommitted bounds the committed offsets a broker's local /groups page carries for
// its peers (a coordinator may cache many groups).
const webMaxCommitted = 20000

// webCommitted is one committed offset in a coordinator's cache.
type webCommitted struct {
	GroupID   string `json:"group_id"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"committed_offset"`
}

// webLocalCommitted lists the committed offsets of the groups this broker coordinates.
func (b *Broker) webLocalCommitted() []webCommitted {
	out := []webCommitted{}
	c := b.webGroupCoordinator()
	if c == nil {
		return out
	}
	gs, _ := c.ListGroups(nil)
	for _, g := range gs {
		offs, _ := c.FetchOffsets(g.GroupID, nil, false)
		for _, o := range offs {
			if len(out) == webMaxCommitted {
				return out
			}
			if o.Offset >= 0 {
				out = append(out, webCommitted{g.GroupID, o.TP.Topic, o.TP.Partition, o.Offset})
			}
		}
	}
	return out
}

// webPeerGroups is a peer's local /groups page.
type webPeerGroups struct {
	HTTP      string
	Groups    []webGroupRow  `json:"groups"`
	Committed []webCommitted `json:"committed"`
}

// webGatherGroups returns the peers' local /groups pages that answered, by broker id, and
// a note for each that did not.
func (b *Broker) webGatherGroups() (map[int32]webPeerGroups, map[int32]string) {
	ok, failed := map[int32]webPeerGroups{}, map[int32]string{}
	for id, a := range b.webGatherPeers("/groups").answers {
		if a.Err != "" {
			failed[id] = a.Err
			continue
		}
		pg := webPeerGroups{HTTP: a.HTTP}
		if err := json.Unmarshal(a.Body, &pg); err != nil {
			failed[id] = "its page is not the groups view's JSON: " + err.Error()
			continue
		}
		ok[id] = pg
	}
	return ok, failed
}

// webPeerGroupURL is the address of a group's page on the broker that coordinates it.
func webPeerGroupURL(httpAddr, groupID string) string {
	u := url.URL{Scheme: "http", Host: httpAddr, Path: "/group", RawQuery: "id=" + url.QueryEscape(groupID)}
	return u.String()
}

// addPeerGroups appends the groups the other brokers coordinate to rows, and notes the
// brokers that did not answer.
func (b *Broker) addPeerGroups(rows []webGroupRow) ([]webGroupRow, []string) {
	peers, failed := b.webGatherGroups()
	for id, pg := range peers {
		for _, g := range pg.Groups {
			g.Coordinator, g.Page = id, webPeerGroupURL(pg.HTTP, g.GroupID)
			rows = append(rows, g)
		}
	}
	var notes []string
	for id, err := range failed {
		notes = append(notes, "broker "+strconv.Itoa(int(id))+" did not answer: "+err)
	}
	sort.Strings(notes)
	return rows, notes
}

// addPeerGroupsPast appends to f the groups other brokers coordinate whose committed offset
// for f's partition is past f's offset (a committed offset is the next record to read).
func (b *Broker) addPeerGroupsPast(f *webFollow) {
	peers, failed := b.webGatherGroups()
	for id, pg := range peers {
		for _, c := range pg.Committed {
			if c.Topic == f.Topic && c.Partition == f.Partition && c.Offset > f.Offset {
				f.GroupsPast = append(f.GroupsPast, webGroupPast{GroupID: c.GroupID, Committed: c.Offset,
					Coordinator: id, Page: webPeerGroupURL(pg.HTTP, c.GroupID)})
			}
		}
	}
	for id, err := range failed {
		f.GroupsNotes = append(f.GroupsNotes, "broker "+strconv.Itoa(int(id))+"'s coordinator did not answer: "+err)
	}
	sort.Strings(f.GroupsNotes)
}
