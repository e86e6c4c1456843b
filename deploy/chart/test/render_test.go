// Package charttest renders the Helm chart in deploy/chart the way `helm template` does, with its default
// values and with each value set in deploy/chart/ci, and decodes every document it renders strictly into
// the Kubernetes API's Go types: a field the type does not have, a duplicate field or a value of the
// wrong type is an error, as it would be for the API server. It then checks what the chart promises: the
// pods run as non-root on a read-only root file system without privilege escalation, the coordinator is
// probed on /ready and /health, every selector, Secret, ConfigMap, claim and port a document refers to
// exists, the arguments the chart gives the coordinator and the runner parse with the binaries' own flag
// sets, and the blueprints the chart writes parse as the coordinator and the runner parse them.
//
// It is a module of its own so that Helm and the Kubernetes API stay out of the library's go.mod.
// RENDERED_DIR, when set, names a folder of `helm template` outputs (*.yaml) that are decoded and checked
// the same way.
package charttest

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/agentorchestrator/orchestrator"
	"github.com/agentorchestrator/orchestrator/httpapi"
	"github.com/agentorchestrator/orchestrator/service"
)

const (
	chartDir    = ".."
	releaseName = "ao"
	namespace   = "orchestrator"
)

// render renders the chart with the values of valuesFile ("" for the defaults), as `helm template`
// does, and returns its documents.
func render(t *testing.T, valuesFile string) (string, error) {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	vals := map[string]any{}
	if valuesFile != "" {
		if vals, err = chartutil.ReadValuesFile(valuesFile); err != nil {
			t.Fatalf("reading %s: %v", valuesFile, err)
		}
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = releaseName, namespace
	install.KubeVersion = &chartutil.KubeVersion{Version: "v1.31.0", Major: "1", Minor: "31"}
	rel, err := install.Run(chrt, vals)
	if err != nil {
		return "", err
	}
	return rel.Manifest, nil
}

// valueSets returns the value sets the chart is rendered with: its defaults ("") and ci/*.yaml.
func valueSets(t *testing.T) []string {
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("want at least two value sets in %s/ci, found %v", chartDir, files)
	}
	return append([]string{""}, files...)
}

func TestChartRendersValidResources(t *testing.T) {
	t.Parallel()
	for _, vf := range valueSets(t) {
		name := "defaults"
		if vf != "" {
			name = filepath.Base(vf)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			manifest, err := render(t, vf)
			if err != nil {
				t.Fatalf("rendering: %v", err)
			}
			objs := decodeAll(t, manifest)
			checkObjects(t, objs, loadValues(t, vf))
		})
	}
}

// TestRenderedFiles checks the output of the helm CLI itself (`helm template … > RENDERED_DIR/x.yaml`).
func TestRenderedFiles(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("RENDERED_DIR")
	if dir == "" {
		t.Skip("RENDERED_DIR is not set: no helm template output to check")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("RENDERED_DIR %s holds no *.yaml (%v)", dir, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs := decodeAll(t, string(b))
		if len(objs) == 0 {
			t.Errorf("%s: no document", f)
		}
		t.Logf("%s: %d documents decoded strictly", filepath.Base(f), len(objs))
	}
}

// Values the chart must refuse, with the message a user gets.
func TestChartRefusesBadValues(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, values, want string
	}{
		{"replicas on SQLite", "coordinator:\n  replicas: 2\n", "needs PostgreSQL"},
		{"runner kind", "runner:\n  kind: StatefulSet\n", "/runner/kind"},
		{"unknown value", "coordinator:\n  replica: 2\n", "replica"},
		{"string replicas", "coordinator:\n  replicas: \"3\"\n", "replicas"},
		{"token of the wrong type", "auth:\n  adminToken: 5\n", "adminToken"},
		{"database URL", "database:\n  url: mysql://db/orchestrator\n", "url"},
		{"retention", "coordinator:\n  retention: 30d\n", "retention"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(f, []byte(tc.values), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := render(t, f)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("values %q: got error %v, want one containing %q", tc.values, err, tc.want)
			}
		})
	}
}

// object is one decoded document.
type object struct {
	kind, name string
	obj        any
}

