"""Cluster API end to end (issue 18, "What shows it works"): upstream CAPOA's example
manifests (../shared/conformance/capoa) applied verbatim to one hub, which runs the
whole stack alone: CAPI core (Cluster, Machine, MachineSet, MachineDeployment), CAPM3
(Metal3Cluster, Metal3Machine, Metal3Data), the Bare Metal Operator with Ironic (the
BareMetalHosts, booted through the simulator's Redfish BMC with a qcow2 image, the
discovery ignition in the config drive), the CAPOA bootstrap and control-plane providers
and assisted-service.  BareMetalHosts come from upstream's bmh.yaml.tpl, one per
simulated machine (only REPLACE_NAME/MAC/ID and the BMC's host:port filled in; the
template's BMC credentials are taken as written, so the simulator is given them).

Covered: a single-node cluster (sno-example.yaml) to provisioned and deleted; the
multi-node one (multinode-example.yaml, 3 control planes + 2 workers) to provisioned, its
MachineDeployment scaled 2 -> 3 (a day-2 worker from the free BareMetalHost) and 3 -> 1
(the Machines removed, their hosts back in the pool, their Agents gone with their
InfraEnvs), then the Cluster deleted (everything it made goes, every host returns and serves the
next cluster); and
bad input: no pull secret, a distributionVersion with no release (and one below 4.14),
no free BareMetalHost."""
import base64
import json
import re

import pytest
import yaml

from conftest import SANITIZER_MARKERS, SHARED, wait_for
from test_bmcsim import Bmc

NS = "test-capi"
CAPOA = SHARED / "conformance" / "capoa"
# bmh.yaml.tpl's BMC Secret has these in stringData, i.e. as the literal credentials.
BMC_USER, BMC_PASSWORD = "YWRtaW4=", "cGFzc3dvcmQ="
SUBNET = "192.168.222.0/24"  # multinode-example.yaml's VIPs are .40 and .41 of it
IMAGE = {"checksum": "https://rhcos.example.com/rhcos-4.19-x86_64-metal.x86_64.qcow2.sha256",
         "checksumType": "sha256", "format": "qcow2",
         "url": "https://rhcos.example.com/rhcos-4.19-x86_64-metal.x86_64.qcow2"}
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample user@example.com"

CLUSTER_NAME = "cluster.x-k8s.io/cluster-name"
CONTROL_PLANE = "cluster.x-k8s.io/control-plane"
OAC_LABEL = "bootstrap.cluster.x-k8s.io/openshiftAssistedConfig"
INFRAENV_LABEL = "infraenvs.agent-install.openshift.io"
OACP_FINALIZER = "openshiftassistedcontrolplane.controlplane.cluster.x-k8s.io/deprovision"
OAC_FINALIZER = "openshiftassistedconfig.bootstrap.cluster.x-k8s.io/deprovision"
OACP_V1A2 = "openshiftassistedcontrolplanes.v1alpha2.controlplane.cluster.x-k8s.io"
OAC_V1A1 = "openshiftassistedconfigs.v1alpha1.bootstrap.cluster.x-k8s.io"
INSTALLED = ("installed", "added-to-existing-cluster")

# Every kind a Cluster makes (or that is made for it), for the "all gone" checks.
CAPI_KINDS = ("machinedeployments.cluster.x-k8s.io", "machinesets.cluster.x-k8s.io",
              "machines.cluster.x-k8s.io", "openshiftassistedcontrolplanes.controlplane.cluster.x-k8s.io",
              "openshiftassistedconfigs.bootstrap.cluster.x-k8s.io",
              "metal3machines.infrastructure.cluster.x-k8s.io",
              "metal3clusters.infrastructure.cluster.x-k8s.io",
              "metal3dataclaims.infrastructure.cluster.x-k8s.io",
              "infraenvs.agent-install.openshift.io", "agents.agent-install.openshift.io",
              "clusterdeployments.hive.openshift.io", "agentclusterinstalls.extensions.hive.openshift.io")


# ---- helpers ------------------------------------------------------------------


def get(hub, kind, name, ns=NS):
    r = hub.kubectl("-n", ns, "get", kind, name, "-o", "json", check=False)
    if r.returncode != 0:
        assert "NotFound" in r.stderr or "not found" in r.stderr, r.stderr
        return None
    return json.loads(r.stdout)


def items(hub, kind, ns=NS, selector=None):
    args = ["-n", ns, "get", kind]
    if selector:
        args += ["-l", selector]
    return hub.kubectl_json(*args)["items"]


def names(objs):
    return sorted(o["metadata"]["name"] for o in objs)


def conds(obj, where=("conditions",)):
    """The conditions of obj by type; `where` is the path under status."""
    cur = obj.get("status", {})
    for w in where:
        cur = cur.get(w, {}) if isinstance(cur, dict) else {}
    return {c["type"]: c for c in (cur or [])} if isinstance(cur, list) else {}


def is_true(obj, ctype, where=("conditions",)):
    return conds(obj, where).get(ctype, {}).get("status") == "True"


def labels(obj):
    return obj["metadata"].get("labels", {}) or {}


def annotations(obj):
    return obj["metadata"].get("annotations", {}) or {}


def owners(obj, kind=None):
    return [o for o in obj["metadata"].get("ownerReferences", []) if kind is None or o["kind"] == kind]


def bmh_state(b):
    return b.get("status", {}).get("provisioning", {}).get("state", "")


