package broker

// zerocopy_linux.go — the system calls behind zerocopy.go: the framing written with
// MSG_MORE and the record bytes with sendfile(2) at an explicit file offset. Both are
// Linux's; other systems take the copying path (zerocopy_other.go).

import (
	"fmt"
	"io"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/samsa-kafka/samsa/logstore"
)

// zeroCopySupported: sendfile at an offset and MSG_MORE are available.
const zeroCopySupported = true

// writeMore writes b to the socket with MSG_MORE, so the kernel holds the framing to
// leave with the record bytes sendfile sends next rather than as a small packet alone.
func writeMore(out syscall.RawConn, b []byte) error {
	var serr error
	werr := out.Write(func(fd uintptr) bool {
		for len(b) > 0 {
			n, err := unix.SendmsgN(int(fd), b, nil, nil, unix.MSG_MORE)
			if n > 0 {
				b = b[n:]
			}
			switch {
			case err == unix.EAGAIN:
				return false
			case err == unix.EINTR:
				continue
			case err != nil:
				serr = err
				return true
			}
		}
		return true
	})
	if serr != nil {
		return fmt.Errorf("write fetch framing: %w", serr)
	}
	return werr
}

// sendFileRegion sends r to the socket behind out with sendfile at r's explicit offset,
// waiting for socket space through the runtime poller (so write deadlines apply). The
// segment file's descriptor is held through its own RawConn, so a concurrent Close
// cannot hand us a reused fd.
func sendFileRegion(out syscall.RawConn, r logstore.FileRegion) error {
	in, err := r.File.SyscallConn()
	if err != nil {
		return fmt.Errorf("sendfile %s: %w", r.File.Name(), err)
	}
	off, left := r.Pos, r.Len
	for left > 0 {
		var serr error
		cerr := in.Control(func(infd uintptr) {
			werr := out.Write(func(outfd uintptr) bool {
				for left > 0 {
					n, err := unix.Sendfile(int(outfd), int(infd), &off, int(min(left, 1<<30)))
					if n > 0 {
						left -= int64(n)
					}
					switch {
					case err == unix.EAGAIN:
						return false // wait until the socket is writable
					case err == unix.EINTR:
						continue
					case err != nil:
						serr = err
						return true
					case n == 0:
						serr = io.ErrUnexpectedEOF // file shorter than the region: truncated
						return true
					}
				}
				return true
			})
			if serr == nil {
				serr = werr
			}
		})
		if cerr != nil {
			return fmt.Errorf("sendfile %s: %w", r.File.Name(), cerr)
		}
		if serr != nil {
			return fmt.Errorf("sendfile %s at %d: %w", r.File.Name(), off, serr)
		}
	}
	return nil
}
