package validate

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

const composeFile = "../docker-compose.yml"

// loadCompose parses the compose file the way `docker compose` does: the
// Compose specification's schema, interpolation, merge keys, consistency
// (every referenced service and volume exists). No network is needed.
func loadCompose(t *testing.T, env ...string) *types.Project {
	t.Helper()
	p, err := loadComposeFile(composeFile, env...)
	if err != nil {
		t.Fatalf("%s does not load: %v", composeFile, err)
	}
	return p
}

func loadComposeFile(path string, env ...string) (*types.Project, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	opts, err := cli.NewProjectOptions([]string{abs},
		cli.WithWorkingDirectory(filepath.Dir(abs)),
		cli.WithEnv(env),
		cli.WithConsistency(true),
	)
	if err != nil {
		return nil, err
	}
	return opts.LoadProject(context.Background())
}

// The loader has teeth: mistakes like these in the compose file fail.
func TestComposeLoaderRejectsMistakes(t *testing.T) {
	orig, err := os.ReadFile(composeFile)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, old, new string }{
		{"unknown service key", "    stop_grace_period: 60s\n", "    stop_grace_periods: 60s\n"},
		{"dependency on a missing service", "  redis:\n    condition: service_healthy\n", "  rediss:\n    condition: service_healthy\n"},
		{"undeclared volume", `volumes: ["redis:/data"]`, `volumes: ["redis-data:/data"]`},
		{"bad replicas", "replicas: 2", "replicas: two"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(string(orig), tc.old) {
				t.Fatalf("compose file lacks %q", tc.old)
			}
			// Beside the original, so the build contexts still resolve.
			f := filepath.Join(filepath.Dir(composeFile), ".validate-"+strings.ReplaceAll(tc.name, " ", "-")+".yml")
			if err := os.WriteFile(f, []byte(strings.Replace(string(orig), tc.old, tc.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(f)
			if _, err := loadComposeFile(f); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func env(s types.ServiceConfig, k string) string {
	if v := s.Environment[k]; v != nil {
		return *v
	}
	return ""
}

func replicas(s types.ServiceConfig) int {
	if s.Deploy != nil && s.Deploy.Replicas != nil {
		return *s.Deploy.Replicas
	}
	return 1
}

// The compose file runs what the issue asks: NATS cluster of three with
// JetStream, Redis with AOF on a volume, MinIO on a volume, two or more
// gateways and workers built from deploy/'s Dockerfiles, configured by
// DESIGN §2's variables.
func TestComposeFile(t *testing.T) {
	p := loadCompose(t)

	var nats []string
	for name, s := range p.Services {
		if strings.HasPrefix(s.Image, "nats:") {
			nats = append(nats, name)
		}
	}
	slices.Sort(nats)
	if len(nats) != 3 {
		t.Fatalf("NATS servers %v, want 3", nats)
	}
	for _, name := range nats {
		s := p.Services[name]
		cmd := strings.Join(s.Command, " ")
		for _, want := range []string{"--jetstream", "--store_dir /data", "--cluster_name docrender", "--cluster nats://0.0.0.0:6222", "--name " + name} {
			if !strings.Contains(cmd, want) {
				t.Errorf("%s: command %q lacks %q", name, cmd, want)
			}
		}
		for _, peer := range nats {
			if peer != name && !strings.Contains(flag(s.Command, "--routes"), "nats://"+peer+":6222") {
				t.Errorf("%s: no route to %s (%q)", name, peer, flag(s.Command, "--routes"))
			}
		}
		if !hasVolume(s, "/data") {
			t.Errorf("%s: JetStream store not on a volume", name)
		}
	}

	redis := p.Services["redis"]
	if c := strings.Join(redis.Command, " "); !strings.Contains(c, "--appendonly yes") || !hasVolume(redis, "/data") {
		t.Errorf("redis: AOF on a volume wanted; command %q, volumes %v", c, redis.Volumes)
	}
	if minio := p.Services["minio"]; !hasVolume(minio, "/data") {
		t.Errorf("minio: data not on a volume")
	}

	counts := map[string]int{}
	for name, s := range p.Services {
		if s.Build == nil {
			continue
		}
		df := filepath.Base(s.Build.Dockerfile)
		counts[df] += replicas(s)
		if abs, _ := filepath.Abs(".."); filepath.Clean(s.Build.Context) != filepath.Dir(abs) {
			t.Errorf("%s: build context %s, want the repository root", name, s.Build.Context)
		}
		urls := env(s, "DOCRENDER_NATS_URL")
		for _, n := range nats {
			if !strings.Contains(urls, "nats://"+n+":4222") {
				t.Errorf("%s: DOCRENDER_NATS_URL %q lacks %s", name, urls, n)
			}
		}
		for k, want := range map[string]string{
			"DOCRENDER_REDIS_URL":   "redis://redis:6379/0",
			"DOCRENDER_S3_ENDPOINT": "minio:9000",
			"DOCRENDER_S3_USE_SSL":  "false",
		} {
			if got := env(s, k); got != want {
				t.Errorf("%s: %s=%q, want %q", name, k, got, want)
			}
		}
		if env(s, "DOCRENDER_S3_ACCESS_KEY") != env(p.Services["minio"], "MINIO_ROOT_USER") ||
			env(s, "DOCRENDER_S3_SECRET_KEY") != env(p.Services["minio"], "MINIO_ROOT_PASSWORD") {
			t.Errorf("%s: S3 credentials differ from MinIO's", name)
		}
		for _, dep := range append([]string{"redis", "minio"}, nats...) {
			if d, ok := s.DependsOn[dep]; !ok || d.Condition != types.ServiceConditionHealthy {
				t.Errorf("%s: does not wait for %s to be healthy", name, dep)
			}
		}
	}
	if counts["gateway.Dockerfile"] < 2 || counts["worker.Dockerfile"] < 1 {
		t.Errorf("gateways and workers by Dockerfile: %v, want ≥ 2 gateways and ≥ 1 worker", counts)
	}
}

// Credentials come from the environment when set (defaults are for a trial).
func TestComposeCredentialsFromEnvironment(t *testing.T) {
	p := loadCompose(t, "MINIO_ROOT_USER=ops", "MINIO_ROOT_PASSWORD=s3cr3t-value")
	for name, s := range p.Services {
		if s.Build != nil && (env(s, "DOCRENDER_S3_ACCESS_KEY") != "ops" || env(s, "DOCRENDER_S3_SECRET_KEY") != "s3cr3t-value") {
			t.Errorf("%s: S3 credentials not taken from the environment", name)
		}
	}
}

// flag returns the value after name in a command.
func flag(cmd []string, name string) string {
	for i, a := range cmd {
		if a == name && i+1 < len(cmd) {
			return cmd[i+1]
		}
	}
	return ""
}

func hasVolume(s types.ServiceConfig, target string) bool {
	for _, v := range s.Volumes {
		if v.Target == target && v.Type == types.VolumeTypeVolume {
			return true
		}
	}
	return false
}
