"""Every kubectl from 1.27 to 1.33 over the same script, against one hub.

kubectl 1.32 and later send built-in kinds (Namespace, Secret, ConfigMap) as
protobuf, so the create steps exercise the protobuf request path for those
versions and the JSON one for the older ones.  Each version works in its own
namespace.  A version whose binary is not installed is skipped.
"""

import json
import os
import pathlib
import subprocess
import time

import pytest

from conftest import KUBECTL_TIMEOUT, wait_for

VERSIONS = ["1.27", "1.28", "1.29", "1.30", "1.31", "1.32", "1.33"]
KUBECTL_DIR = pathlib.Path("/usr/lib/google-cloud-sdk/bin")


class Kubectl:
    def __init__(self, hub, version):
        self.hub = hub
        self.version = version
        self.minor = int(version.split(".")[1])
        self.bin = KUBECTL_DIR / f"kubectl.{version}"
        self.cache = hub.log_dir / f"kubectl-cache-{version}"

    def run(self, *args, input=None, check=True, timeout=KUBECTL_TIMEOUT, env=None):
        cmd = [str(self.bin), "--kubeconfig", str(self.hub.kubeconfig),
               "--cache-dir", str(self.cache), *map(str, args)]
        r = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout,
                           env=env)
        if check and r.returncode != 0:
            raise AssertionError(f"kubectl {self.version} failed ({r.returncode}): "
                                 f"{' '.join(map(str, args))}\nstdout: {r.stdout}\n"
                                 f"stderr: {r.stderr}")
        return r

    def json(self, *args):
        return json.loads(self.run(*args, "-o", "json").stdout)


def header(out):
    return out.splitlines()[0].split()