def secret(hub, name):
    s = get(hub, "secret", name)
    assert s is not None, f"Secret {name} missing"
    return s, {k: base64.b64decode(v) for k, v in s.get("data", {}).items()}


def summary(hub):
    """A short account of where every CAPI object is, for a failing wait."""
    out = []
    for kind in ("clusters.cluster.x-k8s.io", "openshiftassistedcontrolplanes.controlplane.cluster.x-k8s.io",
                 "machines.cluster.x-k8s.io", "metal3machines.infrastructure.cluster.x-k8s.io",
                 "openshiftassistedconfigs.bootstrap.cluster.x-k8s.io", "baremetalhosts.metal3.io",
                 "infraenvs.agent-install.openshift.io", "agents.agent-install.openshift.io",
                 "agentclusterinstalls.extensions.hive.openshift.io"):
        r = hub.kubectl("-n", NS, "get", kind, "-o", "json", check=False)
        if r.returncode != 0:
            out.append(f"{kind}: {r.stderr.strip()[:200]}")
            continue
        for o in json.loads(r.stdout)["items"]:
            st = o.get("status", {}) or {}
            bits = [f"{kind.split('.')[0]}/{o['metadata']['name']}"]
            for key in ("phase", "ready", "initialized", "initialization"):
                if key in st:
                    bits.append(f"{key}={json.dumps(st[key])}")
            if "provisioning" in st:
                bits.append(f"state={bmh_state(o)} err={st.get('errorMessage', '')!r}")
            if "debugInfo" in st:
                bits.append(f"state={st['debugInfo'].get('state')}")
            if o["metadata"].get("deletionTimestamp"):
                bits.append("deleting")
            for where in (("conditions",), ("v1beta1Conditions",), ("v1beta2", "conditions")):
                for c in conds(o, where).values():
                    if c.get("status") != "True":
                        bits.append(f"{c['type']}={c.get('status')}/{c.get('reason', '')}:"
                                    f"{(c.get('message') or '')[:120]!r}")
            out.append(" ".join(bits))
    return "\n  ".join(out)


def wait(hub, pred, timeout, what):
    """wait_for, with where everything stands when it times out."""
    try:
        return wait_for(pred, timeout=timeout, interval=0.5, what=what)
    except pytest.fail.Exception as e:
        pytest.fail(f"{e}\nwhere things are:\n  {summary(hub)}")


class Machines:
    """`agenthub-agent simulate --bmc` with n machines and, per machine, the BMC Secret
    and BareMetalHost rendered from upstream's bmh.yaml.tpl."""

    def __init__(self, hub, tmp_path, n, prefix="capi-host"):
        self.hub = hub
        self.bmc = Bmc(tmp_path, hosts=n, user=BMC_USER, password=BMC_PASSWORD,
                       args=["--bmh-namespace", NS, "--cacert", str(hub.ca_path), "--subnet", SUBNET,
                             "--stage-seconds", "1", "--max-poll-seconds", "1"])
        tpl = (CAPOA / "bmh.yaml.tpl").read_text()
        self.docs = {}
        sim = [d for d in yaml.safe_load_all(self.bmc.manifests.read_text()) if d and d["kind"] == "BareMetalHost"]
        assert len(sim) == n
        for i, d in enumerate(sim):
            addr = d["spec"]["bmc"]["address"]
            m = re.fullmatch(r"redfish-virtualmedia\+http://([^/]+)/redfish/v1/Systems/([^/]+)", addr)
            assert m, addr
            name = f"{prefix}-{i}"
            text = (tpl.replace("REPLACE_NAME", name).replace("REPLACE_MAC", d["spec"]["bootMACAddress"])
                    .replace("REPLACE_ID", m.group(2)).replace("192.168.222.1:8000", m.group(1)))
            rendered = list(yaml.safe_load_all(text))
            bmh = next(x for x in rendered if x["kind"] == "BareMetalHost")
            assert bmh["spec"]["bmc"]["address"] == addr  # the simulator's machine, nothing else changed
            self.docs[name] = text

    def apply(self, *which, annotate=None):
        """kubectl apply -n test-capi of the named hosts' manifests (all by default);
        annotate: extra BMH annotations."""
        text = "\n---\n".join(self.docs[n] for n in (which or self.docs))
        if annotate:
            docs = list(yaml.safe_load_all(text))
            for d in docs:
                if d["kind"] == "BareMetalHost":
                    d["metadata"].setdefault("annotations", {}).update(annotate)
            text = yaml.safe_dump_all(docs)
        self.hub.kubectl("-n", NS, "apply", "-f", "-", input=text)

    def wait_available(self, which=None, timeout=60):
        which = list(which or self.docs)

        def ok():
            cur = {b["metadata"]["name"]: b for b in items(self.hub, "baremetalhosts")}
            return all(bmh_state(cur.get(n, {})) == "available" for n in which)
        wait(self.hub, ok, timeout, f"BareMetalHosts {which} available")

    def stop(self):
        self.bmc.stop()
        text = "\n".join(self.bmc.reader.snapshot())
        assert not any(m in text for m in SANITIZER_MARKERS), text[-4000:]


def example(name, **changes):
    """The docs of an upstream example; changes: kind -> function(doc) applied to it."""
    docs = [d for d in yaml.safe_load_all((CAPOA / name).read_text()) if d]
    for d in docs:
        if d["kind"] in changes:
            changes[d["kind"]](d)
    return docs


