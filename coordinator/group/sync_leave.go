package group

// sync_leave.go — the rest of a member's life after JoinGroup (GroupCoordinator.scala):
// SyncGroup and the assignment's propagation, Heartbeat, and LeaveGroup.

import (
	"context"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
)

// SyncRequest holds SyncGroup's parameters.
type SyncRequest struct {
	GroupID         string
	GenerationID    int32
	MemberID        string
	GroupInstanceID *string
	ProtocolType    *string // v5+
	ProtocolName    *string // v5+
	Assignments     map[string][]byte
}

// SyncGroup blocks until the member's assignment is known or ctx ends.
func (c *Coordinator) SyncGroup(ctx context.Context, req SyncRequest) SyncResult {
	ch := make(chan SyncResult, 1)
	c.HandleSyncGroup(req, func(r SyncResult) { ch <- r })
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return SyncResult{Err: kerr.RebalanceInProgress}
	}
}

// HandleSyncGroup is GroupCoordinator.handleSyncGroup.
func (c *Coordinator) HandleSyncGroup(req SyncRequest, cb func(SyncResult)) {
	if err := c.validateGroupStatus(req.GroupID, apiSync); err != nil {
		if err == kerr.CoordinatorLoadInProgress {
			// The group is loading: make the member rejoin once it is loaded.
			err = kerr.RebalanceInProgress
		}
		cb(SyncResult{Err: err})
		return
	}
	g := c.getGroup(req.GroupID)
	if g == nil {
		cb(SyncResult{Err: kerr.UnknownMemberID})
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.is(Dead) {
		cb(SyncResult{Err: kerr.CoordinatorNotAvailable})
		return
	}
	if err := g.validateCurrentMember(req.MemberID, req.GroupInstanceID); err != nil {
		cb(SyncResult{Err: err})
		return
	}
	switch {
	case req.GenerationID != g.generationID:
		cb(SyncResult{Err: kerr.IllegalGeneration})
		return
	case req.ProtocolType != nil && (g.protocolType == nil || *g.protocolType != *req.ProtocolType),
		req.ProtocolName != nil && (g.protocolName == nil || *g.protocolName != *req.ProtocolName):
		cb(SyncResult{Err: kerr.InconsistentGroupProtocol})
		return
	}
	m := g.members[req.MemberID]
	switch g.state {
	case Empty:
		cb(SyncResult{Err: kerr.UnknownMemberID})
	case PreparingRebalance:
		cb(SyncResult{Err: kerr.RebalanceInProgress})
	case CompletingRebalance:
		m.awaitingSync = cb
		delete(g.pendingSyncMembers, req.MemberID)
		c.completeAndScheduleNextHeartbeatExpiration(g, m)
		if !g.isLeader(req.MemberID) {
			return
		}
		assignment := map[string][]byte{}
		for id, a := range req.Assignments {
			if g.has(id) {
				assignment[id] = a
			}
		}
		for id := range g.members {
			if _, ok := assignment[id]; !ok {
				assignment[id] = []byte{}
			}
		}
		gen := g.generationID
		serr := c.storeGroup(g, assignment, func(err *kerr.Error) {
			// Another member may have joined meanwhile: act only if nothing moved.
			if !g.is(CompletingRebalance) || gen != g.generationID {
				return
			}
			if err != nil {
				c.resetAndPropagateAssignmentError(g, err)
				c.maybePrepareRebalance(g, "error when storing group assignment during SyncGroup (member: "+req.MemberID+")")
				return
			}
			for id, a := range assignment {
				if mm, ok := g.members[id]; ok {
					mm.Assignment = a
				}
			}
			c.propagateAssignment(g, nil)
			g.transitionTo(Stable, c.now())
			c.logger.WithFields(logrus.Fields{"group": g.ID, "generation": gen}).Info("assignment received from leader; group is stable")
		})
		if serr != nil {
			// Kafka's serializer throws inside storeGroup: the leader's SyncGroup fails with
			// UNKNOWN_SERVER_ERROR and the group stays in CompletingRebalance (Kafka also
			// leaves the leader's sync callback set, to be answered a second time by a later
			// rebalance; here the leader is answered once).
			c.logger.WithError(serr).WithField("group_bytes", len(g.ID)).Debug("group record cannot be serialized")
			m.awaitingSync = nil
			cb(SyncResult{Err: kerr.UnknownServerError})
		}
	case Stable:
		delete(g.pendingSyncMembers, req.MemberID)
		cb(SyncResult{ProtocolType: g.protocolType, ProtocolName: g.protocolName, Assignment: m.Assignment})
		c.completeAndScheduleNextHeartbeatExpiration(g, m)
	}
}

func (c *Coordinator) resetAndPropagateAssignmentError(g *Group, err *kerr.Error) {
	for _, m := range g.members {
		m.Assignment = []byte{}
	}
	c.propagateAssignment(g, err)
}

func (c *Coordinator) propagateAssignment(g *Group, err *kerr.Error) {
	for _, m := range g.allMembers() {
		r := SyncResult{Err: err, Assignment: m.Assignment}
		if err == nil {
			r.ProtocolType, r.ProtocolName = g.protocolType, g.protocolName
		}
		if g.invokeSync(m, r) {
			c.completeAndScheduleNextHeartbeatExpiration(g, m)
		}
	}
}

// Heartbeat is GroupCoordinator.handleHeartbeat.
func (c *Coordinator) Heartbeat(groupID, memberID string, instanceID *string, generation int32) *kerr.Error {
	if err := c.validateGroupStatus(groupID, apiHeartbeat); err != nil {
		if err == kerr.CoordinatorLoadInProgress {
			return nil // the group is still loading: answer blindly, as Kafka does
		}
		return err
	}
	g := c.getGroup(groupID)
	if g == nil {
		return kerr.UnknownMemberID
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.is(Dead) {
		return kerr.CoordinatorNotAvailable
	}
	if err := g.validateCurrentMember(memberID, instanceID); err != nil {
		return err
	}
	if generation != g.generationID {
		return kerr.IllegalGeneration
	}
	m := g.members[memberID]
	switch g.state {
	case Empty:
		return kerr.UnknownMemberID
	case PreparingRebalance:
		c.completeAndScheduleNextHeartbeatExpiration(g, m)
		return kerr.RebalanceInProgress
	default:
		c.completeAndScheduleNextHeartbeatExpiration(g, m)
		return nil
	}
}

// MemberIdentity names a member leaving (LeaveGroup v3+ batches).
type MemberIdentity struct {
	MemberID        string
	GroupInstanceID *string
	Reason          string
}

// LeaveGroup is GroupCoordinator.handleLeaveGroup: a top-level error, or one per member.
func (c *Coordinator) LeaveGroup(groupID string, members []MemberIdentity) (*kerr.Error, []*kerr.Error) {
	errs := make([]*kerr.Error, len(members))
	if err := c.validateGroupStatus(groupID, apiLeave); err != nil {
		return err, nil
	}
	g := c.getGroup(groupID)
	if g == nil {
		for i := range errs {
			errs[i] = kerr.UnknownMemberID
		}
		return nil, errs
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.is(Dead) {
		return kerr.CoordinatorNotAvailable, nil
	}
	for i, lm := range members {
		reason := lm.Reason
		if reason == "" {
			reason = "not provided"
		}
		switch {
		case lm.MemberID == "":
			if cur, ok := g.currentStaticMemberID(lm.GroupInstanceID); ok {
				c.removeCurrentMemberFromGroup(g, cur, reason)
			} else {
				errs[i] = kerr.UnknownMemberID
			}
		case g.pendingMembers[lm.MemberID]:
			c.removePendingMemberAndUpdateGroup(g, lm.MemberID)
		default:
			if err := g.validateCurrentMember(lm.MemberID, lm.GroupInstanceID); err != nil {
				errs[i] = err
			} else {
				c.removeCurrentMemberFromGroup(g, lm.MemberID, reason)
			}
		}
	}
	return nil, errs
}

func (c *Coordinator) removeCurrentMemberFromGroup(g *Group, memberID, reason string) {
	m := g.members[memberID]
	m.isLeaving = true
	c.logger.WithFields(logrus.Fields{"group": g.ID, "member_id": memberID, "reason": reason}).Info("member is leaving the group")
	c.removeMemberAndUpdateGroup(g, m, "removing member "+memberID+" on LeaveGroup; client reason: "+reason)
}