// decodeAll splits a manifest into documents and decodes each strictly into its API type.
func decodeAll(t *testing.T, manifest string) []object {
	t.Helper()
	var out []object
	for _, doc := range releaseutil.SplitManifests(manifest) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Errorf("document is not YAML: %v\n%s", err, doc)
			continue
		}
		obj, err := newObject(tm)
		if err != nil {
			t.Errorf("%v\n%s", err, doc)
			continue
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Errorf("%s/%s does not decode strictly: %v\n%s", tm.APIVersion, tm.Kind, err, doc)
			continue
		}
		meta := objectMeta(obj)
		if meta.Name == "" {
			t.Errorf("%s without a name:\n%s", tm.Kind, doc)
		}
		if len(meta.Name) > 63 {
			t.Errorf("%s %s: name longer than 63 characters", tm.Kind, meta.Name)
		}
		out = append(out, object{kind: tm.Kind, name: meta.Name, obj: obj})
	}
	return out
}

var commentLine = regexp.MustCompile(`(?m)^\s*#.*$`)

func stripComments(doc string) string { return commentLine.ReplaceAllString(doc, "") }

// newObject returns a pointer to the Go type of an apiVersion and kind the chart renders.
func newObject(tm metav1.TypeMeta) (any, error) {
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 Secret":
		return &corev1.Secret{}, nil
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1 Service":
		return &corev1.Service{}, nil
	case "v1 ServiceAccount":
		return &corev1.ServiceAccount{}, nil
	case "v1 PersistentVolumeClaim":
		return &corev1.PersistentVolumeClaim{}, nil
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}, nil
	case "apps/v1 DaemonSet":
		return &appsv1.DaemonSet{}, nil
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	case "networking.k8s.io/v1 Ingress":
		return &networkingv1.Ingress{}, nil
	case "monitoring.coreos.com/v1 ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}, nil
	}
	return nil, fmt.Errorf("apiVersion %q kind %q: not a type this test knows (add it to newObject)", tm.APIVersion, tm.Kind)
}

func objectMeta(obj any) metav1.ObjectMeta {
	switch o := obj.(type) {
	case *corev1.Secret:
		return o.ObjectMeta
	case *corev1.ConfigMap:
		return o.ObjectMeta
	case *corev1.Service:
		return o.ObjectMeta
	case *corev1.ServiceAccount:
		return o.ObjectMeta
	case *corev1.PersistentVolumeClaim:
		return o.ObjectMeta
	case *appsv1.Deployment:
		return o.ObjectMeta
	case *appsv1.DaemonSet:
		return o.ObjectMeta
	case *policyv1.PodDisruptionBudget:
		return o.ObjectMeta
	case *networkingv1.Ingress:
		return o.ObjectMeta
	case *monitoringv1.ServiceMonitor:
		return o.ObjectMeta
	}
	panic(fmt.Sprintf("objectMeta: %T", obj))
}

// values is what the checks need of a value set.
type values struct {
	Auth struct {
		ExistingSecret string `json:"existingSecret"`
	} `json:"auth"`
	Database struct {
		URL            string `json:"url"`
		ExistingSecret string `json:"existingSecret"`
	} `json:"database"`
	Coordinator struct {
		Replicas     *int     `json:"replicas"`
		AllowedHosts []string `json:"allowedHosts"`
	} `json:"coordinator"`
	Ingress struct {
		Enabled bool `json:"enabled"`
		Hosts   []struct {
			Host string `json:"host"`
		} `json:"hosts"`
	} `json:"ingress"`
	Runner struct {
		Kind string `json:"kind"`
	} `json:"runner"`
	Metrics struct {
		ServiceMonitor struct {
			Enabled bool `json:"enabled"`
		} `json:"serviceMonitor"`
	} `json:"metrics"`
}