def apply_docs(hub, docs):
    hub.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))


def cluster_provisioned(hub, name):
    c = get(hub, "clusters.cluster.x-k8s.io", name)
    st = (c or {}).get("status", {})
    init = st.get("initialization", {})
    if not (st.get("phase") == "Provisioned" and init.get("infrastructureProvisioned") is True
            and init.get("controlPlaneInitialized") is True):
        return None
    return c if all(is_true(c, t) for t in ("InfrastructureReady", "ControlPlaneInitialized",
                                              "ControlPlaneAvailable")) else None


def machine_ready(m):
    return bool(m["spec"].get("providerID")) and is_true(m, "Ready") and is_true(m, "Available")


def control_plane_done(hub, name, replicas):
    """The OACP as v1alpha3 and v1alpha2 once initialized and available, the
    kubeconfig Secret, and its `replicas` control-plane Machines ready."""
    cp = get(hub, "openshiftassistedcontrolplanes.controlplane.cluster.x-k8s.io", name)
    if not cp or cp["status"].get("initialization", {}).get("controlPlaneInitialized") is not True \
            or not is_true(cp, "Available"):
        return None
    old = get(hub, OACP_V1A2, name)
    if not old or old["status"].get("initialized") is not True or old["status"].get("ready") is not True:
        return None
    if get(hub, "secret", f"{name}-kubeconfig") is None:
        return None
    ms = items(hub, "machines.cluster.x-k8s.io", selector=f"{CLUSTER_NAME}={name},{CONTROL_PLANE}")
    if len(ms) != replicas or not all(machine_ready(m) for m in ms):
        return None
    return cp, old, ms


def agent_of(hub, machine):
    """The Agent of a Machine: the one in InfraEnv <machine>."""
    a = items(hub, "agents.agent-install.openshift.io", selector=f"{INFRAENV_LABEL}={machine}")
    assert len(a) <= 1, names(a)
    return a[0] if a else None


def check_machine_chain(hub, m, cluster, role):
    """Everything one provisioned Machine stands on: its Metal3Machine, BMH, OAC,
    bootstrap Secret, InfraEnv and installed Agent.  Returns the BMH name."""
    mname = m["metadata"]["name"]
    assert labels(m)[CLUSTER_NAME] == cluster
    assert m["spec"]["clusterName"] == cluster
    infra = m["spec"]["infrastructureRef"]
    assert infra["kind"] == "Metal3Machine" and infra.get("apiGroup") == "infrastructure.cluster.x-k8s.io", infra
    boot = m["spec"]["bootstrap"]
    assert boot["configRef"]["kind"] == "OpenshiftAssistedConfig", boot
    assert boot["configRef"].get("apiGroup") == "bootstrap.cluster.x-k8s.io", boot
    oac_name = boot["configRef"]["name"]
    init = m["status"].get("initialization", {})
    assert init.get("infrastructureProvisioned") is True and init.get("bootstrapDataSecretCreated") is True, init
    assert m["status"].get("phase") == "Running", m["status"]

    m3m = get(hub, "metal3machines.infrastructure.cluster.x-k8s.io", infra["name"])
    assert m3m, infra
    assert [o["name"] for o in owners(m3m, "Machine") if o.get("controller")] == [mname]
    assert labels(m3m)[CLUSTER_NAME] == cluster
    ns_bmh = annotations(m3m)["metal3.io/BareMetalHost"]
    assert ns_bmh.startswith(f"{NS}/"), ns_bmh
    bmh_name = ns_bmh.split("/", 1)[1]
    pid = f"metal3://{NS}/{bmh_name}/{m3m['metadata']['name']}"
    assert m["spec"]["providerID"] == pid and m3m["spec"]["providerID"] == pid
    m3st = m3m.get("status", {})
    assert m3st.get("ready") is True or m3st.get("initialization", {}).get("provisioned") is True, m3st

    bmh = get(hub, "baremetalhosts.metal3.io", bmh_name)
    assert bmh_state(bmh) == "provisioned", bmh.get("status")
    assert bmh["spec"]["consumerRef"]["kind"] == "Metal3Machine"
    assert bmh["spec"]["consumerRef"]["name"] == m3m["metadata"]["name"]
    assert bmh["spec"]["online"] is True
    assert bmh["spec"]["image"] == IMAGE, bmh["spec"]["image"]
    assert bmh["spec"]["automatedCleaningMode"] == "disabled"

    oac = get(hub, "openshiftassistedconfigs.bootstrap.cluster.x-k8s.io", oac_name)
    assert [o["name"] for o in owners(oac, "Machine")] == [mname]
    assert labels(oac)[CLUSTER_NAME] == cluster
    assert OAC_FINALIZER in oac["metadata"].get("finalizers", [])
    assert oac["status"]["initialization"]["dataSecretCreated"] is True
    assert is_true(oac, "DataSecretAvailable", ("v1beta1Conditions",)), oac["status"]
    data_secret = oac["status"]["dataSecretName"]
    assert boot["dataSecretName"] == data_secret
    assert bmh["spec"]["userData"]["name"] == data_secret
    s, data = secret(hub, data_secret)
    assert s["type"] == "cluster.x-k8s.io/secret"
    assert data["format"] == b"ignition"
    ign = json.loads(data["value"])
    assert ign["ignition"]["version"].startswith("3."), ign["ignition"]
    assert [o["kind"] for o in owners(s)] == ["OpenshiftAssistedConfig"]
    old = get(hub, OAC_V1A1, oac_name)
    assert old["apiVersion"] == "bootstrap.cluster.x-k8s.io/v1alpha1"
    assert old["status"]["ready"] is True and old["status"]["dataSecretName"] == data_secret

    # Config-drive metadata (CAPM3's Metal3Data): what configdrive-metadata.service reads.
    md_ref = bmh["spec"].get("metaData") or {}
    _, md = secret(hub, md_ref["name"])
    meta = yaml.safe_load(md["metaData"])
    assert meta["uuid"] == bmh["metadata"]["uid"], meta

    ie = get(hub, "infraenvs.agent-install.openshift.io", mname)
    assert ie, f"InfraEnv {mname}"
    assert labels(ie)[OAC_LABEL] == oac_name
    assert ie["spec"]["clusterRef"] == {"name": cluster, "namespace": NS}
    assert ie["spec"].get("sshAuthorizedKey") == SSH_KEY
    assert sorted(o["kind"] for o in owners(ie)) == ["Machine", "OpenshiftAssistedConfig"]
    a = agent_of(hub, mname)
    assert a, f"the Agent of {mname}"
    assert a["spec"]["approved"] is True and a["spec"]["role"] == role
    assert a["status"]["debugInfo"]["state"] in INSTALLED, a["status"]["debugInfo"]
    assert a["spec"]["clusterDeploymentName"]["name"] == cluster
    macs = [i.get("macAddress", "").lower() for i in a["status"]["inventory"].get("interfaces", [])]
    assert bmh["spec"]["bootMACAddress"].lower() in macs, (bmh["spec"]["bootMACAddress"], macs)
    host = a["spec"].get("hostname") or a["status"]["inventory"]["hostname"]
    assert m["status"]["nodeRef"]["name"] == host, (m["status"].get("nodeRef"), host)
    return bmh_name


