package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// The dependency rules of DESIGN §1, checked on the import graph: pkg/
// imports neither side; the gateway and the worker never import each other
// (but the gateway's main, which wires embedded mode's workers); only the
// worker drives Chromium and edits PDFs; HTTP stays at the gateway's edge.
func TestDependencyRules(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps=false", "-f", `{{.ImportPath}} {{join .Imports " "}}`,
		"./pkg/...", "./proto/...", "./worker/...", "./gateway/...")
	cmd.Dir = repoRoot()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const mod = "github.com/docrender/docrender/"
	rules := []struct {
		from, to string // import path prefixes
		except   string // an importer allowed anyway
		why      string
	}{
		{mod + "pkg/", mod + "gateway", "", "pkg/ is shared by both sides"},
		{mod + "pkg/", mod + "worker", "", "pkg/ is shared by both sides"},
		{mod + "worker", mod + "gateway", "", "the worker never imports the gateway"},
		{mod + "gateway", mod + "worker", mod + "gateway/cmd/gateway", "only the gateway's main wires the in-process workers"},
		{mod + "gateway", "github.com/go-rod/", "", "only the worker drives Chromium"},
		{mod + "gateway", "github.com/pdfcpu/", "", "only the worker edits PDFs"},
		{mod + "pkg/", "github.com/go-rod/", "", "only the worker drives Chromium"},
		{mod + "pkg/", "github.com/pdfcpu/", "", "only the worker edits PDFs"},
		{mod + "pkg/", "github.com/labstack/echo", "", "HTTP answers are the gateway's"},
		{mod + "worker", "github.com/labstack/echo", "", "HTTP answers are the gateway's"},
		{mod + "pkg/", mod + "gateway/server/apierr", "", "domain packages return plain errors"},
		{mod + "worker", mod + "gateway/server/apierr", "", "domain packages return plain errors"},
		{mod + "gateway/account", mod + "gateway/server", "", "the account domain does not speak HTTP"},
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 30 {
		t.Fatalf("go list found only %d packages", len(lines))
	}
	for _, line := range lines {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		for _, r := range rules {
			if !strings.HasPrefix(pkg, r.from) || pkg == r.except {
				continue
			}
			for _, imp := range imports {
				if strings.HasPrefix(imp, r.to) {
					t.Errorf("%s imports %s: %s (DESIGN §1)", pkg, imp, r.why)
				}
			}
		}
	}
}
