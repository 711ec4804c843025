package deploycheck

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestManifestsDecodeStrictly: every file under deploy/kubernetes, overlays' patches included,
// decodes into the Kubernetes API types (or kustomize's) with no field unknown to them.
func TestManifestsDecodeStrictly(t *testing.T) {
	dec := kubeDecoder()
	for _, path := range yamlFiles(t, kubeDir) {
		rel, _ := filepath.Rel(kubeDir, path)
		t.Run(rel, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Base(path) == "kustomization.yaml" {
				if _, err := decodeKustomization(data); err != nil {
					t.Fatal(err)
				}
				return
			}
			objs, err := decodeManifests(dec, data)
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) == 0 {
				t.Fatal("no manifest in the file")
			}
		})
	}
}

// TestDecoderIsStrict: the decoders the other tests trust refuse what the API server's strict
// validation refuses, and kustomize a misspelt kustomization field.
func TestDecoderIsStrict(t *testing.T) {
	dec := kubeDecoder()
	manifest := func(doc string) error { _, err := decodeManifests(dec, []byte(doc)); return err }
	kustomization := func(doc string) error { _, err := decodeKustomization([]byte(doc)); return err }
	for name, c := range map[string]struct {
		decode func(string) error
		doc    string
	}{
		"unknown field":   {manifest, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 2}\n"},
		"field's case":    {manifest, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {Replicas: 2}\n"},
		"field twice":     {manifest, "apiVersion: v1\nkind: Service\nmetadata: {name: x, name: y}\n"},
		"unknown kind":    {manifest, "apiVersion: v1\nkind: Servce\nmetadata: {name: x}\n"},
		"nested unknown":  {manifest, "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec: {template: {spec: {containers: [{name: a, imag: b}]}}}\n"},
		"kustomize field": {kustomization, "resources: [a.yaml]\nresource: [b.yaml]\n"},
	} {
		if c.decode(c.doc) == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
}

// TestOverlaysRender: each overlay renders every part the pastebin needs, and every Secret and
// ConfigMap its pods read is among them.
func TestOverlaysRender(t *testing.T) {
	for overlay, replicas := range map[string]int32{"single-node": 1, "scaled": 3} {
		t.Run(overlay, func(t *testing.T) {
			objs := render(t, overlay)
			d := only[*appsv1.Deployment](t, objs, "pastebin")
			if got := *d.Spec.Replicas; got != replicas {
				t.Errorf("replicas: got %d, want %d", got, replicas)
			}
			only[*corev1.Service](t, objs, "pastebin")
			only[*corev1.Service](t, objs, "pastebin-metrics")
			only[*policyv1.PodDisruptionBudget](t, objs, "pastebin")
			job := only[*batchv1.Job](t, objs, "pastebin-migrate")
			for _, pod := range []corev1.PodSpec{d.Spec.Template.Spec, job.Spec.Template.Spec} {
				checkReferences(t, objs, pod)
			}
			if got := job.Spec.Template.Spec.Containers[0].Args; len(got) == 0 || got[0] != "migrate" {
				t.Errorf("the Job runs %q, want pastebin migrate", got)
			}
			if got := envValue(t, objs, d, "PASTEBIN_MIGRATE"); got != "false" {
				t.Errorf("replicas' PASTEBIN_MIGRATE: %q, want false: the Job migrates", got)
			}
		})
	}
}

// TestScaledGoesThroughThePooler: the scaled overlay's replicas reach PostgreSQL through pgbouncer
// in transaction mode, and its migrations reach PostgreSQL itself (docs/scaling.md, "pgbouncer").
func TestScaledGoesThroughThePooler(t *testing.T) {
	objs := render(t, "scaled")
	d := only[*appsv1.Deployment](t, objs, "pastebin")
	if got := envValue(t, objs, d, "PASTEBIN_DATABASE_POOLER"); got != "transaction" {
		t.Errorf("PASTEBIN_DATABASE_POOLER: %q, want transaction", got)
	}
	conns := only[*corev1.Secret](t, objs, "pastebin-connections").StringData
	if conns["PASTEBIN_DATABASE_URL"] == conns["PASTEBIN_MIGRATE_DATABASE_URL"] || !strings.Contains(conns["PASTEBIN_DATABASE_URL"], "pgbouncer") {
		t.Errorf("replicas' database %q, migrations' %q: want pgbouncer, then PostgreSQL itself",
			conns["PASTEBIN_DATABASE_URL"], conns["PASTEBIN_MIGRATE_DATABASE_URL"])
	}
	if d.Spec.Template.Spec.TopologySpreadConstraints == nil {
		t.Error("no topology spread: replicas may share a node")
	}
}

// checkReferences fails when pod reads a Secret or ConfigMap that is not among objs.
func checkReferences(t *testing.T, objs []runtime.Object, pod corev1.PodSpec) {
	t.Helper()
	for _, c := range pod.Containers {
		for _, from := range c.EnvFrom {
			switch {
			case from.SecretRef != nil:
				only[*corev1.Secret](t, objs, from.SecretRef.Name)
			case from.ConfigMapRef != nil:
				only[*corev1.ConfigMap](t, objs, from.ConfigMapRef.Name)
			}
		}
	}
}

// envValue is the value of a setting of the Deployment's container: from its env, else from the
// ConfigMaps and Secrets it reads whole.
func envValue(t *testing.T, objs []runtime.Object, d *appsv1.Deployment, name string) string {
	t.Helper()
	c := d.Spec.Template.Spec.Containers[0]
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef != nil {
			if v, ok := only[*corev1.ConfigMap](t, objs, from.ConfigMapRef.Name).Data[name]; ok {
				return v
			}
		}
		if from.SecretRef != nil {
			if v, ok := only[*corev1.Secret](t, objs, from.SecretRef.Name).StringData[name]; ok {
				return v
			}
		}
	}
	return ""
}

// TestSelectorsPickTheServer: the Services and the PodDisruptionBudget select the Deployment's
// pods and never the migration Job's.
func TestSelectorsPickTheServer(t *testing.T) {
	objs := render(t, "scaled")
	d := only[*appsv1.Deployment](t, objs, "pastebin")
	server := labels.Set(d.Spec.Template.Labels)
	migrate := labels.Set(only[*batchv1.Job](t, objs, "pastebin-migrate").Spec.Template.Labels)
	selectors := map[string]map[string]string{
		"Deployment":               d.Spec.Selector.MatchLabels,
		"Service pastebin":         only[*corev1.Service](t, objs, "pastebin").Spec.Selector,
		"Service pastebin-metrics": only[*corev1.Service](t, objs, "pastebin-metrics").Spec.Selector,
		"PodDisruptionBudget":      only[*policyv1.PodDisruptionBudget](t, objs, "pastebin").Spec.Selector.MatchLabels,
		"topology spread (scaled)": d.Spec.Template.Spec.TopologySpreadConstraints[0].LabelSelector.MatchLabels,
	}
	for what, sel := range selectors {
		s := labels.SelectorFromSet(sel)
		if len(sel) == 0 || !s.Matches(server) {
			t.Errorf("%s selects %v: not the Deployment's pods %v", what, sel, server)
		}
		if s.Matches(migrate) {
			t.Errorf("%s selects %v: the migration Job's pods too", what, sel)
		}
	}
}

// TestSecurityContexts: every pod runs as the image's user, not root, without privileges, on a
// read-only root file system.
func TestSecurityContexts(t *testing.T) {
	uid := containerfileUser(t)
	objs := render(t, "scaled")
	pods := map[string]corev1.PodSpec{
		"Deployment": only[*appsv1.Deployment](t, objs, "pastebin").Spec.Template.Spec,
		"Job":        only[*batchv1.Job](t, objs, "pastebin-migrate").Spec.Template.Spec,
	}
	for what, pod := range pods {
		sc := pod.SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != uid {
			t.Errorf("%s: pod security context %+v: want runAsNonRoot and runAsUser %d (the Containerfile's USER)", what, sc, uid)
		}
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			t.Errorf("%s: mounts a service account token it never uses", what)
		}
		for _, c := range pod.Containers {
			cs := c.SecurityContext
			if cs == nil || !isTrue(cs.ReadOnlyRootFilesystem) || cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation ||
				cs.Capabilities == nil || len(cs.Capabilities.Drop) != 1 || cs.Capabilities.Drop[0] != "ALL" {
				t.Errorf("%s, container %s: security context %+v: want a read-only root, no privilege escalation, every capability dropped", what, c.Name, cs)
			}
		}
	}
}

