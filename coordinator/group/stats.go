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