def check_all_gone(hub, cluster, bmh_names):
    for kind in CAPI_KINDS:
        left = [o["metadata"]["name"] for o in items(hub, kind)]
        assert left == [], f"{kind} left after the Cluster was deleted: {left}"
    assert get(hub, "secret", f"{cluster}-kubeconfig") is None
    cur = {b["metadata"]["name"]: b for b in items(hub, "baremetalhosts.metal3.io")}
    assert sorted(cur) == sorted(bmh_names)
    for n, b in cur.items():
        assert "consumerRef" not in b["spec"], (n, b["spec"]["consumerRef"])
        assert not b["spec"].get("image") and not b["spec"].get("userData"), (n, b["spec"])


def wait_all_returned(hub, bmh_names, timeout=90):
    def ok():
        cur = {b["metadata"]["name"]: b for b in items(hub, "baremetalhosts.metal3.io")}
        return all(bmh_state(cur[n]) == "available" and "consumerRef" not in cur[n]["spec"]
                   and cur[n]["status"].get("poweredOn") is False for n in bmh_names)
    wait(hub, ok, timeout, f"BareMetalHosts {bmh_names} available, free and off")


@pytest.fixture
def capi_hub(hub_factory):
    return hub_factory(extra_args=["--host-disconnect-timeout", "30s"])


def start(hub, tmp_path, sims, n):
    hub.create_namespace(NS)
    m = Machines(hub, tmp_path, n)
    sims.append(m)
    return m


# ---- single node ----------------------------------------------------------------