func isTrue(b *bool) bool { return b != nil && *b }

// containerfileUser is the user id of the Containerfile's USER line.
func containerfileUser(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^USER (\d+):\d+$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("the Containerfile has no USER uid:gid line")
	}
	uid, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return uid
}

// TestShutdownFitsTheGracePeriod: the preStop sleep is the drain delay, and the grace period
// outlasts the sleep, the process's drain, its shutdown timeout and the cleanup batch in flight
// (docs/scaling.md, "Shutdown").
func TestShutdownFitsTheGracePeriod(t *testing.T) {
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			objs := render(t, overlay)
			d := only[*appsv1.Deployment](t, objs, "pastebin")
			drain := envDuration(t, objs, d, "PASTEBIN_DRAIN_DELAY")
			shutdown := envDuration(t, objs, d, "PASTEBIN_SHUTDOWN_TIMEOUT")
			hook := d.Spec.Template.Spec.Containers[0].Lifecycle
			if hook == nil || hook.PreStop == nil || hook.PreStop.Sleep == nil {
				t.Fatal("no preStop sleep")
			}
			sleep := time.Duration(hook.PreStop.Sleep.Seconds) * time.Second
			if sleep != drain {
				t.Errorf("preStop sleeps %v, want PASTEBIN_DRAIN_DELAY (%v)", sleep, drain)
			}
			grace := time.Duration(*d.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
			if need := sleep + drain + shutdown + batchMargin; grace < need {
				t.Errorf("terminationGracePeriodSeconds %v: under preStop %v + drain %v + shutdown %v + a batch %v",
					grace, sleep, drain, shutdown, batchMargin)
			}
		})
	}
}

