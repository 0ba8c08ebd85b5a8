package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Container is one container of the compose project, as docker inspect describes it.
type Container struct {
	Name    string            // container name
	Service string            // compose service name
	IP      string            // address on the project's network
	Env     map[string]string // its environment
	Names   []string          // every name it answers to on the network (service, hostname, aliases)
	Network string            // the compose network it is on

	BrokerID int32 // KAFKA_BROKER_ID, for a broker; -1 otherwise
	ZKID     int   // ZOO_MY_ID, for a ZooKeeper server; 0 otherwise
}

// Project is a running compose project: its brokers and ZooKeeper servers.
type Project struct {
	Name    string
	Brokers []*Container // by broker id
	ZK      []*Container // by ZOO_MY_ID
}

// docker runs the docker CLI and returns its standard output.
func docker(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", args...).Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return "", fmt.Errorf("docker %s: %s", strings.Join(args, " "), msg)
	}
	return string(out), nil
}

// inspected is the part of `docker inspect` this package reads.
type inspected struct {
	Name   string
	Config struct {
		Hostname string
		Env      []string
		Labels   map[string]string
	}
	NetworkSettings struct {
		Networks map[string]struct {
			IPAddress string
			Aliases   []string
		}
	}
}

// FindProject lists the running containers of compose project name and sorts them into
// brokers (they have KAFKA_BROKER_ID) and ZooKeeper servers (ZOO_MY_ID).
func FindProject(name string) (*Project, error) {
	out, err := docker("ps", "-q", "--filter", "label=com.docker.compose.project="+name)
	if err != nil {
		return nil, err
	}
	ids := strings.Fields(out)
	if len(ids) == 0 {
		return nil, fmt.Errorf("no running containers in compose project %q", name)
	}
	js, err := docker(append([]string{"inspect"}, ids...)...)
	if err != nil {
		return nil, err
	}
	var all []inspected
	if err := json.Unmarshal([]byte(js), &all); err != nil {
		return nil, fmt.Errorf("docker inspect: %w", err)
	}
	p := &Project{Name: name}
	for _, in := range all {
		c := &Container{
			Name:     strings.TrimPrefix(in.Name, "/"),
			Service:  in.Config.Labels["com.docker.compose.service"],
			Env:      map[string]string{},
			BrokerID: -1,
		}
		for _, kv := range in.Config.Env {
			k, v, _ := strings.Cut(kv, "=")
			c.Env[k] = v
		}
		c.Names = append(c.Names, c.Name, c.Service, in.Config.Hostname)
		for name, n := range in.NetworkSettings.Networks {
			if c.IP == "" {
				c.IP, c.Network = n.IPAddress, name
			}
			c.Names = append(c.Names, n.Aliases...)
		}
		if v, ok := c.Env["KAFKA_BROKER_ID"]; ok {
			id, err := strconv.ParseInt(v, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("%s: KAFKA_BROKER_ID=%q", c.Name, v)
			}
			c.BrokerID = int32(id)
			p.Brokers = append(p.Brokers, c)
		} else if v, ok := c.Env["ZOO_MY_ID"]; ok {
			c.ZKID, err = strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("%s: ZOO_MY_ID=%q", c.Name, v)
			}
			p.ZK = append(p.ZK, c)
		}
	}
	sort.Slice(p.Brokers, func(i, j int) bool { return p.Brokers[i].BrokerID < p.Brokers[j].BrokerID })
	sort.Slice(p.ZK, func(i, j int) bool { return p.ZK[i].ZKID < p.ZK[j].ZKID })
	if len(p.Brokers) == 0 || len(p.ZK) == 0 {
		return nil, fmt.Errorf("compose project %q: %d brokers (KAFKA_BROKER_ID) and %d ZooKeeper servers (ZOO_MY_ID)", name, len(p.Brokers), len(p.ZK))
	}
	return p, nil
}

// Broker returns the broker container with id, or nil.
func (p *Project) Broker(id int32) *Container {
	for _, b := range p.Brokers {
		if b.BrokerID == id {
			return b
		}
	}
	return nil
}

// Resolve maps a name a broker advertises (a service name, hostname or alias) and a port to
// the container's address, so a client on the docker host reaches the internal listener
// without DNS for the project's network. Anything else is returned as is.
func (p *Project) Resolve(hostport string) string {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport
	}
	for _, c := range append(append([]*Container{}, p.Brokers...), p.ZK...) {
		for _, n := range c.Names {
			if n != "" && n == host {
				return net.JoinHostPort(c.IP, port)
			}
		}
	}
	return hostport
}

// Bootstrap is every broker's internal listener as container-IP:port: the listener of
// KAFKA_ADVERTISED_LISTENERS whose host is a name on the project's network (the host-facing
// one advertises localhost or the host's name, which says nothing about the container).
func (p *Project) Bootstrap() ([]string, error) {
	var out []string
	for _, b := range p.Brokers {
		addr, err := b.internalListener()
		if err != nil {
			return nil, err
		}
		out = append(out, net.JoinHostPort(b.IP, addr))
	}
	return out, nil
}

// internalListener returns the port of b's advertised listener that names b itself.
func (b *Container) internalListener() (string, error) {
	adv := b.Env["KAFKA_ADVERTISED_LISTENERS"]
	if adv == "" {
		adv = b.Env["KAFKA_LISTENERS"]
	}
	for _, l := range strings.Split(adv, ",") {
		_, hp, ok := strings.Cut(strings.TrimSpace(l), "://")
		if !ok {
			continue
		}
		host, port, err := net.SplitHostPort(hp)
		if err != nil {
			continue
		}
		for _, n := range b.Names {
			if n != "" && n == host {
				return port, nil
			}
		}
	}
	return "", fmt.Errorf("%s: no advertised listener names the container (KAFKA_ADVERTISED_LISTENERS=%q)", b.Name, adv)
}

// ZKConnect returns the ensemble's client addresses (container-IP:port) and the chroot of
// the brokers' KAFKA_ZOOKEEPER_CONNECT.
func (p *Project) ZKConnect() (servers []string, chroot string, err error) {
	conn := p.Brokers[0].Env["KAFKA_ZOOKEEPER_CONNECT"]
	if conn == "" {
		return nil, "", fmt.Errorf("%s: no KAFKA_ZOOKEEPER_CONNECT", p.Brokers[0].Name)
	}
	hosts := conn
	if i := strings.IndexByte(conn, '/'); i >= 0 {
		hosts, chroot = conn[:i], strings.TrimSuffix(conn[i:], "/")
	}
	for _, h := range strings.Split(hosts, ",") {
		servers = append(servers, p.Resolve(strings.TrimSpace(h)))
	}
	return servers, chroot, nil
}

// QuorumPort is the port a ZooKeeper leader listens on for its followers: the first port
// of ZOO_SERVERS' entries (server.N=host:2888:3888;2181), 2888 by default.
func (p *Project) QuorumPort() int {
	for _, f := range strings.Fields(p.ZK[0].Env["ZOO_SERVERS"]) {
		_, rest, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		parts := strings.Split(strings.Split(rest, ";")[0], ":")
		if len(parts) >= 2 {
			if n, err := strconv.Atoi(parts[1]); err == nil {
				return n
			}
		}
	}
	return 2888
}
