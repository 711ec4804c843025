package deploycheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestSettingsAreTheBinarys: every PASTEBIN_ setting that the deployment files give is one that
// `pastebin serve -h` lists. The binary ignores a variable it does not know, so a misspelt setting
// would otherwise do nothing, silently.
func TestSettingsAreTheBinarys(t *testing.T) {
	known := servedSettings(t)
	given := map[string][]string{} // setting → the files that give it
	add := func(where string, names ...string) {
		for _, n := range names {
			if strings.HasPrefix(n, "PASTEBIN_") {
				given[n] = append(given[n], where)
			}
		}
	}
	for _, overlay := range overlays {
		where := "deploy/kubernetes/overlays/" + overlay
		for _, o := range render(t, overlay) {
			switch o := o.(type) {
			case *appsv1.Deployment:
				add(where, containerEnv(o.Spec.Template.Spec)...)
			case *batchv1.Job:
				add(where, containerEnv(o.Spec.Template.Spec)...)
			case *corev1.ConfigMap:
				add(where, keys(o.Data)...)
			case *corev1.Secret:
				add(where, keys(o.StringData)...)
			}
		}
	}
	add("deploy/systemd/pastebin.env", keys(envFile(t, filepath.Join(systemdDir, "pastebin.env")))...)
	for d := range unitDirectives(t, filepath.Join(systemdDir, "pastebin.service")) {
		if v, ok := strings.CutPrefix(d, "Environment="); ok {
			name, _, _ := strings.Cut(v, "=")
			add("deploy/systemd/pastebin.service", name)
		}
	}
	containerfile, err := os.ReadFile(filepath.Join(repoRoot, "Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^ENV (\w+)=`).FindAllSubmatch(containerfile, -1) {
		add("Containerfile", string(m[1]))
	}
	pb, err := loadCompose(t).GetService("pastebin")
	if err != nil {
		t.Fatal(err)
	}
	add("docker-compose.yml", keys(pb.Environment)...)
	for name, where := range given {
		if !known[name] {
			t.Errorf("%s (in %s) is no setting of pastebin serve", name, strings.Join(where, ", "))
		}
	}
	if len(given) < 10 {
		t.Errorf("only %d settings found in the deployment files: %v", len(given), given)
	}
}

// servedSettings are the environment variables `pastebin serve -h` lists.
func servedSettings(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command(pastebinBinary(t), "serve", "-h").CombinedOutput()
	if err != nil {
		t.Fatalf("pastebin serve -h: %v\n%s", err, out)
	}
	known := map[string]bool{}
	for _, m := range regexp.MustCompile(`\[(PASTEBIN_[A-Z0-9_]+)\]`).FindAllStringSubmatch(string(out), -1) {
		known[m[1]] = true
	}
	if len(known) < 10 {
		t.Fatalf("pastebin serve -h lists %d settings:\n%s", len(known), out)
	}
	return known
}

func containerEnv(pod corev1.PodSpec) []string {
	var names []string
	for _, c := range pod.Containers {
		for _, e := range c.Env {
			names = append(names, e.Name)
		}
	}
	return names
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
