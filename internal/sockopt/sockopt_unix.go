//go:build unix

package sockopt

import (
	"fmt"
	"syscall"
)

func setBuffers(fd uintptr, send, recv int) error {
	if send > 0 {
		if err := syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, send); err != nil {
			return fmt.Errorf("sockopt: SO_SNDBUF %d: %w", send, err)
		}
	}
	if recv > 0 {
		if err := syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, recv); err != nil {
			return fmt.Errorf("sockopt: SO_RCVBUF %d: %w", recv, err)
		}
	}
	return nil
}

// Buffers reads a socket's SO_SNDBUF and SO_RCVBUF as the kernel reports them (Linux
// reports twice the size set: it keeps room for its own bookkeeping).
func Buffers(c syscall.Conn) (send, recv int, err error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var e1, e2 error
	if err := rc.Control(func(fd uintptr) {
		send, e1 = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF)
		recv, e2 = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
	}); err != nil {
		return 0, 0, err
	}
	if e1 != nil {
		return 0, 0, fmt.Errorf("sockopt: SO_SNDBUF: %w", e1)
	}
	if e2 != nil {
		return 0, 0, fmt.Errorf("sockopt: SO_RCVBUF: %w", e2)
	}
	return send, recv, nil
}
