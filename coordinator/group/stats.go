package group

// Stats is what GroupMetadataManager's gauges read (kafka.coordinator.group
// GroupMetadataManager NumGroups, NumOffsets, NumGroups<State>).
type Stats struct {
	Groups  int           // groups in the cache
	Offsets int           // committed offsets held, over all groups
	ByState map[State]int // groups per state
}

// Stats counts the cached groups and their committed offsets. It takes each group's lock
// in turn, never two at once, like ListGroups.
func (c *Coordinator) Stats() Stats {
	c.mu.Lock()
	groups := make([]*Group, 0, len(c.mu.groups))
	for _, g := range c.mu.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	s := Stats{Groups: len(groups), ByState: map[State]int{}}
	for _, g := range groups {
		g.mu.Lock()
		s.ByState[g.state]++
		s.Offsets += len(g.offsets)
		g.mu.Unlock()
	}
	return s
}

// GenerationAndLeader is a group's generation id and leader member id ("" without one),
// read under the group's lock; ok is false for a group not in the cache. For the internals
// view, which DescribeGroups' answer does not serve (it carries neither).
func (c *Coordinator) GenerationAndLeader(groupID string) (generation int32, leader string, ok bool) {
	g := c.getGroup(groupID)
	if g == nil {
		return -1, "", false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.leaderID != nil {
		leader = *g.leaderID
	}
	return g.generationID, leader, true
}
