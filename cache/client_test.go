package cache

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

func TestNewClient(t *testing.T) {
	tests := []struct {
		url     string
		cluster []string // the seed nodes of a cluster; nil: one server
		tls     bool
		err     bool
	}{
		{url: "redis://127.0.0.1:6379/0"},
		{url: "rediss://user:secret@redis.example:6380/2", tls: true},
		{url: "redis+cluster://127.0.0.1:7000", cluster: []string{"127.0.0.1:7000"}},
		{url: "redis://10.0.0.1:7000?addr=10.0.0.2:7000&addr=10.0.0.3:7000",
			cluster: []string{"10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"}},
		{url: "redis+cluster://10.0.0.1:7000/0?addr=10.0.0.2:7000&dial_timeout=2s", cluster: []string{"10.0.0.1:7000", "10.0.0.2:7000"}},
		{url: "rediss+cluster://user:secret@redis.example:7000", cluster: []string{"redis.example:7000"}, tls: true},
		{url: "redis+cluster://127.0.0.1:7000/1", err: true}, // a cluster has database 0 only
		{url: "redis+cluster://127.0.0.1:7000?pool=3", err: true},
		{url: "redis://127.0.0.1:7000?addr=nonsense", err: true},
		{url: "http://127.0.0.1:6379", err: true},
	}
	for _, tt := range tests {
		rdb, err := NewClient(tt.url, ClientOptions{})
		if (err != nil) != tt.err {
			t.Errorf("NewClient(%q): error %v, want error: %v", tt.url, err, tt.err)
			continue
		}
		if err != nil {
			continue
		}
		switch c := rdb.(type) {
		case *redis.ClusterClient:
			if diff := cmp.Diff(tt.cluster, c.Options().Addrs); diff != "" || (c.Options().TLSConfig != nil) != tt.tls {
				t.Errorf("NewClient(%q): cluster of %v, TLS %v; want %v, TLS %v", tt.url, c.Options().Addrs, c.Options().TLSConfig != nil, tt.cluster, tt.tls)
			}
		case *redis.Client:
			if tt.cluster != nil || (c.Options().TLSConfig != nil) != tt.tls {
				t.Errorf("NewClient(%q): one server (TLS %v), want a cluster of %v (TLS %v)", tt.url, c.Options().TLSConfig != nil, tt.cluster, tt.tls)
			}
		}
		rdb.Close()
	}
}