func loadValues(t *testing.T, file string) values {
	t.Helper()
	var v values
	for _, f := range []string{filepath.Join(chartDir, "values.yaml"), file} {
		if f == "" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	return v
}

// pod is a workload's pod template, named after the workload.
type pod struct {
	workload string
	tmpl     corev1.PodTemplateSpec
}

// checkObjects checks the promises the chart makes about the documents of one value set.
func checkObjects(t *testing.T, objs []object, vals values) {
	t.Helper()
	byKind := map[string][]object{}
	names := map[string]bool{}
	for _, o := range objs {
		key := o.kind + "/" + o.name
		if names[key] {
			t.Errorf("%s is rendered twice", key)
		}
		names[key] = true
		byKind[o.kind] = append(byKind[o.kind], o)
	}
	exists := func(kind, name string) bool { return names[kind+"/"+name] }

	var pods []pod
	for _, o := range byKind["Deployment"] {
		d := o.obj.(*appsv1.Deployment)
		checkSelector(t, "Deployment "+d.Name, d.Spec.Selector, d.Spec.Template.Labels)
		pods = append(pods, pod{"Deployment " + d.Name, d.Spec.Template})
	}
	for _, o := range byKind["DaemonSet"] {
		d := o.obj.(*appsv1.DaemonSet)
		checkSelector(t, "DaemonSet "+d.Name, d.Spec.Selector, d.Spec.Template.Labels)
		pods = append(pods, pod{"DaemonSet " + d.Name, d.Spec.Template})
	}

	// Every pod: non-root, read-only root, no privilege escalation, no capabilities, no API token; every
	// Secret, ConfigMap and claim it names exists (or is the user's, named in the values).
	userSecrets := map[string]bool{vals.Auth.ExistingSecret: vals.Auth.ExistingSecret != "", vals.Database.ExistingSecret: vals.Database.ExistingSecret != ""}
	for _, p := range pods {
		spec := p.tmpl.Spec
		psc := spec.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
			t.Errorf("%s: the pod does not run as a non-root user: %+v", p.workload, psc)
		}
		if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
			t.Errorf("%s: mounts a service account token it does not use", p.workload)
		}
		if spec.ServiceAccountName == "" || !exists("ServiceAccount", spec.ServiceAccountName) {
			t.Errorf("%s: service account %q is not rendered", p.workload, spec.ServiceAccountName)
		}
		if len(spec.Containers) == 0 {
			t.Errorf("%s: no container", p.workload)
		}
		for _, c := range spec.Containers {
			sc := c.SecurityContext
			switch {
			case sc == nil:
				t.Errorf("%s/%s: no securityContext", p.workload, c.Name)
			case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
				t.Errorf("%s/%s: the root file system is writable", p.workload, c.Name)
			case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
				t.Errorf("%s/%s: privilege escalation is allowed", p.workload, c.Name)
			case sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL"):
				t.Errorf("%s/%s: capabilities are not all dropped", p.workload, c.Name)
			}
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
				t.Errorf("%s/%s: no CPU or memory request", p.workload, c.Name)
			}
			if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/tmp" }) {
				t.Errorf("%s/%s: no writable /tmp on a read-only root", p.workload, c.Name)
			}
			for _, m := range c.VolumeMounts {
				if !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name }) {
					t.Errorf("%s/%s: mounts volume %q, which the pod does not have", p.workload, c.Name, m.Name)
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
					continue
				}
				ref := e.ValueFrom.SecretKeyRef
				if !userSecrets[ref.Name] && !secretHasKey(byKind["Secret"], ref.Name, ref.Key) && (ref.Optional == nil || !*ref.Optional) {
					t.Errorf("%s/%s: $%s comes from key %q of Secret %q, which is not rendered", p.workload, c.Name, e.Name, ref.Key, ref.Name)
				}
			}
			for _, a := range c.Args {
				if m := regexp.MustCompile(`\$\(([A-Z_]+)\)`).FindStringSubmatch(a); m != nil &&
					!slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == m[1] }) {
					t.Errorf("%s/%s: argument %q refers to $(%s), which the container's env does not define", p.workload, c.Name, a, m[1])
				}
			}
		}
		for _, v := range spec.Volumes {
			switch {
			case v.ConfigMap != nil && !exists("ConfigMap", v.ConfigMap.Name):
				t.Errorf("%s: volume %q: ConfigMap %q is not rendered", p.workload, v.Name, v.ConfigMap.Name)
			case v.PersistentVolumeClaim != nil && !exists("PersistentVolumeClaim", v.PersistentVolumeClaim.ClaimName):
				t.Errorf("%s: volume %q: claim %q is not rendered", p.workload, v.Name, v.PersistentVolumeClaim.ClaimName)
			}
		}
	}

	coordinator := findWorkload(t, pods, "coordinator")
	runner := findWorkload(t, pods, "runner")
	if coordinator == nil || runner == nil {
		return
	}
	checkCoordinator(t, byKind, *coordinator, vals)
	if vals.Runner.Kind != "" && !strings.HasPrefix(runner.workload, vals.Runner.Kind+" ") {
		t.Errorf("runner.kind is %s, but the runners are a %s", vals.Runner.Kind, runner.workload)
	}
	rc := runner.tmpl.Spec.Containers[0]
	var rcfg service.RunnerConfig
	parseArgs(t, "runner", rc.Args, rcfg.RegisterFlags)
	if !slices.ContainsFunc(rc.Env, func(e corev1.EnvVar) bool {
		return e.Name == "ORCHESTRATOR_RUNNER_TOKEN" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Key == "runner-token"
	}) {
		t.Errorf("the runner's token does not come from a Secret: %+v", rc.Env)
	}
	if !slices.ContainsFunc(rc.Args, func(a string) bool { return strings.HasPrefix(a, "-coordinator=http://") }) {
		t.Errorf("the runner is not pointed at the coordinator's Service: %v", rc.Args)
	}
	// The runner's pod outlives its shutdown grace, so runs can finish.
	var grace int64
	if g := runner.tmpl.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	if !slices.ContainsFunc(rc.Args, func(a string) bool {
		var s int64
		_, err := fmt.Sscanf(a, "-shutdown-grace=%ds", &s)
		return err == nil && s < grace
	}) {
		t.Errorf("terminationGracePeriodSeconds %d does not exceed the runner's -shutdown-grace: %v", grace, rc.Args)
	}

	// Services select pods and name their ports; PDBs and ServiceMonitors select something.
	for _, o := range byKind["Service"] {
		s := o.obj.(*corev1.Service)
		matched := podsSelected(pods, labels.SelectorFromSet(s.Spec.Selector))
		if len(s.Spec.Selector) == 0 || len(matched) == 0 {
			t.Errorf("Service %s selects no pod (%v)", s.Name, s.Spec.Selector)
		}
		for _, port := range s.Spec.Ports {
			for _, p := range matched {
				if port.TargetPort.StrVal != "" && !hasPort(p.tmpl, port.TargetPort.StrVal) {
					t.Errorf("Service %s: target port %q is not a port of %s", s.Name, port.TargetPort.StrVal, p.workload)
				}
			}
		}
	}
	for _, o := range byKind["PodDisruptionBudget"] {
		pdb := o.obj.(*policyv1.PodDisruptionBudget)
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || len(podsSelected(pods, sel)) != 1 {
			t.Errorf("PodDisruptionBudget %s does not select exactly one workload (%v)", pdb.Name, err)
		}
	}
	if vals.Coordinator.Replicas != nil && *vals.Coordinator.Replicas > 1 && len(byKind["PodDisruptionBudget"]) == 0 {
		t.Errorf("%d coordinator replicas without a PodDisruptionBudget", *vals.Coordinator.Replicas)
	}
	for _, o := range byKind["Ingress"] {
		ing := o.obj.(*networkingv1.Ingress)
		for _, r := range ing.Spec.Rules {
			for _, p := range r.HTTP.Paths {
				if b := p.Backend.Service; b == nil || !exists("Service", b.Name) {
					t.Errorf("Ingress %s: a path leads to a Service that is not rendered: %+v", ing.Name, p.Backend)
				}
			}
		}
	}
	if vals.Metrics.ServiceMonitor.Enabled != (len(byKind["ServiceMonitor"]) > 0) {
		t.Errorf("metrics.serviceMonitor.enabled is %v, and %d ServiceMonitors are rendered", vals.Metrics.ServiceMonitor.Enabled, len(byKind["ServiceMonitor"]))
	}
	for _, o := range byKind["ServiceMonitor"] {
		sm := o.obj.(*monitoringv1.ServiceMonitor)
		sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		if err != nil {
			t.Fatal(err)
		}
		var services []*corev1.Service
		for _, so := range byKind["Service"] {
			if s := so.obj.(*corev1.Service); sel.Matches(labels.Set(s.Labels)) {
				services = append(services, s)
			}
		}
		if len(services) != 1 {
			t.Errorf("ServiceMonitor %s selects %d Services, want 1", sm.Name, len(services))
			continue
		}
		for _, ep := range sm.Spec.Endpoints {
			if !slices.ContainsFunc(services[0].Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) {
				t.Errorf("ServiceMonitor %s scrapes port %q, which Service %s does not have", sm.Name, ep.Port, services[0].Name)
			}
			if a := ep.Authorization; a != nil && a.Credentials != nil && !userSecrets[a.Credentials.Name] &&
				!secretHasKey(byKind["Secret"], a.Credentials.Name, a.Credentials.Key) {
				t.Errorf("ServiceMonitor %s: its token, key %q of Secret %q, is not rendered", sm.Name, a.Credentials.Key, a.Credentials.Name)
			}
		}
	}

	// The blueprints the chart writes parse as the coordinator (AI agents) and the runner (deterministic
	// agents) parse them.
	for _, o := range byKind["ConfigMap"] {
		cm := o.obj.(*corev1.ConfigMap)
		typ := orchestrator.AgentTypeAgent
		if strings.HasSuffix(cm.Name, "-blueprints") {
			typ = orchestrator.AgentTypeDeterministic
		}
		for file, data := range cm.Data {
			b, err := orchestrator.ParseBlueprint([]byte(data), typ)
			if err != nil {
				t.Errorf("ConfigMap %s, %s: %v", cm.Name, file, err)
				continue
			}
			if b.Name+".json" != file {
				t.Errorf("ConfigMap %s: %s holds the blueprint %q", cm.Name, file, b.Name)
			}
		}
	}
}

