// Package group is Kafka's classic group coordinator (kafka.coordinator.group):
// GroupCoordinator (coordinator.go: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, the
// rebalance state machine), GroupMetadataManager (manager.go: offsets, group records in
// __consumer_offsets, loading on leadership, expiry), GroupMetadata and MemberMetadata
// (group.go), DelayedJoin/DelayedHeartbeat/DelayedSync (timers.go: one timer heap driven by
// one goroutine, never a goroutine per member), the record schemas (records.go) and
// transactional offset commits (txn_offsets.go: TxnOffsetCommit, offsets pending per
// producer until the transaction's marker reaches the offsets partition).
//
// The package imports neither broker nor controller: the broker hands it a Log (append to
// and read from the offsets partitions, leadership) and calls OnElection/OnResignation.
//
// Concurrency: Coordinator is safe for concurrent use. c.mu guards the group map and the
// owned/loading partition sets; each group has its own mutex (Kafka's group lock). Lock
// order: a group's mu, then c.mu, then the timer queue's mu (c.mu is never held while
// taking a group's mu). No lock is held across an
// append to the log: appends run in tracked goroutines and call back under the group lock,
// as Kafka's appendRecords callbacks do.
package group
