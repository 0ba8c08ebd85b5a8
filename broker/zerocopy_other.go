//go:build !linux

package broker

// zerocopy_other.go — where Linux's sendfile at an explicit offset and MSG_MORE are not
// available (macOS's sendfile has another signature and no MSG_MORE), zeroCopyFor returns
// nil and every Fetch response is copied: the handler preads the records into it.

import (
	"errors"
	"syscall"

	"github.com/samsa-kafka/samsa/logstore"
)

const zeroCopySupported = false

var errNoZeroCopy = errors.New("broker: zero-copy fetch is not supported on this system")

// writeMore and sendFileRegion are never reached here: zeroCopyFor returns nil.
func writeMore(syscall.RawConn, []byte) error                   { return errNoZeroCopy }
func sendFileRegion(syscall.RawConn, logstore.FileRegion) error { return errNoZeroCopy }