// checkCoordinator checks the coordinator's Deployment: probes, replicas, database, update strategy.
func checkCoordinator(t *testing.T, byKind map[string][]object, p pod, vals values) {
	t.Helper()
	var d *appsv1.Deployment
	for _, o := range byKind["Deployment"] {
		if "Deployment "+o.name == p.workload {
			d = o.obj.(*appsv1.Deployment)
		}
	}
	if d == nil {
		t.Errorf("the coordinator is a %s, not a Deployment", p.workload)
		return
	}
	c := d.Spec.Template.Spec.Containers[0]
	// The coordinator binary accepts every argument, and its API accepts the hosts and origins.
	var cfg service.CoordinatorConfig
	parseArgs(t, "coordinator", c.Args, cfg.RegisterFlags)
	if err := (httpapi.Config{AllowedHosts: split(cfg.AllowedHosts), AllowedOrigins: split(cfg.AllowedOrigins)}).Validate(); err != nil {
		t.Errorf("coordinator -allowed-hosts %q, -allowed-origins %q: %v", cfg.AllowedHosts, cfg.AllowedOrigins, err)
	}
	if len(vals.Coordinator.AllowedHosts) == 0 && cfg.AllowedHosts != "" {
		t.Errorf("no coordinator.allowedHosts, yet -allowed-hosts=%s turns the Host check on", cfg.AllowedHosts)
	}
	if len(vals.Coordinator.AllowedHosts) > 0 {
		// Runners call the Service by name, and people the Ingress hosts: the check must let them in.
		want := append([]string{}, vals.Coordinator.AllowedHosts...)
		for _, o := range byKind["Service"] {
			if s := o.obj.(*corev1.Service); s.Spec.ClusterIP != corev1.ClusterIPNone {
				want = append(want, s.Name, s.Name+"."+namespace+".svc")
			}
		}
		if vals.Ingress.Enabled {
			for _, h := range vals.Ingress.Hosts {
				want = append(want, h.Host)
			}
		}
		for _, h := range want {
			if !slices.Contains(split(cfg.AllowedHosts), h) {
				t.Errorf("-allowed-hosts=%s leaves out %q", cfg.AllowedHosts, h)
			}
		}
	}
	probe := func(name string, pr *corev1.Probe, path string) {
		if pr == nil || pr.HTTPGet == nil || pr.HTTPGet.Path != path || !hasPort(d.Spec.Template, pr.HTTPGet.Port.StrVal) {
			t.Errorf("coordinator %s probe: want GET %s on a named container port, got %+v", name, path, pr)
		}
	}
	probe("readiness", c.ReadinessProbe, "/ready")
	probe("liveness", c.LivenessProbe, "/health")
	want := 1
	if vals.Coordinator.Replicas != nil {
		want = *vals.Coordinator.Replicas
	}
	if d.Spec.Replicas == nil || int(*d.Spec.Replicas) != want {
		t.Errorf("coordinator replicas: got %v, want %d", d.Spec.Replicas, want)
	}
	postgres := vals.Database.URL != "" || vals.Database.ExistingSecret != ""
	dbArg := slices.IndexFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "-db=") })
	switch {
	case dbArg < 0:
		t.Errorf("the coordinator has no -db: %v", c.Args)
	case postgres && c.Args[dbArg] != "-db=$(ORCHESTRATOR_DATABASE_URL)":
		t.Errorf("on PostgreSQL the coordinator's -db should come from the Secret: %s", c.Args[dbArg])
	case postgres && (d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || d.Spec.Strategy.RollingUpdate == nil ||
		d.Spec.Strategy.RollingUpdate.MaxUnavailable == nil || d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0):
		t.Errorf("on PostgreSQL an update should start a new replica before stopping an old one: %+v", d.Spec.Strategy)
	case !postgres && d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType:
		t.Errorf("on SQLite an update must stop the old pod first (Recreate): %+v", d.Spec.Strategy)
	}
}