def test_sno_example_provisions_then_deletes(capi_hub, tmp_path, sims):
    hub = capi_hub
    fleet = start(hub, tmp_path, sims, 1)
    fleet.apply()
    fleet.wait_available()
    hub.kubectl("apply", "-f", str(CAPOA / "sno-example.yaml"))

    # CAPI core's Cluster duties: owner and label on the control plane and the
    # infrastructure cluster, the endpoint and infrastructureProvisioned from Metal3Cluster.
    def wired():
        c = get(hub, "clusters.cluster.x-k8s.io", "test-sno")
        init = c.get("status", {}).get("initialization", {})
        return c if init.get("infrastructureProvisioned") is True and c["spec"].get("controlPlaneEndpoint") else None
    c = wait(hub, wired, 30, "Cluster test-sno: infrastructureProvisioned and controlPlaneEndpoint")
    assert c["spec"]["controlPlaneEndpoint"] == {"host": "test-sno.lab.home", "port": 6443}
    for kind in ("openshiftassistedcontrolplanes.controlplane.cluster.x-k8s.io",
                 "metal3clusters.infrastructure.cluster.x-k8s.io"):
        o = get(hub, kind, "test-sno")
        assert [x["name"] for x in owners(o, "Cluster")] == ["test-sno"], (kind, o["metadata"])
        assert labels(o)[CLUSTER_NAME] == "test-sno", (kind, o["metadata"])
    m3c = get(hub, "metal3clusters.infrastructure.cluster.x-k8s.io", "test-sno")
    assert m3c["status"].get("ready") is True or m3c["status"].get("initialization", {}).get("provisioned") is True

    done = wait(hub, lambda: cluster_provisioned(hub, "test-sno") and control_plane_done(hub, "test-sno", 1),
                240, "test-sno provisioned: Cluster, OACP initialized and ready, kubeconfig, Machine Ready")
    cp, old, (m,) = done
    c = cluster_provisioned(hub, "test-sno")
    assert c["status"]["phase"] == "Provisioned"

    # The control plane, as v1alpha3 (storage) and v1alpha2.
    assert OACP_FINALIZER in cp["metadata"]["finalizers"]
    st = cp["status"]
    assert (st.get("replicas"), st.get("readyReplicas"), st.get("availableReplicas")) == (1, 1, 1), st
    for t in ("Available", "KubeconfigAvailable", "MachinesCreated", "MachinesReady", "Ready"):
        assert is_true(cp, t), (t, conds(cp).get(t))
    assert conds(cp)["Available"]["reason"] == "Available"
    assert is_true(cp, "KubernetesVersionAvailable"), conds(cp).get("KubernetesVersionAvailable")
    # OpenShift 4.19 is Kubernetes 1.32 (the hub knows the minor only: README, "Cluster API:
    # the OpenShift Assisted control plane").
    assert re.fullmatch(r"v?1\.32(\.\d+)?", st.get("version", "")), st.get("version")
    assert old["apiVersion"] == "controlplane.cluster.x-k8s.io/v1alpha2"
    assert old["spec"]["distributionVersion"] == "4.19.0"
    assert old["spec"]["machineTemplate"]["infrastructureRef"]["kind"] == "Metal3MachineTemplate"
    assert old["spec"]["machineTemplate"]["infrastructureRef"]["name"] == "test-sno-controlplane"

    # The Machine OACP made, and everything under it.
    assert re.fullmatch(r"test-sno-[a-z0-9]{5}", m["metadata"]["name"]), m["metadata"]["name"]
    assert [o["name"] for o in owners(m, "OpenshiftAssistedControlPlane") if o.get("controller")] == ["test-sno"]
    assert labels(m)[CONTROL_PLANE] == "" and labels(m)["cluster.x-k8s.io/control-plane-name"] == "test-sno"
    assert annotations(m)["bmac.agent-install.openshift.io/role"] == "master"
    m3m = get(hub, "metal3machines.infrastructure.cluster.x-k8s.io", m["spec"]["infrastructureRef"]["name"])
    assert annotations(m3m)["cluster.x-k8s.io/cloned-from-name"] == "test-sno-controlplane"
    bmh = check_machine_chain(hub, m, "test-sno", "master")
    assert bmh == "capi-host-0"

    # What the control-plane provider made for assisted-service.
    cd = get(hub, "clusterdeployments.hive.openshift.io", "test-sno")
    assert [o["kind"] for o in owners(cd)] == ["OpenshiftAssistedControlPlane"]
    assert labels(cd)[CLUSTER_NAME] == "test-sno"
    assert cd["spec"]["clusterName"] == "test-sno" and cd["spec"]["baseDomain"] == "lab.home"
    assert cd["spec"]["clusterInstallRef"]["kind"] == "AgentClusterInstall"
    assert cd["spec"]["clusterInstallRef"]["name"] == "test-sno"
    aci = get(hub, "agentclusterinstalls.extensions.hive.openshift.io", "test-sno")
    assert labels(aci)["agentclusterinstalls.agent-install.openshift.io/consumer"] == "OpenshiftAssistedControlPlane"
    assert aci["spec"]["provisionRequirements"] == {"controlPlaneAgents": 1, "workerAgents": 0}, \
        aci["spec"]["provisionRequirements"]
    assert aci["spec"]["imageSetRef"] == {"name": "test-sno"}
    assert aci["spec"].get("platformType", "None") == "None"
    assert aci["spec"]["networking"]["clusterNetwork"] == [{"cidr": "172.18.0.0/20", "hostPrefix": 23}]
    assert aci["spec"]["networking"]["serviceNetwork"] == ["10.96.0.0/12"]
    assert aci["spec"]["sshPublicKey"] == SSH_KEY
    assert is_true(aci, "Completed"), conds(aci).get("Completed")
    cis = hub.kubectl_json("get", "clusterimagesets.hive.openshift.io", "test-sno")
    assert cis["spec"]["releaseImage"].startswith("quay.io/openshift-release-dev/ocp-release"), cis["spec"]
    assert "4.19.0" in cis["spec"]["releaseImage"] or "@sha256:" in cis["spec"]["releaseImage"], cis["spec"]

    s, data = secret(hub, "test-sno-kubeconfig")
    assert s["type"] == "cluster.x-k8s.io/secret"
    assert labels(s)[CLUSTER_NAME] == "test-sno"
    assert [o["kind"] for o in owners(s) if o.get("controller")] == ["OpenshiftAssistedControlPlane"]
    kc = yaml.safe_load(data["value"])
    assert kc["kind"] == "Config" and kc["clusters"], kc.keys()
    # No pull secret in any status, condition or event.
    dump = json.dumps(hub.kubectl_json("-n", NS, "get", "events,machines.cluster.x-k8s.io,"
                                       "openshiftassistedcontrolplanes.controlplane.cluster.x-k8s.io"))
    assert "dXNlcjpwYXNz" not in dump

    # Deleting the Cluster: everything it made goes; the host is deprovisioned and free.
    hub.kubectl("-n", NS, "delete", "clusters.cluster.x-k8s.io", "test-sno", "--timeout=120s", timeout=130)
    wait_all_returned(hub, ["capi-host-0"])
    check_all_gone(hub, "test-sno", ["capi-host-0"])


# ---- multi-node, then scaling, then deletion -------------------------------------
# One hub and one installed multi-node cluster shared by the tests below, in order.