@pytest.mark.parametrize("version", VERSIONS)
def test_kubectl_version_script(module_hub, version):
    k = Kubectl(module_hub, version)
    if not k.bin.is_file():
        pytest.skip(f"{k.bin} not installed")
    ns = f"kubectl-{version.replace('.', '-')}"

    # create: protobuf bodies from 1.32 on.
    k.run("create", "namespace", ns)
    nso = k.json("get", "namespace", ns)  # the reply is JSON even when protobuf is asked first
    assert nso["metadata"]["labels"]["kubernetes.io/metadata.name"] == ns
    assert nso["status"]["phase"] == "Active"
    k.run("create", "secret", "generic", "creds", "-n", ns,
          "--from-literal=user=admin", "--from-literal=password=s3cret")
    sec = k.json("get", "secret", "creds", "-n", ns)
    assert sec["type"] == "Opaque"
    assert sec["data"] == {"user": "YWRtaW4=", "password": "czNjcmV0"}
    k.run("create", "configmap", "settings", "-n", ns, "--from-literal=a=1",
          "--from-literal=b=2")
    assert k.json("get", "configmap", "settings", "-n", ns)["data"] == {"a": "1", "b": "2"}

    # Columns as kube-apiserver prints them.
    out = k.run("get", "configmaps", "-n", ns).stdout
    assert header(out) == ["NAME", "DATA", "AGE"], out
    assert out.splitlines()[1].split()[:2] == ["settings", "2"], out
    out = k.run("get", "secrets", "-n", ns).stdout
    assert header(out) == ["NAME", "TYPE", "DATA", "AGE"], out
    assert out.splitlines()[1].split()[:3] == ["creds", "Opaque", "2"], out

    # create --dry-run=server stores nothing.
    r = k.run("create", "configmap", "dry", "-n", ns, "--from-literal=x=y", "--dry-run=server")
    assert "dry" in r.stdout
    assert k.run("get", "configmap", "dry", "-n", ns, check=False).returncode != 0

    # apply (client-side), twice, and diff.
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "applied", "namespace": ns, "labels": {"tier": "web"}},
          "data": {"k": "v1"}}
    k.run("apply", "-f", "-", input=json.dumps(cm))
    cm["data"]["k"] = "v2"
    r = k.run("diff", "-f", "-", input=json.dumps(cm), check=False)
    assert r.returncode == 1 and "v2" in r.stdout, r
    k.run("apply", "-f", "-", input=json.dumps(cm))
    assert k.json("get", "cm", "applied", "-n", ns)["data"]["k"] == "v2"
    assert k.run("diff", "-f", "-", input=json.dumps(cm), check=False).returncode == 0

    # patch (json and merge), label, annotate.
    k.run("patch", "cm", "applied", "-n", ns, "--type", "merge", "-p", '{"data":{"m":"merged"}}')
    k.run("patch", "cm", "applied", "-n", ns, "--type", "json",
          "-p", '[{"op":"add","path":"/data/j","value":"jsonpatch"}]')
    k.run("label", "cm", "applied", "-n", ns, "size=xl")
    k.run("annotate", "cm", "applied", "-n", ns, "note=hello")
    got = k.json("get", "cm", "applied", "-n", ns)
    assert got["data"] == {"k": "v2", "m": "merged", "j": "jsonpatch"}
    assert got["metadata"]["labels"] == {"tier": "web", "size": "xl"}
    assert got["metadata"]["annotations"]["note"] == "hello"
    # strategic merge patch (kubectl's default type) on a built-in kind; a
    # custom resource refuses it with 415, as kube-apiserver does.
    k.run("patch", "cm", "applied", "-n", ns, "-p", '{"data":{"s":"strategic"}}')
    assert k.json("get", "cm", "applied", "-n", ns)["data"]["s"] == "strategic"
    k.run("apply", "-f", "-", input=json.dumps({
        "apiVersion": "agent-install.openshift.io/v1beta1", "kind": "NMStateConfig",
        "metadata": {"name": "nm", "namespace": ns}, "spec": {"config": {}}}))
    r = k.run("patch", "nmstateconfig", "nm", "-n", ns, "--type", "strategic",
              "-p", '{"metadata":{"labels":{"a":"b"}}}', check=False)
    assert r.returncode != 0 and ("415" in r.stderr or "unknown format" in r.stderr), r.stderr
    # edit, with an editor that changes one value.
    editor = module_hub.log_dir / "kubectl-editor.py"
    editor.write_text("import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
                      "p.write_text(p.read_text().replace('s: strategic', 's: edited'))\n")
    r = k.run("edit", "cm", "applied", "-n", ns,
              env={**os.environ, "KUBE_EDITOR": f"/usr/bin/python3 {editor}"})
    assert "edited" in r.stdout, r
    assert k.json("get", "cm", "applied", "-n", ns)["data"]["s"] == "edited"
    # server-side apply and diff.
    ssa = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa", "namespace": ns},
           "data": {"owned": "1"}}
    assert "serverside-applied" in k.run("apply", "--server-side", "-f", "-",
                                         input=json.dumps(ssa)).stdout
    ssa["data"]["owned"] = "2"
    r = k.run("diff", "--server-side", "-f", "-", input=json.dumps(ssa), check=False)
    assert r.returncode == 1 and "owned: \"2\"" in r.stdout, (r.stdout, r.stderr)
    k.run("apply", "--server-side", "-f", "-", input=json.dumps(ssa))
    mf = k.json("get", "cm", "ssa", "-n", ns, "--show-managed-fields")["metadata"]["managedFields"]
    assert [(e["manager"], e["operation"]) for e in mf] == [("kubectl", "Apply")], mf

    # get -w with a label selector and --output-watch-events: an object that
    # starts matching is ADDED, one that stops matching DELETED.
    watcher = subprocess.Popen([str(k.bin), "--kubeconfig", str(module_hub.kubeconfig),
                                "--cache-dir", str(k.cache), "get", "cm", "-n", ns, "-l", "watched=yes",
                                "-w", "--output-watch-events", "-o",
                                'jsonpath={.type} {.object.metadata.name}{"\\n"}'],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1)
        k.run("label", "cm", "settings", "-n", ns, "watched=yes")
        k.run("label", "cm", "settings", "-n", ns, "watched-")
        deadline = time.time() + 20
        lines = []
        while time.time() < deadline and len(lines) < 2:
            line = watcher.stdout.readline()
            if line.strip():
                lines.append(line.strip())
        assert lines == ["ADDED settings", "DELETED settings"], lines
    finally:
        watcher.kill()
        watcher.communicate()

    # get -o yaml / jsonpath, selectors, pagination.
    assert "kind: ConfigMap" in k.run("get", "cm", "applied", "-n", ns, "-o", "yaml").stdout
    assert k.run("get", "cm", "applied", "-n", ns, "-o",
                 "jsonpath={.data.m}").stdout == "merged"
    assert k.run("get", "cm", "-n", ns, "-l", "size=xl", "-o", "name").stdout.split() == \
        ["configmap/applied"]
    assert k.run("get", "cm", "-n", ns, "--field-selector", "metadata.name=settings",
                 "-o", "name").stdout.split() == ["configmap/settings"]
    k.run("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"page-{i}", "namespace": ns}}
        for i in range(3)]}))
    r = k.run("get", "cm", "-n", ns, "--chunk-size=2", "-o", "name", "-v=6")
    assert r.stdout.split() == ["configmap/applied", "configmap/page-0", "configmap/page-1",
                                "configmap/page-2", "configmap/settings", "configmap/ssa"], r.stdout
    assert r.stderr.count("limit=2") >= 3, r.stderr  # three pages were asked for

    # wait: jsonpath, condition (set through the status subresource), delete.
    k.run("wait", "--for=jsonpath={.status.phase}=Active", f"namespace/{ns}", "--timeout=20s")
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": ns},
           "spec": {"ports": [{"port": 80}]}}
    k.run("apply", "-f", "-", input=json.dumps(svc))
    k.run("patch", "service", "web", "-n", ns, "--subresource=status", "--type=merge", "-p",
          json.dumps({"status": {"conditions": [{
              "type": "Ready", "status": "True", "reason": "Test", "message": "ok",
              "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}))
    k.run("wait", "--for=condition=Ready", "service/web", "-n", ns, "--timeout=20s")
    # get all works: Service is in the "all" category, as upstream has it.
    out = k.run("get", "all", "-n", ns).stdout
    assert header(out)[:4] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP"], out
    assert out.splitlines()[1].split()[0] in ("web", "service/web"), out
    st = k.json("get", "service", "web", "-n", ns, "--subresource=status")
    assert st["status"]["conditions"][0]["type"] == "Ready"
    waiter = subprocess.Popen([str(k.bin), "--kubeconfig", str(module_hub.kubeconfig),
                               "--cache-dir", str(k.cache), "wait", "--for=delete",
                               "configmap/page-2", "-n", ns, "--timeout=30s"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    k.run("delete", "configmap", "page-2", "-n", ns)
    out, err = waiter.communicate(timeout=40)
    assert waiter.returncode == 0, (out, err)

    # events: core Events and events --for (1.28+).
    uid = k.json("get", "cm", "applied", "-n", ns)["metadata"]["uid"]
    ev = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "applied.1", "namespace": ns},
          "involvedObject": {"apiVersion": "v1", "kind": "ConfigMap", "name": "applied",
                             "namespace": ns, "uid": uid},
          "reason": "Tested", "message": "  checked by kubectl  ", "type": "Normal",
          "source": {"component": "pytest"}, "count": 1,
          "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z"}
    k.run("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        ev,
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": ns},
         "spec": {"hard": {"pods": "10", "limits.cpu": "4"}}},
        {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr", "namespace": ns},
         "spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}}]}}]}))
    out = k.run("get", "events", "-n", ns).stdout
    assert header(out) == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"], out
    row = out.splitlines()[1]
    assert "configmap/applied" in row and "checked by kubectl" in row, out
    if k.minor >= 28:
        out = k.run("events", "-n", ns, "--for", "configmap/applied").stdout
        assert "Tested" in out and "checked by kubectl" in out, out
    assert "Tested" in k.run("describe", "configmap", "applied", "-n", ns).stdout

    # explain and the OpenAPI documents.
    assert "ConfigMap" in k.run("explain", "configmaps").stdout
    assert "pullSecretRef" in k.run("explain", "infraenv.spec").stdout
    v2 = json.loads(k.run("get", "--raw", "/openapi/v2").stdout)
    assert v2["swagger"] == "2.0"
    assert "io.k8s.api.core.v1.ConfigMap" in v2["definitions"]
    v3 = json.loads(k.run("get", "--raw", "/openapi/v3").stdout)
    assert "api/v1" in v3["paths"]

    # describe works on every kind the hub serves.
    out = k.run("describe", "namespace", ns).stdout
    # No quota controller runs, so the quota shows without usage figures.
    assert "Resource Quotas" in out and "Name:     q" in out, out
    assert "Resource Limits" in out and "Container  cpu" in out, out
    names = k.run("api-resources", "--verbs=list", "-o", "name").stdout.split()
    assert "leases.coordination.k8s.io" in names and "events.events.k8s.io" in names
    # One call for all of them (each kind is described, or reported as having
    # no objects in the namespace, without an error).
    r = k.run("describe", ",".join(names), "-n", ns, check=False)
    assert r.returncode == 0, r.stderr
    for name in ("creds", "settings", "applied", "q", "lr", "web", "applied.1", ns):
        assert any(line.startswith("Name:") and line.split()[-1] == name
                   for line in r.stdout.splitlines()), f"{name} not described:\n{r.stdout}"

    # delete cascades: orphan leaves the dependent without the reference,
    # foreground deletes it before the owner.
    for policy in ("orphan", "foreground"):
        k.run("create", "configmap", f"owner-{policy}", "-n", ns)
        ouid = k.json("get", "cm", f"owner-{policy}", "-n", ns)["metadata"]["uid"]
        k.run("create", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"dep-{policy}", "namespace": ns, "ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap", "name": f"owner-{policy}", "uid": ouid,
                "blockOwnerDeletion": True}]}}))
        k.run("delete", "cm", f"owner-{policy}", "-n", ns, f"--cascade={policy}", timeout=60)
        assert k.run("get", "cm", f"owner-{policy}", "-n", ns, check=False).returncode != 0
        dep = k.run("get", "cm", f"dep-{policy}", "-n", ns, "-o", "json", check=False)
        if policy == "orphan":
            assert "ownerReferences" not in json.loads(dep.stdout)["metadata"], dep.stdout
        else:
            assert dep.returncode != 0, dep.stdout

    # auth: can-i and whoami (GA in 1.28; beta in 1.27, same command).
    assert k.run("auth", "can-i", "create", "configmaps", "-n", ns).stdout.strip() == "yes"
    out = k.run("auth", "whoami").stdout
    assert "system:admin" in out and "system:masters" in out, out

    # delete, waiting for the object to go.
    k.run("delete", "secret", "creds", "-n", ns)
    assert k.run("get", "secret", "creds", "-n", ns, check=False).returncode != 0
    k.run("delete", "namespace", ns, "--wait=false")
    wait_for(lambda: k.run("get", "namespace", ns, check=False).returncode != 0,
             timeout=30, what=f"namespace {ns} gone")
