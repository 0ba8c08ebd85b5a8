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
