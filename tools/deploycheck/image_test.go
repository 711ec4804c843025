package deploycheck

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// imageScript is scripts/image.sh, which make image runs.
var imageScript = filepath.Join(repoRoot, "scripts", "image.sh")

// imageUser is the user the Containerfile names and the tests run the image as.
const imageUser = "65532:65532"

// podman runs podman through scripts/image.sh, with the settings its build found to work here.
func podman(args ...string) *exec.Cmd {
	return exec.Command(imageScript, append([]string{"podman"}, args...)...)
}

// buildImage runs make image's script and returns the image's name. make test installs podman
// first; without it this fails, unless PASTEBIN_TEST_ALLOW_NO_PODMAN says a skip will do.
func buildImage(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		if os.Getenv("PASTEBIN_TEST_ALLOW_NO_PODMAN") != "" {
			t.Skip("podman is missing and PASTEBIN_TEST_ALLOW_NO_PODMAN is set")
		}
		t.Fatal("podman is missing: make test installs it (scripts/services.sh test tool podman); PASTEBIN_TEST_ALLOW_NO_PODMAN=1 skips this test")
	}
	existed := exec.Command("podman", "image", "exists", imageName(t)).Run() == nil
	cmd := exec.Command(imageScript, "build")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/image.sh build: %v\n%s", err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Logf("scripts/image.sh build says:\n%s", stderr.String())
	}
	built := strings.TrimSpace(string(out))
	if !existed {
		// Every commit's test would leave an image of its own; :latest still names this one.
		t.Cleanup(func() { _ = podman("untag", built, built).Run() })
	}
	return built
}

// imageName is the name scripts/image.sh gives the image of this checkout.
func imageName(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(imageScript, "name").Output()
	if err != nil {
		t.Fatalf("scripts/image.sh name: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestImage builds the image as make image does, checks what it is made of, and runs it as a
// deployment would: with a user that is not root, on a read-only root file system, with no
// capabilities, reaching the test services over the host's network; then creates, reads and
// deletes a paste through it.
func TestImage(t *testing.T) {
	name := buildImage(t)
	t.Run("config", func(t *testing.T) { checkImageConfig(t, name) })
	t.Run("no shell", func(t *testing.T) {
		out, err := podman("run", "--rm", "--network", "none", "--entrypoint", "/bin/sh", name, "-c", "true").CombinedOutput()
		if err == nil {
			t.Errorf("the image ran /bin/sh:\n%s", out)
		}
	})
	t.Run("serves", func(t *testing.T) {
		container := "pb-deploycheck-" + randomHex(4)
		base := runImage(t, name, container)
		checkRunsAs(t, container, "65532")
		pasteRoundTrip(t, base)
	})
}

// checkImageConfig: the image starts `pastebin serve` as the unprivileged user, says where it
// listens, and is labelled with the version and commit it was built from.
func checkImageConfig(t *testing.T, name string) {
	out, err := podman("image", "inspect", name).Output()
	if err != nil {
		t.Fatalf("podman image inspect: %v", err)
	}
	var images []struct {
		Config struct {
			User         string
			Entrypoint   []string
			Cmd          []string
			ExposedPorts map[string]struct{}
			Labels       map[string]string
		}
	}
	if err := json.Unmarshal(out, &images); err != nil || len(images) != 1 {
		t.Fatalf("podman image inspect: %v\n%s", err, out)
	}
	c := images[0].Config
	got := fmt.Sprintf("user %s, entrypoint %q, cmd %q, ports %v", c.User, c.Entrypoint, c.Cmd, c.ExposedPorts)
	if want := fmt.Sprintf("user %s, entrypoint [\"/pastebin\"], cmd [\"serve\"], ports map[8080/tcp:{}]", imageUser); got != want {
		t.Errorf("image config:\n got %s\nwant %s", got, want)
	}
	revision, err := exec.Command("git", "-C", repoRoot, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	_, version, _ := strings.Cut(name, ":")
	for label, want := range map[string]string{
		"org.opencontainers.image.title":    "^pastebin$",
		"org.opencontainers.image.version":  "^" + regexp.QuoteMeta(version) + "$",
		"org.opencontainers.image.revision": "^" + strings.TrimSpace(string(revision)) + "$",
		"org.opencontainers.image.created":  `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`,
	} {
		if !regexp.MustCompile(want).MatchString(c.Labels[label]) {
			t.Errorf("label %s: %q, want %s", label, c.Labels[label], want)
		}
	}
}

// runImage starts the image's own command (serve) pointed at the test services, and returns its
// address. It listens on a port of the kernel's choice, which its log names.
func runImage(t *testing.T, name, container string) string {
	t.Helper()
	args := []string{"run", "--rm", "--name", container, "--network", "host", "--read-only",
		"--tmpfs", "/tmp:rw,size=16m,mode=1777", "--user", imageUser, "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges"}
	env := serviceEnv(t)
	env["PASTEBIN_ADDR"] = "127.0.0.1:0"
	for k, v := range env {
		args = append(args, "--env", k+"="+v)
	}
	cmd := podman(append(args, name)...)
	s := startServing(t, cmd, false, func() { _ = podman("kill", container).Run() })
	return s.public
}

// checkRunsAs: the container's process runs as uid on the host (podman here maps no user ids).
func checkRunsAs(t *testing.T, container, uid string) {
	t.Helper()
	pid, err := podman("inspect", "--format", "{{.State.Pid}}", container).Output()
	if err != nil {
		t.Fatalf("podman inspect: %v", err)
	}
	status, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^Uid:\s+(\d+)\s+(\d+)`).FindSubmatch(status)
	if m == nil || string(m[1]) != uid || string(m[2]) != uid {
		t.Errorf("the container's process runs as %q, want uid %s", m, uid)
	}
}

// pasteRoundTrip creates, reads and deletes a paste at base, and reads it gone.
func pasteRoundTrip(t *testing.T, base string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	content := "from the image " + randomHex(8)
	resp, err := client.Post(base+"/api/v1/pastes", "application/json", strings.NewReader(`{"content": "`+content+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		Code        string `json:"code"`
		DeleteToken string `json:"delete_token"`
	}
	err = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || err != nil || created.Code == "" {
		t.Fatalf("create: %d %v %+v", resp.StatusCode, err, created)
	}
	expectGet(t, base+"/raw/"+created.Code, http.StatusOK, content)
	req, _ := http.NewRequest(http.MethodDelete, base+"/api/v1/pastes/"+created.Code, nil)
	req.Header.Set("Authorization", "Bearer "+created.DeleteToken)
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d, want 204", resp.StatusCode)
	}
	expectGet(t, base+"/raw/"+created.Code, http.StatusGone, "")
}
