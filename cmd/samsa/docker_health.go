package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-kafka/samsa/internal/config"
)

// dockerHealthTimeout bounds the whole check; the image's HEALTHCHECK gives it 5 s.
const dockerHealthTimeout = 4 * time.Second

// runDockerHealth is the image's health check. It reads the same environment as docker-run,
// connects to this broker's inter-broker listener on the loopback address and asks it for
// Metadata: healthy when the broker lists itself (the controller has sent it UpdateMetadata,
// so it is registered in ZooKeeper) and names a controller. A listener with TLS or SASL is
// only checked to accept connections.
func runDockerHealth(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "samsa docker-health: takes no arguments; got %q\n", args)
		return 2
	}
	ec, err := dockerEnvConfig(os.Environ())
	if err != nil {
		fmt.Fprintf(stderr, "samsa docker-health: invalid configuration in the environment:\n%s\n", indent(err.Error()))
		return 1
	}
	cfg, _, err := ec.load()
	if err != nil {
		fmt.Fprintf(stderr, "samsa docker-health: invalid configuration in the environment:\n%s\n", indent(err.Error()))
		return 1
	}
	msg, err := checkBrokerHealth(cfg, time.Now().Add(dockerHealthTimeout))
	if err != nil {
		fmt.Fprintf(stderr, "samsa docker-health: unhealthy: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, msg)
	return 0
}

// healthAddress is where this process reaches listener l of the broker beside it: its own
// host unless it binds every address.
func healthAddress(l config.Listener) string {
	host := l.Host
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, strconv.Itoa(int(l.Port)))
}

func checkBrokerHealth(cfg *config.Config, deadline time.Time) (string, error) {
	var l config.Listener
	found := false
	for _, x := range cfg.Listeners {
		if x.Name == cfg.InterBrokerListenerName || !found {
			l, found = x, true
		}
	}
	if !found {
		return "", fmt.Errorf("no listener configured")
	}
	addr := healthAddress(l)
	conn, err := net.DialTimeout("tcp", addr, time.Until(deadline))
	if err != nil {
		return "", fmt.Errorf("listener %s: %w", l.Name, err)
	}
	defer conn.Close()
	if l.SecurityProtocol != "PLAINTEXT" {
		return fmt.Sprintf("broker %d accepts connections on %s (%s; not queried)", cfg.BrokerID, addr, l.SecurityProtocol), nil
	}
	_ = conn.SetDeadline(deadline)
	resp, err := healthMetadata(conn)
	if err != nil {
		return "", fmt.Errorf("metadata from %s: %w", addr, err)
	}
	self := false
	for _, b := range resp.Brokers {
		self = self || b.NodeID == cfg.BrokerID
	}
	switch {
	case !self:
		return "", fmt.Errorf("broker %d does not list itself in its metadata yet (not registered, or no UpdateMetadata from the controller)", cfg.BrokerID)
	case resp.ControllerID < 0:
		return "", fmt.Errorf("broker %d knows no controller", cfg.BrokerID)
	}
	return fmt.Sprintf("broker %d serves on %s; %d brokers, controller %d", cfg.BrokerID, addr, len(resp.Brokers), resp.ControllerID), nil
}

// healthMetadata sends one Metadata v4 request (no topics) on conn and reads the response;
// v4 is not flexible, so the response header is the correlation id alone.
func healthMetadata(conn net.Conn) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 4
	req.Topics = []kmsg.MetadataRequestTopic{}
	const correlationID = 1
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("samsa-docker-health")).AppendRequest(nil, req, correlationID)
	if _, err := conn.Write(frame); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 1<<20 {
		return nil, fmt.Errorf("response of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(conn, body); err != nil {
		return nil, err
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != correlationID {
		return nil, fmt.Errorf("correlation id %d, want %d", got, correlationID)
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 4
	if err := resp.ReadFrom(body[4:]); err != nil {
		return nil, err
	}
	return resp, nil
}