// batchMargin is what a shutdown leaves the cleanup batch in flight: under a second
// (docs/scaling.md, "Shutdown"; finishing p99 at most 263 ms in docs/heavyday-10m.md).
const batchMargin = time.Second

func envDuration(t *testing.T, objs []runtime.Object, d *appsv1.Deployment, name string) time.Duration {
	t.Helper()
	v, err := time.ParseDuration(envValue(t, objs, d, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// TestResourcesCoverTheHeavyDay: each replica requests at least the memory and processor time the
// heavy day measured (docs/heavyday-10m.md), and its memory limit leaves room for the uploads it
// may hold at once on top.
func TestResourcesCoverTheHeavyDay(t *testing.T) {
	rss, cores := heavyDayPerReplica(t)
	d := only[*appsv1.Deployment](t, render(t, "scaled"), "pastebin")
	res := d.Spec.Template.Spec.Containers[0].Resources
	if got := res.Requests.Memory().Value(); float64(got) < rss {
		t.Errorf("memory request %d bytes: under the heavy day's peak RSS, %.0f", got, rss)
	}
	if got := res.Requests.Cpu().AsApproximateFloat64(); got < cores {
		t.Errorf("cpu request %.3f: under the heavy day's %.3f cores per replica", got, cores)
	}
	uploads := resource.MustParse("160Mi") // 16 concurrent uploads of 10 MiB, the defaults
	if limit := res.Limits.Memory(); limit.IsZero() || float64(limit.Value()) < rss+float64(uploads.Value()) {
		t.Errorf("memory limit %v: under the peak RSS plus %v of uploads", limit, &uploads)
	}
	if !res.Limits.Cpu().IsZero() {
		t.Error("a CPU limit throttles the latency the drain's pacing steers by")
	}
}

// heavyDayPerReplica reads the heavy day's report: the largest peak RSS of a replica in bytes, and
// the most processor time (cores) the replicas took together in a phase, divided among them.
func heavyDayPerReplica(t *testing.T) (rss, cores float64) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "docs", "heavyday-10m.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`Peak RSS of the replicas: ([\d.]+) MB, ([\d.]+) MB`).FindAllSubmatch(data, -1) {
		for _, v := range m[1:] {
			mb, _ := strconv.ParseFloat(string(v), 64)
			rss = max(rss, mb*1e6)
		}
	}
	n := regexp.MustCompile(`(\d+) replicas ×`).FindSubmatch(data)
	row := regexp.MustCompile(`(?m)^\| replicas \|(.*)\|$`).FindSubmatch(data)
	if rss == 0 || n == nil || row == nil {
		t.Fatal("docs/heavyday-10m.md: no peak RSS, replica count or replicas' processor time found")
	}
	replicas, _ := strconv.ParseFloat(string(n[1]), 64)
	for _, cell := range strings.Split(string(row[1]), "|") {
		if f := strings.Fields(cell); len(f) > 0 {
			if c, err := strconv.ParseFloat(f[0], 64); err == nil {
				cores = max(cores, c/replicas)
			}
		}
	}
	return rss, cores
}

// TestMetricsOffThePublicService: the public Service never exposes the metrics' port, and the
// metrics' Service exposes nothing else.
func TestMetricsOffThePublicService(t *testing.T) {
	objs := render(t, "scaled")
	for name, want := range map[string]string{"pastebin": "http", "pastebin-metrics": "metrics"} {
		svc := only[*corev1.Service](t, objs, name)
		got := map[string]bool{}
		for _, p := range svc.Spec.Ports {
			got[p.TargetPort.String()] = true
		}
		if !maps.Equal(got, map[string]bool{want: true}) {
			t.Errorf("Service %s targets %v, want %s alone", name, got, want)
		}
	}
}