@pytest.fixture(scope="module")
def multinode(module_hub_factory, tmp_path_factory):
    hub = module_hub_factory(extra_args=["--host-disconnect-timeout", "30s"], name="capi-multinode")
    hub.create_namespace(NS)
    fleet = Machines(hub, tmp_path_factory.mktemp("capi-bmc"), 6)
    state = {"hub": hub, "fleet": fleet}
    try:
        fleet.apply()
        yield state
    finally:
        fleet.stop()


def worker_machines(hub):
    return items(hub, "machines.cluster.x-k8s.io",
                 selector=f"{CLUSTER_NAME}=test-multinode,cluster.x-k8s.io/deployment-name=test-multinode-worker")


def test_multinode_example_provisions(multinode):
    hub, fleet = multinode["hub"], multinode["fleet"]
    fleet.wait_available()
    hub.kubectl("apply", "-f", str(CAPOA / "multinode-example.yaml"))

    def done():
        r = cluster_provisioned(hub, "test-multinode") and control_plane_done(hub, "test-multinode", 3)
        ws = worker_machines(hub)
        return r if r and len(ws) == 2 and all(machine_ready(w) for w in ws) else None
    cp, old, cps = wait(hub, done, 300, "test-multinode provisioned: 3 control-plane and 2 worker Machines Ready")
    assert (cp["status"].get("replicas"), cp["status"].get("readyReplicas")) == (3, 3), cp["status"]
    assert is_true(cp, "Ready") and old["status"]["ready"] is True
    used = set()
    for m in cps:
        used.add(check_machine_chain(hub, m, "test-multinode", "master"))
    ws = worker_machines(hub)
    md = get(hub, "machinedeployments.cluster.x-k8s.io", "test-multinode-worker")
    ms = items(hub, "machinesets.cluster.x-k8s.io", selector=f"{CLUSTER_NAME}=test-multinode")
    assert len(ms) == 1, names(ms)
    assert [o["name"] for o in owners(ms[0], "MachineDeployment")] == ["test-multinode-worker"]
    for w in ws:
        assert labels(w)["cluster.x-k8s.io/set-name"] == ms[0]["metadata"]["name"]
        assert [o["name"] for o in owners(w, "MachineSet")] == [ms[0]["metadata"]["name"]]
        assert CONTROL_PLANE not in labels(w)
        used.add(check_machine_chain(hub, w, "test-multinode", "worker"))
        # The OAC is cloned from the OpenshiftAssistedConfigTemplate, named after the Machine.
        oac = get(hub, "openshiftassistedconfigs.bootstrap.cluster.x-k8s.io",
                  w["spec"]["bootstrap"]["configRef"]["name"])
        assert oac["metadata"]["name"] == w["metadata"]["name"]
        assert oac["spec"]["pullSecretRef"] == {"name": "pull-secret"}
        m3m = get(hub, "metal3machines.infrastructure.cluster.x-k8s.io", w["spec"]["infrastructureRef"]["name"])
        assert annotations(m3m)["cluster.x-k8s.io/cloned-from-name"] == "test-multinode-workers-2"
    assert len(used) == 5
    mst = md["status"]
    assert (mst.get("replicas"), mst.get("readyReplicas")) == (2, 2), mst
    aci = get(hub, "agentclusterinstalls.extensions.hive.openshift.io", "test-multinode")
    assert aci["spec"]["provisionRequirements"] == {"controlPlaneAgents": 3, "workerAgents": 2}
    assert aci["spec"]["platformType"] == "BareMetal"
    assert aci["spec"]["apiVIPs"] == ["192.168.222.40"] and aci["spec"]["ingressVIPs"] == ["192.168.222.41"]
    assert is_true(aci, "Completed")
    assert get(hub, "secret", "test-multinode-kubeconfig") is not None
    multinode["used"] = used


def test_multinode_scale_up_adds_a_day2_worker(multinode):
    hub, fleet = multinode["hub"], multinode["fleet"]
    assert multinode.get("used"), "needs test_multinode_example_provisions"
    free = sorted(set(fleet.docs) - multinode["used"])
    assert len(free) == 1, free
    before = set(names(worker_machines(hub)))
    hub.kubectl("-n", NS, "scale", "machinedeployments.cluster.x-k8s.io", "test-multinode-worker", "--replicas=3")

    def three():
        ws = worker_machines(hub)
        return ws if len(ws) == 3 and all(machine_ready(w) for w in ws) else None
    ws = wait(hub, three, 150, "a third worker Machine Ready")
    (new,) = [w for w in ws if w["metadata"]["name"] not in before]
    assert check_machine_chain(hub, new, "test-multinode", "worker") == free[0]
    # A day-2 host: added to the installed cluster.
    assert agent_of(hub, new["metadata"]["name"])["status"]["debugInfo"]["state"] == "added-to-existing-cluster"
    aci = get(hub, "agentclusterinstalls.extensions.hive.openshift.io", "test-multinode")
    assert aci["spec"]["provisionRequirements"]["workerAgents"] == 3
    md = get(hub, "machinedeployments.cluster.x-k8s.io", "test-multinode-worker")
    assert md["spec"]["replicas"] == 3 and md["status"].get("readyReplicas") == 3, md["status"]
    multinode["used"].add(free[0])


