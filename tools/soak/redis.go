package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clusterNodeTimeout is the soak cluster's cluster-node-timeout: a master down for longer is marked
// failed by the others. The faults keep a master down for 0.5 to 4.5 seconds, so some outages pass
// unnoticed by the cluster and some do not; with no replica to fail over to, the others go on
// serving their own slots (cluster-require-full-coverage no).
const clusterNodeTimeout = 2 * time.Second

// redisServers is the soak's Redis: one server, or the three masters of a Redis Cluster (no
// replicas). Each node keeps its port, and a cluster node its nodes.conf, across restarts; no data
// survives one.
type redisServers struct {
	nodes   []*proc
	addrs   []string // each node's address, index for index
	cluster bool

	mu      sync.Mutex
	created bool // the cluster was joined (once, at its first start)
}

func newRedisServers(cfg config, dataDir string) (*redisServers, error) {
	r := &redisServers{cluster: cfg.redisCluster}
	n := 1
	if r.cluster {
		n = 3
	}
	for i := range n {
		port, err := cfg.ports.pick()
		if err != nil {
			return nil, err
		}
		bus, err := cfg.ports.pick()
		if err != nil {
			return nil, err
		}
		name, dir := "redis", dataDir
		if r.cluster {
			name, dir = fmt.Sprintf("redis-%d", i), filepath.Join(dataDir, fmt.Sprintf("redis-%d", i))
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--logfile", ""}
		if r.cluster {
			args = append(args, "--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(bus),
				"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", strconv.Itoa(int(clusterNodeTimeout.Milliseconds())),
				"--cluster-require-full-coverage", "no")
		}
		r.addrs = append(r.addrs, addr)
		r.nodes = append(r.nodes, &proc{name: name, path: "redis-server", env: cfg.env.list(),
			log: filepath.Join(cfg.dir, name+".log"), args: args, ready: redisReady(addr)})
	}
	return r, nil
}

// url is PASTEBIN_REDIS_URL: go-redis's cluster URL, its first node and the others as addr=.
func (r *redisServers) url() string {
	if !r.cluster {
		return "redis://" + r.addrs[0] + "/0"
	}
	return "redis+cluster://" + r.addrs[0] + "?addr=" + strings.Join(r.addrs[1:], "&addr=")
}

// ensureUp starts every node that is not running; the first time, it then joins the cluster with
// redis-cli --cluster create and waits until every node says cluster_state:ok. A restarted node
// rejoins by itself from its nodes.conf.
func (r *redisServers) ensureUp(ctx context.Context, tries int) error {
	for _, p := range r.nodes {
		if !p.running() {
			if _, err := p.start(ctx, tries); err != nil {
				return err
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.cluster || r.created {
		return nil
	}
	args := append(append([]string{"--cluster", "create"}, r.addrs...), "--cluster-yes")
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("redis-cli --cluster create: %v: %s", err, lastLines(string(out), 5))
	}
	for _, addr := range r.addrs {
		if err := pollUntil(ctx, 30*time.Second, func() error { return clusterOK(ctx, addr) }); err != nil {
			return err
		}
	}
	r.created = true
	return nil
}

// pollUntil calls check every 100ms until it passes, ctx ends or d has passed.
func pollUntil(ctx context.Context, d time.Duration, check func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// clusterOK checks that the node at addr says cluster_state:ok: the first line of CLUSTER INFO.
func clusterOK(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("CLUSTER INFO\r\n")); err != nil {
		return err
	}
	rd := bufio.NewReader(conn)
	_, _ = rd.ReadString('\n') // the bulk string's length
	line, err := rd.ReadString('\n')
	if err == nil && strings.TrimSpace(line) != "cluster_state:ok" {
		err = fmt.Errorf("%s: %s", addr, strings.TrimSpace(line))
	}
	return err
}
