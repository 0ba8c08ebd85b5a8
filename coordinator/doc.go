// Package coordinator will hold the group coordinator (consumer groups and offsets in
// __consumer_offsets) and later the transaction coordinator.
package coordinator
