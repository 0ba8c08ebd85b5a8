// Package sockopt applies Kafka's socket buffer settings (socket.send.buffer.bytes,
// socket.receive.buffer.bytes, replica.socket.receive.buffer.bytes) to sockets before
// they connect or listen, as Java's Socket.setReceiveBufferSize does when Kafka calls it
// before connect/bind: a receive buffer set that early also sizes the TCP window scale the
// handshake negotiates. A size of -1 (Kafka's Selectable.USE_DEFAULT_BUFFER_SIZE), or any
// size ≤ 0, leaves the operating system's default, which on Linux keeps buffer
// auto-tuning on.
package sockopt

import "syscall"

// Control returns a net.Dialer / net.ListenConfig Control function that sets SO_SNDBUF to
// send and SO_RCVBUF to recv where they are > 0; nil when neither is.
func Control(send, recv int) func(network, address string, c syscall.RawConn) error {
	if send <= 0 && recv <= 0 {
		return nil
	}
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = setBuffers(fd, send, recv) }); err != nil {
			return err
		}
		return serr
	}
}