def test_multinode_scale_down_returns_hosts(multinode):
    hub = multinode["hub"]
    assert len(multinode.get("used", ())) == 6, "needs the scale-up test"
    ws = worker_machines(hub)
    assert len(ws) == 3
    before = {w["metadata"]["name"]: annotations(get(hub, "metal3machines.infrastructure.cluster.x-k8s.io",
                                                         w["spec"]["infrastructureRef"]["name"]))
              ["metal3.io/BareMetalHost"].split("/")[1] for w in ws}
    hub.kubectl("-n", NS, "scale", "machinedeployments.cluster.x-k8s.io", "test-multinode-worker", "--replicas=1")
    wait(hub, lambda: len(worker_machines(hub)) == 1, 120, "one worker Machine left")
    (kept,) = names(worker_machines(hub))
    gone = {m: b for m, b in before.items() if m != kept}
    assert len(gone) == 2
    wait_all_returned(hub, sorted(gone.values()))
    for m, b in gone.items():
        bmh = get(hub, "baremetalhosts.metal3.io", b)
        assert not bmh["spec"].get("image") and not bmh["spec"].get("userData"), bmh["spec"]
        assert bmh["status"].get("errorMessage", "") == ""
        assert get(hub, "infraenvs.agent-install.openshift.io", m) is None, f"InfraEnv {m} left"
        assert get(hub, "openshiftassistedconfigs.bootstrap.cluster.x-k8s.io", m) is None, f"OAC {m} left"
        wait(hub, lambda: agent_of(hub, m) is None, 30, f"the Agent of {m} gone")
    left = {annotations(x)["metal3.io/BareMetalHost"].split("/")[1]
            for x in items(hub, "metal3machines.infrastructure.cluster.x-k8s.io")}
    assert not left & set(gone.values()), left
    aci = get(hub, "agentclusterinstalls.extensions.hive.openshift.io", "test-multinode")
    assert aci["spec"]["provisionRequirements"]["workerAgents"] == 1
    md = get(hub, "machinedeployments.cluster.x-k8s.io", "test-multinode-worker")
    wait(hub, lambda: get(hub, "machinedeployments.cluster.x-k8s.io", "test-multinode-worker")["status"]
         .get("replicas") == 1, 30, "MachineDeployment status.replicas 1")
    assert md["spec"]["replicas"] == 1
    multinode["gone"] = sorted(gone.values())


def test_multinode_delete_cluster_returns_everything(multinode):
    hub, fleet = multinode["hub"], multinode["fleet"]
    assert multinode.get("gone"), "needs the scale-down test"
    hub.kubectl("-n", NS, "delete", "clusters.cluster.x-k8s.io", "test-multinode", "--timeout=150s", timeout=160)
    wait_all_returned(hub, sorted(fleet.docs), timeout=120)
    check_all_gone(hub, "test-multinode", sorted(fleet.docs))
    assert fleet.bmc.status("off") == 6
    # The returned hosts serve the next cluster: the single-node example on one of them.
    hub.kubectl("apply", "-f", str(CAPOA / "sno-example.yaml"))
    _, _, (m,) = wait(hub, lambda: control_plane_done(hub, "test-sno", 1), 120,
                      "test-sno provisioned on a returned host")
    assert check_machine_chain(hub, m, "test-sno", "master") in fleet.docs


# ---- bad input ------------------------------------------------------------------


def test_missing_pull_secret(capi_hub, tmp_path, sims):
    """sno-example.yaml without its pull-secret Secret: nothing is bootstrapped and
    the conditions say why; once the Secret exists, it goes on."""
    hub = capi_hub
    fleet = start(hub, tmp_path, sims, 1)
    fleet.apply()
    docs = example("sno-example.yaml")
    ps = [d for d in docs if d["kind"] == "Secret"]
    apply_docs(hub, [d for d in docs if d["kind"] != "Secret"])

    def stuck():
        oacs = items(hub, "openshiftassistedconfigs.bootstrap.cluster.x-k8s.io")
        if len(oacs) != 1:
            return None
        c = conds(oacs[0], ("v1beta1Conditions",)).get("DataSecretAvailable", {})
        if c.get("status") != "False" or c.get("reason") not in ("WaitingForAssistedInstaller",
                                                                  "WaitingForInfraEnvToBeReady"):
            return None
        # Somewhere assisted-service says it is the pull secret (InfraEnv ImageCreated,
        # ACI SpecSynced, or the control plane).
        said = []
        for kind in ("infraenvs.agent-install.openshift.io", "agentclusterinstalls.extensions.hive.openshift.io",
                     "openshiftassistedcontrolplanes.controlplane.cluster.x-k8s.io"):
            for o in items(hub, kind):
                said += [c for c in conds(o).values() if c["status"] == "False" and "pull-secret" in c.get("message", "")]
        return (oacs[0], c, said) if said else None
    oac, c, said = wait(hub, stuck, 60, "the missing pull secret reported")
    assert "dataSecretName" not in oac["status"]
    ms = items(hub, "machines.cluster.x-k8s.io")
    assert len(ms) == 1 and not ms[0]["spec"].get("providerID")
    assert not ms[0]["spec"]["bootstrap"].get("dataSecretName")
    b = get(hub, "baremetalhosts.metal3.io", "capi-host-0")
    assert "consumerRef" not in b["spec"] or not b["spec"].get("userData"), b["spec"]
    assert hub.alive()

    apply_docs(hub, ps)

    def bootstrapped():
        o = items(hub, "openshiftassistedconfigs.bootstrap.cluster.x-k8s.io")[0]
        return o if is_true(o, "DataSecretAvailable", ("v1beta1Conditions",)) else None
    wait(hub, bootstrapped, 90, "bootstrap data once the pull secret exists")
    wait(hub, lambda: (get(hub, "baremetalhosts.metal3.io", "capi-host-0")["spec"].get("consumerRef") or {})
         .get("kind") == "Metal3Machine", 60, "the host consumed")


