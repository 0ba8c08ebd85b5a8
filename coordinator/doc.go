// Package coordinator holds what the group coordinator (coordinator/group: consumer groups
// and offsets in __consumer_offsets) and the transaction coordinator
// (coordinator/transaction: transactions in __transaction_state) share: the placement of a
// key on its internal topic's partitions.
package coordinator
