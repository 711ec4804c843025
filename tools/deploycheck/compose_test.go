package deploycheck

import (
	"context"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// loadCompose loads docker-compose.yml as docker compose does (compose-go, which validates it
// against the Compose specification's schema first).
func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	p, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  root,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(root, "docker-compose.yml")}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) { o.SetProjectName("pastebin", true) })
	if err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return p
}

// TestComposeRunsThePastebin: `docker compose up` builds the pastebin from the Containerfile and
// points it at the PostgreSQL, Redis and S3 services beside it, by their names, on the ports and
// with the credentials those services are given.
func TestComposeRunsThePastebin(t *testing.T) {
	p := loadCompose(t)
	svc := func(name string) types.ServiceConfig {
		s, err := p.GetService(name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	pb := svc("pastebin")
	if pb.Build == nil || pb.Build.Dockerfile != "Containerfile" || filepath.Clean(pb.Build.Context) != filepath.Clean(p.WorkingDir) {
		t.Errorf("pastebin's build: %+v, want the Containerfile in the project's root", pb.Build)
	}
	env := func(s types.ServiceConfig, name string) string {
		if v := s.Environment[name]; v != nil {
			return *v
		}
		t.Errorf("service %s: %s is not set", s.Name, name)
		return ""
	}
	pg, redis, s3 := svc("postgres"), svc("redis"), svc("s3")
	db := parseURL(t, env(pb, "PASTEBIN_DATABASE_URL"))
	password, _ := db.User.Password()
	if db.User.Username() != "postgres" || password != env(pg, "POSTGRES_PASSWORD") || db.Path != "/"+env(pg, "POSTGRES_DB") {
		t.Errorf("PASTEBIN_DATABASE_URL %s: not the postgres service's user, password and database", db.Redacted())
	}
	checkReaches(t, db, pg)
	checkReaches(t, parseURL(t, env(pb, "PASTEBIN_REDIS_URL")), redis)
	endpoint := parseURL(t, env(pb, "PASTEBIN_S3_ENDPOINT"))
	checkReaches(t, endpoint, s3)
	if i := slices.Index(s3.Command, "--port"); i < 0 || i+1 >= len(s3.Command) || s3.Command[i+1] != ":"+endpoint.Port() {
		t.Errorf("versitygw's command %q: not listening on %s's port", s3.Command, endpoint)
	}
	if env(pb, "PASTEBIN_S3_ACCESS_KEY_ID") != env(s3, "ROOT_ACCESS_KEY_ID") || env(pb, "PASTEBIN_S3_SECRET_ACCESS_KEY") != env(s3, "ROOT_SECRET_ACCESS_KEY") {
		t.Error("the pastebin's S3 keys are not versitygw's")
	}
	_, port, _ := net.SplitHostPort(env(pb, "PASTEBIN_ADDR"))
	if len(pb.Ports) != 1 || strconv.Itoa(int(pb.Ports[0].Target)) != port {
		t.Errorf("pastebin publishes %+v, want its PASTEBIN_ADDR's port %s", pb.Ports, port)
	}
	for _, dep := range []string{"postgres", "redis", "s3"} {
		if _, ok := pb.DependsOn[dep]; !ok {
			t.Errorf("pastebin does not depend on %s", dep)
		}
	}
	if !pb.ReadOnly {
		t.Error("pastebin's root file system is writable")
	}
}

// checkReaches fails unless u names service s by its name, on a port s publishes from its container.
func checkReaches(t *testing.T, u *url.URL, s types.ServiceConfig) {
	t.Helper()
	if u.Hostname() != s.Name {
		t.Errorf("%s: host %q, want the service %s", u.Redacted(), u.Hostname(), s.Name)
	}
	for _, p := range s.Ports {
		if strconv.Itoa(int(p.Target)) == u.Port() {
			return
		}
	}
	t.Errorf("%s: port %s is not one service %s listens on (%+v)", u.Redacted(), u.Port(), s.Name, s.Ports)
}

func parseURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