def test_distribution_version_without_release(capi_hub):
    """distributionVersion below 4.14.0: no Machine, MachinesCreated False
    MachineGenerationFailed; one with no release: KubernetesVersionAvailable False
    KubernetesVersionUnavailable (in v1alpha2 too); a good one again: True."""
    hub = capi_hub
    hub.create_namespace(NS)

    def version(v):
        def f(d):
            d["spec"]["distributionVersion"] = v
        return f
    apply_docs(hub, example("sno-example.yaml", OpenshiftAssistedControlPlane=version("4.13.0")))
    kind = "openshiftassistedcontrolplanes.controlplane.cluster.x-k8s.io"

    def cond(t, status="False"):
        def f():
            c = conds(get(hub, kind, "test-sno")).get(t, {})
            return c if c.get("status") == status else None
        return f
    c = wait(hub, cond("MachinesCreated"), 30, "MachinesCreated False for 4.13.0")
    assert c["reason"] == "MachineGenerationFailed", c
    assert "4.13.0" in c["message"], c
    assert items(hub, "machines.cluster.x-k8s.io") == []
    assert get(hub, "clusterdeployments.hive.openshift.io", "test-sno") is None

    hub.kubectl("-n", NS, "patch", kind, "test-sno", "--type=merge", "-p",
                '{"spec": {"distributionVersion": "4.99.0"}}')
    c = wait(hub, cond("KubernetesVersionAvailable"), 30, "KubernetesVersionAvailable False for 4.99.0")
    assert c["reason"] == "KubernetesVersionUnavailable", c
    assert "4.99.0" in c["message"], c
    # The v1alpha2 view: the same condition as v1beta1 conditions (upstream's conversion
    # copies the types as they are), with a severity.
    old = get(hub, OACP_V1A2, "test-sno")
    oc = conds(old).get("KubernetesVersionAvailable", {})
    assert oc.get("status") == "False" and oc.get("reason") == "KubernetesVersionUnavailable", conds(old)
    assert oc.get("severity"), oc
    assert hub.alive()

    hub.kubectl("-n", NS, "patch", kind, "test-sno", "--type=merge", "-p",
                '{"spec": {"distributionVersion": "4.19.0"}}')
    wait(hub, cond("KubernetesVersionAvailable", "True"), 30, "KubernetesVersionAvailable True for 4.19.0")
    assert re.fullmatch(r"v?1\.32(\.\d+)?", get(hub, kind, "test-sno")["status"].get("version", ""))


def test_no_free_host_the_machine_waits(capi_hub, tmp_path, sims):
    """The only BareMetalHost is marked unhealthy: the Metal3Machine finds no host and
    says so, as CAPM3 does, and its Machine waits; once the host is healthy it is taken."""
    hub = capi_hub
    fleet = start(hub, tmp_path, sims, 1)
    fleet.apply(annotate={"capi.metal3.io/unhealthy": ""})
    fleet.wait_available()
    hub.kubectl("apply", "-f", str(CAPOA / "sno-example.yaml"))

    def waiting():
        m3ms = items(hub, "metal3machines.infrastructure.cluster.x-k8s.io")
        if len(m3ms) != 1:
            return None
        c = conds(m3ms[0]).get("AssociateBMH", {})
        return (m3ms[0], c) if c.get("status") == "False" and c.get("reason") == "AssociateBMHFailed" else None
    m3m, c = wait(hub, waiting, 90, "Metal3Machine AssociateBMH False AssociateBMHFailed")
    assert "no available host found" in c["message"], c
    v2 = conds(m3m, ("v1beta2", "conditions")).get("AssociateBareMetalHost", {})
    assert v2.get("status") == "False" and v2.get("reason") == "AssociateBareMetalHostFailed", conds(m3m, ("v1beta2", "conditions"))
    (m,) = items(hub, "machines.cluster.x-k8s.io")
    assert not m["spec"].get("providerID")
    assert m["status"].get("phase") in ("Pending", "Provisioning"), m["status"]
    said = [x for x in conds(m).values() if x["status"] == "False" and "no available host found" in x.get("message", "")]
    assert said, f"no Machine condition says it waits for a host: {conds(m)}"
    b = get(hub, "baremetalhosts.metal3.io", "capi-host-0")
    assert "consumerRef" not in b["spec"] and bmh_state(b) == "available"

    hub.kubectl("-n", NS, "annotate", "baremetalhosts.metal3.io", "capi-host-0", "capi.metal3.io/unhealthy-")

    def taken():
        b = get(hub, "baremetalhosts.metal3.io", "capi-host-0")
        ref = b["spec"].get("consumerRef") or {}
        return b if ref.get("name") == m3m["metadata"]["name"] and b["spec"].get("image") == IMAGE else None
    wait(hub, taken, 60, "the host taken once healthy")
    wait(hub, lambda: is_true(items(hub, "metal3machines.infrastructure.cluster.x-k8s.io")[0], "AssociateBMH"),
         30, "AssociateBMH True")