// parseArgs parses a container's arguments with a binary's flag set, as the binary would.
func parseArgs(t *testing.T, binary string, args []string, register func(*flag.FlagSet)) {
	t.Helper()
	fs := flag.NewFlagSet(binary, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	register(fs)
	if err := fs.Parse(args); err != nil {
		t.Errorf("%s %v: %v", binary, args, err)
	} else if fs.NArg() > 0 {
		t.Errorf("%s %v: arguments that are not flags: %v", binary, args, fs.Args())
	}
}

func split(list string) []string {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func findWorkload(t *testing.T, pods []pod, component string) *pod {
	t.Helper()
	for i, p := range pods {
		if p.tmpl.Labels["app.kubernetes.io/component"] == component {
			return &pods[i]
		}
	}
	t.Errorf("no %s workload rendered", component)
	return nil
}

func checkSelector(t *testing.T, what string, sel *metav1.LabelSelector, podLabels map[string]string) {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || s.Empty() || !s.Matches(labels.Set(podLabels)) {
		t.Errorf("%s: selector %v does not select its own pods %v (%v)", what, sel, podLabels, err)
	}
}

func podsSelected(pods []pod, sel labels.Selector) []pod {
	var out []pod
	for _, p := range pods {
		if !sel.Empty() && sel.Matches(labels.Set(p.tmpl.Labels)) {
			out = append(out, p)
		}
	}
	return out
}

func hasPort(tmpl corev1.PodTemplateSpec, name string) bool {
	for _, c := range tmpl.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == name {
				return true
			}
		}
	}
	return false
}

func secretHasKey(secrets []object, name, key string) bool {
	for _, o := range secrets {
		s := o.obj.(*corev1.Secret)
		if s.Name != name {
			continue
		}
		if _, ok := s.Data[key]; ok {
			return true
		}
		_, ok := s.StringData[key]
		return ok
	}
	return false
}

// The rendered output has no leftover template syntax or Go zero-value markers.
func TestNoTemplateLeftovers(t *testing.T) {
	t.Parallel()
	for _, vf := range valueSets(t) {
		manifest, err := render(t, vf)
		if err != nil {
			t.Fatalf("%s: %v", vf, err)
		}
		for _, bad := range [][]byte{[]byte("{{"), []byte("<no value>"), []byte("%!")} {
			if i := bytes.Index([]byte(manifest), bad); i >= 0 {
				t.Errorf("%s: rendered output holds %q: …%s…", vf, bad, manifest[max(0, i-80):min(len(manifest), i+80)])
			}
		}
	}
}
