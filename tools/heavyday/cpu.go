package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"pastebin/cache"
	"pastebin/tools/internal/benchdata"
)

// The parts, in the order the report lists them.
const (
	cpuPostgres = "PostgreSQL"
	cpuReplicas = "replicas"
	cpuS3       = "S3 (versitygw)"
	cpuRedis    = "Redis"
	cpuBench    = "this benchmark (load, scrapes)"
)

var cpuOrder = []string{cpuPostgres, cpuReplicas, cpuS3, cpuRedis, cpuBench, benchdata.CPURest, benchdata.CPUIdle}

// cpuParts lists the processes of a phase: PostgreSQL, the replicas rs, S3, Redis and this
// benchmark (the foreground load and the scrapes). A part that cannot be found is left out, and
// its time counts in the rest of the machine.
func (b *bench) cpuParts(ctx context.Context, rs []*replica) []benchdata.CPUPart {
	var parts []benchdata.CPUPart
	if pg, err := benchdata.PostgresPart(ctx, b.dbs.Admin(), cpuPostgres); err == nil {
		parts = append(parts, pg)
	}
	for _, r := range rs {
		parts = append(parts, benchdata.CPUPart{Name: cpuReplicas, PID: r.cmd.Process.Pid})
	}
	if dir := b.cfg.services.S3DataDir; dir != "" {
		if pid := benchdata.FindProcess(filepath.Clean(dir)); pid != 0 {
			parts = append(parts, benchdata.CPUPart{Name: cpuS3, PID: pid})
		}
	}
	if pid := b.redisPID(ctx); pid != 0 {
		parts = append(parts, benchdata.CPUPart{Name: cpuRedis, PID: pid})
	}
	return append(parts, benchdata.CPUPart{Name: cpuBench, PID: os.Getpid()})
}

func (b *bench) redisPID(ctx context.Context) int {
	rdb, err := cache.NewClient(b.cfg.services.RedisURL, cache.ClientOptions{})
	if err != nil {
		return 0
	}
	defer rdb.Close()
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return 0
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, _ := strconv.Atoi(v)
			return pid
		}
	}
	return 0
}
