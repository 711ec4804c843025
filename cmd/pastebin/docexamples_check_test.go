package main

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The shell that runs a document's examples traces each command to fd 9, a copy of its stdout, as
// \x1e<line>\x1f (the \x1e repeated once per level of nesting), so every piece of output can be laid
// at the line of the command that printed it. Command substitutions write their own output to the
// substitution, and their traces still to fd 9.
const traceHeader = "exec 9>&1\nBASH_XTRACEFD=9\nPS4=$'\\x1e${LINENO}\\x1f '\nset -euo pipefail -x\n"

var (
	traceMark = regexp.MustCompile("\x1e+([0-9]+)\x1f [^\n]*\n?")
	// The statuses a command printed: a line of curl -w '%{http_code}\n', a status line of curl -i or
	// -I, a problem's "status" member.
	printedStatus = regexp.MustCompile(`(?m)^([1-5][0-9][0-9])\r?$|^HTTP/[0-9.]+ ([1-5][0-9][0-9])\b|"status":([1-5][0-9][0-9])\b`)
	// The status a line's comment says it prints: a number at its start (`# 204`, `# 410 Gone`).
	claimedStatus = regexp.MustCompile(`^#\s*([1-5][0-9][0-9])\b`)
)

// exampleLine is one line of a block, where the script has it.
type exampleLine struct {
	block *docExample
	line  int // within the block, from 1
	text  string
}

// runExamples runs one document's blocks in order in one bash, as written but for the URL (base),
// and checks that each exits 0 and that each line's printed statuses are the ones its comment says.
func runExamples(t *testing.T, project string, env []string, base string, blocks []docExample) {
	t.Helper()
	script, lines := exampleScript(blocks, base)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir, cmd.Env = project, env
	// A block that never ends (a server that is not fenced as one) is stopped with all it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	outputs, ended := outputsByLine(stdout.String(), lines)
	for _, n := range slices.Sorted(maps.Keys(lines)) {
		if l := lines[n]; l.block != nil {
			if problem := checkStatuses(l.text, outputs[n]); problem != "" {
				t.Errorf("%s, line %d: %s\n  %s\nprinted:\n%s", l.block, l.line, problem, l.text, outputs[n])
			}
		}
	}
	if err != nil {
		failed := blocks[min(ended, len(blocks)-1)]
		t.Fatalf("%s failed: %v\n%s\nits output:\n%s\nstderr:\n%s", failed, err, failed.text, blockOutput(outputs, lines, failed), stderr.String())
	}
	if ended != len(blocks) {
		t.Fatalf("%d of %d blocks ended; the rest never ran:\n%s", ended, len(blocks), stdout.String())
	}
}

// exampleScript is the script of one document's blocks: the trace header, then each block, then a
// line that marks its end. lines maps the script's line numbers (from 1) to the blocks' lines; the
// header's and the marks' lines have no block.
func exampleScript(blocks []docExample, base string) (string, map[int]exampleLine) {
	var script strings.Builder
	script.WriteString(traceHeader)
	n := strings.Count(traceHeader, "\n")
	lines := map[int]exampleLine{}
	for i := range blocks {
		text := strings.ReplaceAll(blocks[i].text, "http://localhost:8080", base)
		for j, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			n++
			lines[n] = exampleLine{block: &blocks[i], line: j + 1, text: line}
			script.WriteString(line + "\n")
		}
		n++
		lines[n] = exampleLine{}
		fmt.Fprintf(&script, ": end of block %d\n", i)
	}
	return script.String(), lines
}

// outputsByLine lays the traced output at the script's lines, and counts the blocks whose end mark
// ran.
func outputsByLine(traced string, lines map[int]exampleLine) (map[int]string, int) {
	outputs := map[int]string{}
	ended := 0
	marks := traceMark.FindAllStringSubmatchIndex(traced, -1)
	for i, m := range marks {
		n, _ := strconv.Atoi(traced[m[2]:m[3]])
		if l, ok := lines[n]; ok && l.block == nil {
			ended++
			continue
		}
		end := len(traced)
		if i+1 < len(marks) {
			end = marks[i+1][0]
		}
		outputs[n] += traced[m[1]:end]
	}
	return outputs, ended
}

// checkStatuses says what is wrong with the statuses a line printed, or "": the status its comment
// begins with must be among them, and any error status among them must be that one.
func checkStatuses(line, output string) string {
	var printed []string
	for _, m := range printedStatus.FindAllStringSubmatch(output, -1) {
		printed = append(printed, m[1]+m[2]+m[3])
	}
	_, comment := splitComment(line)
	claimed := ""
	if m := claimedStatus.FindStringSubmatch(comment); m != nil {
		claimed = m[1]
	}
	for _, s := range printed {
		if s >= "400" && s != claimed {
			return fmt.Sprintf("it printed status %s, which its comment does not expect", s)
		}
	}
	if claimed != "" && !strings.Contains(" "+strings.Join(printed, " ")+" ", " "+claimed+" ") {
		return fmt.Sprintf("its comment says %s; it printed the statuses %v", claimed, printed)
	}
	return ""
}

// blockOutput is what the lines of one block printed, for a failure's message.
func blockOutput(outputs map[int]string, lines map[int]exampleLine, b docExample) string {
	var out strings.Builder
	for _, n := range slices.Sorted(maps.Keys(lines)) {
		if l := lines[n]; l.block != nil && l.block.String() == b.String() {
			out.WriteString(outputs[n])
		}
	}
	return out.String()
}

// splitComment splits a shell line at its comment: a # outside quotes, at the start or after a
// blank (so ${url##*/} is no comment). It answers the command and the comment, both trimmed.
func splitComment(line string) (string, string) {
	var quote byte
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '\\' && quote != '\'':
			i++ // an escaped character, "\"" included
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return strings.TrimSpace(line[:i]), strings.TrimSpace(line[i:])
		}
	}
	return strings.TrimSpace(line), ""
}
