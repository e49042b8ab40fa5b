package validate

import (
	"path/filepath"
	"strings"
	"testing"
)

// The worker keeps Chromium's sandbox (DESIGN §5): its seccomp profile lets
// Chromium create user namespaces, which RuntimeDefault and Docker's
// default profile refuse (the worker would not start), and no deploy file
// turns the sandbox off.
func TestWorkerKeepsChromiumSandbox(t *testing.T) {
	objs := objects(t)
	wk := objs["Deployment/docrender-worker"]
	if wk == nil {
		t.Fatal("no worker Deployment")
	}
	c := container(t, wk)
	profile := c.str("securityContext", "seccompProfile", "type")
	if profile == "" {
		profile = wk.str("spec", "template", "spec", "securityContext", "seccompProfile", "type")
	}
	if profile != "Unconfined" && profile != "Localhost" {
		t.Errorf("worker container's seccomp profile %q refuses the user namespaces of Chromium's sandbox", profile)
	}
	if wk.get("spec", "template", "spec", "securityContext", "runAsNonRoot") != true {
		t.Error("worker pods may run as root, to whom Chromium refuses its sandbox")
	}
	off := func(where, v string) {
		if strings.EqualFold(strings.TrimSpace(v), "true") || v == "1" {
			t.Errorf("%s sets DOCRENDER_CHROMIUM_NO_SANDBOX=%s", where, v)
		}
	}
	off("worker Deployment", envValue(c, "DOCRENDER_CHROMIUM_NO_SANDBOX"))
	for key, o := range objs {
		if strings.HasPrefix(key, "ConfigMap/") || strings.HasPrefix(key, "Secret/") {
			for _, field := range []string{"data", "stringData"} {
				off(key, o.str(field, "DOCRENDER_CHROMIUM_NO_SANDBOX"))
			}
		}
	}

	p := loadCompose(t)
	workers := 0
	for name, s := range p.Services {
		if s.Build == nil || filepath.Base(s.Build.Dockerfile) != "worker.Dockerfile" {
			continue
		}
		workers++
		seccomp := ""
		for _, opt := range s.SecurityOpt {
			if v, ok := strings.CutPrefix(opt, "seccomp="); ok {
				seccomp = v
			} else if v, ok := strings.CutPrefix(opt, "seccomp:"); ok {
				seccomp = v
			}
		}
		if seccomp == "" || seccomp == "default" || seccomp == "builtin" {
			t.Errorf("compose %s: seccomp %q is Docker's default, which refuses the user namespaces of Chromium's sandbox", name, seccomp)
		}
		off("compose "+name, env(s, "DOCRENDER_CHROMIUM_NO_SANDBOX"))
	}
	if workers == 0 {
		t.Error("no compose service built from worker.Dockerfile")
	}
}
