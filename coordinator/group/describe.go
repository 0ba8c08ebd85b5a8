package group

// describe.go — the read side and clean-up of groups (GroupCoordinator.scala):
// DescribeGroups, ListGroups and DeleteGroups.

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// MemberSummary is one member in DescribeGroups.
type MemberSummary struct {
	MemberID        string
	GroupInstanceID *string
	ClientID        string
	ClientHost      string
	Metadata        []byte
	Assignment      []byte
}

// GroupSummary is GroupSummary (DescribeGroups).
type GroupSummary struct {
	State        string
	ProtocolType string
	Protocol     string
	Members      []MemberSummary
}

// DescribeGroup is GroupCoordinator.handleDescribeGroup; an unknown group is "Dead".
func (c *Coordinator) DescribeGroup(groupID string) (GroupSummary, *kerr.Error) {
	if err := c.validateGroupStatus(groupID, apiDescribe); err != nil {
		return GroupSummary{State: Dead.String()}, err
	}
	g := c.getGroup(groupID)
	if g == nil {
		return GroupSummary{State: Dead.String()}, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	s := GroupSummary{State: g.state.String()}
	if g.protocolType != nil {
		s.ProtocolType = *g.protocolType
	}
	stable := g.is(Stable) && g.protocolName != nil
	if stable {
		s.Protocol = *g.protocolName
	}
	for _, m := range g.allMembers() {
		ms := MemberSummary{MemberID: m.MemberID, GroupInstanceID: m.GroupInstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			Metadata: []byte{}, Assignment: []byte{}}
		if stable {
			ms.Metadata, ms.Assignment = m.metadata(s.Protocol), m.Assignment
		}
		s.Members = append(s.Members, ms)
	}
	return s, nil
}

// GroupOverview is one group in ListGroups.
type GroupOverview struct {
	GroupID      string
	ProtocolType string
	State        string
}

// ListGroups is GroupCoordinator.handleListGroups: the loaded groups whose state is in
// states (all if empty); COORDINATOR_LOAD_IN_PROGRESS while a partition loads.
func (c *Coordinator) ListGroups(states []string) ([]GroupOverview, *kerr.Error) {
	c.mu.Lock()
	active := c.mu.active
	loading := len(c.mu.loading) > 0
	groups := make([]*Group, 0, len(c.mu.groups))
	for _, g := range c.mu.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	if !active {
		return nil, kerr.CoordinatorNotAvailable
	}
	want := map[string]bool{}
	for _, s := range states {
		want[s] = true
	}
	var out []GroupOverview
	for _, g := range groups {
		g.mu.Lock()
		o := GroupOverview{GroupID: g.ID, State: g.state.String()}
		if g.protocolType != nil {
			o.ProtocolType = *g.protocolType
		}
		g.mu.Unlock()
		if len(want) == 0 || want[o.State] {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GroupID < out[j].GroupID })
	var err *kerr.Error
	if loading {
		err = kerr.CoordinatorLoadInProgress
	}
	return out, err
}

// DeleteGroups is GroupCoordinator.handleDeleteGroups: only Empty groups are deleted, with
// tombstones for the group and its offsets.
func (c *Coordinator) DeleteGroups(ctx context.Context, groupIDs []string) map[string]*kerr.Error {
	out := map[string]*kerr.Error{}
	var eligible []*Group
	for _, id := range groupIDs {
		if err := c.validateGroupStatus(id, apiDelete); err != nil {
			out[id] = err
			continue
		}
		g := c.getGroup(id)
		if g == nil {
			out[id] = kerr.GroupIDNotFound
			continue
		}
		g.mu.Lock()
		switch g.state {
		case Dead:
			out[id] = kerr.GroupIDNotFound
		case Empty:
			g.transitionTo(Dead, c.now())
			eligible = append(eligible, g)
		default:
			out[id] = kerr.NonEmptyGroup
		}
		g.mu.Unlock()
	}
	if len(eligible) > 0 {
		c.cleanupGroupMetadata(ctx, eligible, func(g *Group) []TopicPartition {
			// GroupMetadata.removeAllOffsets: the committed offsets, and pending
			// transactional ones of the same partitions.
			tps := make([]TopicPartition, 0, len(g.offsets))
			for tp := range g.offsets {
				tps = append(tps, tp)
			}
			return g.removeOffsets(tps)
		})
		for _, g := range eligible {
			out[g.ID] = nil
		}
	}
	return out
}
