package validate

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd, args string
}

func dockerfile(t *testing.T, name string) []instruction {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur string
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		cur += trimmed
		cmd, args, _ := strings.Cut(cur, " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur = ""
	}
	return out
}

// moduleWithReplaced is module and the local modules its go.mod replaces:
// what an image that builds module with GOWORK=off must copy.
func moduleWithReplaced(t *testing.T, module string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../..", module, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mods := []string{module}
	for _, m := range regexp.MustCompile(`=>\s*\.\./(\S+)`).FindAllStringSubmatch(string(b), -1) {
		mods = append(mods, m[1])
	}
	return mods
}

// Both images build their module on its own (GOWORK=off), in stages, and run as
// a non-root user; the worker's has Chromium and the fonts of scripts/setup.
func TestDockerfiles(t *testing.T) {
	tests := []struct {
		file        string
		module      string
		final       string
		wantPackage []string
	}{
		{"gateway.Dockerfile", "gateway", "gcr.io/distroless/static-debian12:nonroot", nil},
		{"worker.Dockerfile", "worker", "debian:bookworm-slim",
			[]string{"chromium", "fonts-liberation2", "fonts-noto-core", "fonts-noto-cjk", "fonts-noto-color-emoji", "poppler-utils", "tini"}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			mods := moduleWithReplaced(t, tc.module)
			ins := dockerfile(t, tc.file)
			var froms []string
			var user, all string
			for _, in := range ins {
				all += in.cmd + " " + in.args + "\n"
				switch in.cmd {
				case "FROM":
					froms = append(froms, in.args)
					user = ""
				case "USER":
					user = in.args
				}
			}
			if len(froms) < 2 || !strings.HasPrefix(froms[0], "golang:") || froms[len(froms)-1] != tc.final {
				t.Errorf("stages %v: want a golang build stage and %s", froms, tc.final)
			}
			if user == "" || user == "root" || strings.HasPrefix(user, "0") {
				t.Errorf("final stage runs as %q, want a non-root user", user)
			}
			if !strings.Contains(all, "GOWORK=off") || !strings.Contains(all, "cd "+tc.module+" && ") ||
				!strings.Contains(all, "go build") || !strings.Contains(all, "./cmd/"+tc.module) {
				t.Errorf("does not build ./cmd/%s in module %s with GOWORK=off", tc.module, tc.module)
			}
			for _, m := range mods {
				if !strings.Contains(all, "COPY "+m+"/go.mod "+m+"/go.sum "+m+"/") || !strings.Contains(all, "COPY "+m+"/ "+m+"/") {
					t.Errorf("module %s is not copied (%s replaces it)", m, tc.module)
				}
			}
			for _, pkg := range tc.wantPackage {
				if !regexp.MustCompile(`apt-get install[^\n]*\s` + regexp.QuoteMeta(pkg) + `(\s|$)`).MatchString(all) {
					t.Errorf("does not install %s", pkg)
				}
			}
			ignore, err := os.ReadFile(filepath.Join("..", tc.file+".dockerignore"))
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range mods {
				if !strings.Contains(string(ignore), "!"+m) {
					t.Errorf("%s.dockerignore leaves %s out of the build context", tc.file, m)
				}
			}
		})
	}
	// scripts/setup and the worker image install the same browser, fonts
	// and pdftotext.
	setup, err := os.ReadFile("../../scripts/setup")
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range tests[1].wantPackage[:6] {
		if !regexp.MustCompile(`[\s(]` + regexp.QuoteMeta(pkg) + `[\s)]`).Match(setup) {
			t.Errorf("scripts/setup no longer installs %s: keep the worker image in step", pkg)
		}
	}
}

// configNames are the variables pkg/config reads (DESIGN §2 and the
// additions recorded in docs/decisions.md).
func configNames(t *testing.T) (names map[string]bool, planRe *regexp.Regexp) {
	t.Helper()
	b, err := os.ReadFile("../../pkg/config/config.go")
	if err != nil {
		t.Fatal(err)
	}
	names = map[string]bool{}
	for _, m := range regexp.MustCompile(`"(DOCRENDER_[A-Z0-9_]+)"`).FindAllStringSubmatch(string(b), -1) {
		names[m[1]] = true
	}
	if !names["DOCRENDER_NATS_URL"] || !names["DOCRENDER_WORKER_ADDR"] {
		t.Fatalf("could not read the variable names from pkg/config (got %v)", names)
	}
	return names, regexp.MustCompile(`^DOCRENDER_PLAN_(HOBBY|PRO|ENTERPRISE)_(CONVERSIONS|HOSTED|RETENTION|MAX_BATCH)$`)
}

// Every DOCRENDER_ variable set in deploy/ is one the processes read: a typo
// would silently leave the default in place.
func TestDeploySettingsAreKnownVariables(t *testing.T) {
	names, planRe := configNames(t)
	files, _ := filepath.Glob("../k8s/*.yaml")
	files = append(files, composeFile, "../gateway.Dockerfile", "../worker.Dockerfile")
	varRe := regexp.MustCompile(`\bDOCRENDER_[A-Z0-9_]+\b`)
	stream, _ := queueNames(t)
	seen := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range varRe.FindAllString(string(b), -1) {
			seen++
			if !names[v] && !planRe.MatchString(v) && v != stream {
				t.Errorf("%s: %s is not a docrender setting", f, v)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no settings found")
	}
	// The scaled-out mode needs these in every process.
	p := loadCompose(t)
	for name, s := range p.Services {
		if s.Build == nil {
			continue
		}
		for _, k := range []string{"DOCRENDER_NATS_URL", "DOCRENDER_REDIS_URL", "DOCRENDER_S3_ENDPOINT", "DOCRENDER_S3_ACCESS_KEY", "DOCRENDER_S3_SECRET_KEY"} {
			if env(s, k) == "" {
				t.Errorf("compose %s: %s unset", name, k)
			}
		}
	}
	objs := objects(t)
	cm, sec := objs["ConfigMap/docrender-config"], objs["Secret/docrender-secrets"]
	for _, k := range []string{"DOCRENDER_NATS_URL", "DOCRENDER_S3_ENDPOINT"} {
		if cm.str("data", k) == "" {
			t.Errorf("ConfigMap lacks %s", k)
		}
	}
	for _, k := range []string{"DOCRENDER_REDIS_URL", "DOCRENDER_S3_ACCESS_KEY", "DOCRENDER_S3_SECRET_KEY"} {
		if sec.str("stringData", k) == "" {
			t.Errorf("Secret lacks %s", k)
		}
	}
}

// queueNames are the JetStream stream and consumer of the default queue
// namespace, as pkg/queue declares them.
func queueNames(t *testing.T) (stream, consumer string) {
	t.Helper()
	b, err := os.ReadFile("../../pkg/queue/queue.go")
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) string {
		m := regexp.MustCompile(`(?m)^\s*` + name + `\s*=\s*"([^"]+)"`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("pkg/queue declares no %s", name)
		}
		return string(m[1])
	}
	return get("Stream"), get("Consumer")
}

// exportsMetric reports whether pkg/metrics declares metric.
func exportsMetric(t *testing.T, metric string) bool {
	t.Helper()
	b, err := os.ReadFile("../../pkg/metrics/metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), `"`+metric+`"`)
}
