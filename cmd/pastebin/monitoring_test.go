package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The shipped alerting rules and dashboard (deploy/) are checked here: promtool parses the rules
// and runs their unit tests, and every metric they name must be one a real server exports.

const (
	alertsFile    = "../../deploy/prometheus/alerts.yml"
	dashboardFile = "../../deploy/grafana/pastebin.json"
)

// pendingMetrics are named by the rules or the dashboard ahead of the code that exports them. A name
// on it that the binary exports fails the test, so that it is not forgotten here.
var pendingMetrics []string

// prometheusOwn are series Prometheus makes itself for every scrape target.
var prometheusOwn = []string{"up"}

// promtool finds Prometheus's promtool: PASTEBIN_PROMTOOL, or on the PATH. make test installs
// Debian's prometheus package first (scripts/ensure-promtool.sh); without it this fails, never skips.
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PASTEBIN_PROMTOOL"); p != "" {
		return p
	}
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("no promtool (%v): run scripts/ensure-promtool.sh, as make test does, or set PASTEBIN_PROMTOOL", err)
	}
	return p
}

func TestAlertRules(t *testing.T) {
	t.Parallel()
	bin := promtool(t)
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = "../../deploy/prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// alertRules reads the alerting rules: their names, expressions and annotations.
func alertRules(t *testing.T) []alertRule {
	t.Helper()
	b, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct{ Rules []alertRule }
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	var rules []alertRule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules
}

type alertRule struct {
	Alert       string
	Expr        string
	Annotations map[string]string
}

// dashboardExprs reads the queries of every panel of the dashboard.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var exprs []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	return exprs
}

// metricName finds the metric names in a PromQL expression: this service's, the Go runtime's and
// the process's, and the series Prometheus makes (label names, functions and keywords are not).
var metricName = regexp.MustCompile(`\b(?:pastebin|go|process)_[a-zA-Z0-9_:]+\b|\bup\b`)

// TestMonitoringNamesExportedMetrics scrapes /metrics of a real server and fails if the alerting
// rules or the dashboard name a metric it does not export: a renamed metric would otherwise leave
// an alert that can never fire, silently.
func TestMonitoringNamesExportedMetrics(t *testing.T) {
	t.Parallel()
	rules, exprs := alertRules(t), dashboardExprs(t)
	if len(rules) < 9 || len(exprs) < 10 {
		t.Fatalf("%d alerting rules and %d dashboard queries: the files did not parse as expected", len(rules), len(exprs))
	}
	used := map[string]string{} // metric name → where
	for _, r := range rules {
		if r.Annotations["summary"] == "" || r.Annotations["runbook"] == "" {
			t.Errorf("alert %s lacks a summary or a runbook", r.Alert)
		}
		for _, m := range metricName.FindAllString(r.Expr, -1) {
			used[m] = "alert " + r.Alert
		}
	}
	for _, e := range exprs {
		for _, m := range metricName.FindAllString(e, -1) {
			used[m] = "dashboard query " + e
		}
	}
	exported := scrapeServe(t)
	for name, where := range used {
		switch {
		case slices.Contains(prometheusOwn, name):
		case slices.Contains(pendingMetrics, name):
			if exported[name] {
				t.Errorf("%s is exported now: take it off pendingMetrics", name)
			}
		case !exported[name]:
			t.Errorf("%s names %s, which the binary does not export", where, name)
		}
	}
}

// scrapeServe starts `pastebin serve`, sends it a create and a read so that the per-route series
// exist, and returns the names of the samples its /metrics exports.
func scrapeServe(t *testing.T) map[string]bool {
	t.Helper()
	base, stop := startServe(t, testEnv(t))
	defer stop()
	status, body := httpDo(t, http.MethodPost, base+"/", "scraped")
	if status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, body)
	}
	httpDo(t, http.MethodGet, strings.SplitN(body, "\n", 2)[0], "")
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return sampleNames(t, resp.Body)
}

// sampleNames reads the names of the samples of a Prometheus text exposition.
func sampleNames(t *testing.T, r io.Reader) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(names) < 20 {
		t.Fatalf("/metrics exported %d names: not a real scrape", len(names))
	}
	return names
}
