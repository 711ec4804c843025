package deploycheck

import (
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// listenSettings are the settings whose address a container port must match.
var listenSettings = []string{"PASTEBIN_ADDR", "PASTEBIN_METRICS_ADDR"}

// TestProbesMatchTheBinary runs the binary as the Deployment's container says (its arguments and
// settings, with the test services in place of the Secrets), and asks each probe's path on the
// listener behind the probe's named port, and each Service's target port, as the kubelet and
// kube-proxy would: a path, port or address that drifts from what serve serves fails here.
func TestProbesMatchTheBinary(t *testing.T) {
	objs := render(t, "single-node")
	c := only[*appsv1.Deployment](t, objs, "pastebin").Spec.Template.Spec.Containers[0]
	env := serviceEnv(t)
	listeners := map[int32]string{} // container port number → the setting that listens on it
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			continue
		}
		env[e.Name] = e.Value
		for _, s := range listenSettings {
			if e.Name == s {
				listeners[addrPort(t, e.Value)] = s
				env[e.Name] = "127.0.0.1:0" // the kernel's choice: no port to collide with
			}
		}
	}
	cmd := exec.Command(pastebinBinary(t), c.Args...)
	cmd.Env = environ(env)
	s := startServing(t, cmd, env["PASTEBIN_METRICS_ADDR"] != "", func() { _ = cmd.Process.Kill() })
	live := map[string]string{"PASTEBIN_ADDR": s.public, "PASTEBIN_METRICS_ADDR": s.metrics}

	base := func(port intstr.IntOrString) string {
		t.Helper()
		for _, p := range c.Ports {
			if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
				if setting, ok := listeners[p.ContainerPort]; ok {
					return live[setting]
				}
				t.Fatalf("container port %s (%d) is no address a setting listens on: %v", p.Name, p.ContainerPort, listeners)
			}
		}
		t.Fatalf("port %s is none of the container's", port.String())
		return ""
	}
	for what, probe := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil {
			t.Errorf("no HTTP %s probe", what)
			continue
		}
		expectGet(t, base(probe.HTTPGet.Port)+probe.HTTPGet.Path, http.StatusOK, "")
	}
	expectGet(t, base(serviceTarget(t, objs, "pastebin"))+"/", http.StatusOK, "")
	expectGet(t, base(serviceTarget(t, objs, "pastebin-metrics"))+"/metrics", http.StatusOK, "# TYPE pastebin_")
	expectGet(t, s.public+"/metrics", http.StatusNotFound, "")
}

// TestMigrateJobMatchesTheBinary runs the Job's command as its container says.
func TestMigrateJobMatchesTheBinary(t *testing.T) {
	c := only[*batchv1.Job](t, render(t, "single-node"), "pastebin-migrate").Spec.Template.Spec.Containers[0]
	env := serviceEnv(t)
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	cmd := exec.Command(pastebinBinary(t), c.Args...)
	cmd.Env = environ(env)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "database at version") {
		t.Fatalf("pastebin %s: %v\n%s", strings.Join(c.Args, " "), err, out)
	}
}

func serviceTarget(t *testing.T, objs []runtime.Object, name string) intstr.IntOrString {
	t.Helper()
	svc := only[*corev1.Service](t, objs, name)
	if len(svc.Spec.Ports) != 1 {
		t.Fatalf("Service %s has %d ports, want 1", name, len(svc.Spec.Ports))
	}
	return svc.Spec.Ports[0].TargetPort
}

func addrPort(t *testing.T, addr string) int32 {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	n, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return int32(n)
}

// environ is env as a process's environment, with the PATH and nothing else of this one's.
func environ(env map[string]string) []string {
	out := []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// expectGet asks url and fails unless the answer has status and, if given, contains want.
func expectGet(t *testing.T, url string, status int, want string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status || !strings.Contains(string(body), want) {
		t.Errorf("GET %s: %d %.200s, want %d with %q", url, resp.StatusCode, body, status, want)
	}
}
