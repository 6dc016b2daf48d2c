"""Admission webhooks end to end (kubeapi.md §5.1) with the real kubectl:
every rule refuses with HTTP 400 BadRequest and the upstream message, the
writes it allows go through, and the AgentClusterInstall default of
userManagedNetworking is applied."""
import json

import pytest

from conftest import wait_for

NS = "adm"
IE_API = "agent-install.openshift.io/v1beta1"
ACI_API = "extensions.hive.openshift.io/v1beta1"


def webhook(name):
    return f'admission webhook "{name}.admission.agentinstall.openshift.io" denied the request: '


def refused(result, message, hook):
    """kubectl failed with the API server's BadRequest for a denying webhook."""
    assert result.returncode != 0, result.stdout
    assert "Error from server (BadRequest)" in result.stderr, result.stderr
    assert webhook(hook) + message in result.stderr, result.stderr


@pytest.fixture
def ns_hub(hub):
    hub.create_namespace(NS)
    return hub


def infraenv(name, **spec):
    return {"apiVersion": IE_API, "kind": "InfraEnv", "metadata": {"name": name, "namespace": NS},
            "spec": {"pullSecretRef": {"name": "pull-secret"}, **spec}}


def cluster_deployment(name, installed=False, install_ref=None):
    spec = {"baseDomain": "example.com", "clusterName": name,
            "platform": {"agentBareMetal": {"agentSelector": {}}},
            "pullSecretRef": {"name": "pull-secret"}, "installed": installed}
    if install_ref:
        spec["clusterInstallRef"] = {"group": "extensions.hive.openshift.io", "kind": "AgentClusterInstall",
                                     "name": install_ref, "version": "v1beta1"}
    if installed:
        spec["clusterMetadata"] = {"clusterID": "c", "infraID": "i",
                                   "adminKubeconfigSecretRef": {"name": "kc"}}
    return {"apiVersion": "hive.openshift.io/v1", "kind": "ClusterDeployment",
            "metadata": {"name": name, "namespace": NS}, "spec": spec}


def aci(name, cp=3, workers=0, cd="parked", **spec):
    body = {"clusterDeploymentRef": {"name": cd}, "imageSetRef": {"name": "openshift-v4.9.0"},
            "networking": {"clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
                           "serviceNetwork": ["172.30.0.0/16"]},
            "provisionRequirements": {"controlPlaneAgents": cp, "workerAgents": workers}}
    for k, v in spec.items():
        if k == "userManagedNetworking":
            body["networking"][k] = v
        else:
            body[k] = v
    return {"apiVersion": ACI_API, "kind": "AgentClusterInstall",
            "metadata": {"name": name, "namespace": NS}, "spec": body}


def patch(hub, kind, name, body, *extra):
    return hub.kubectl("-n", NS, "patch", kind, name, "--type", "merge", "-p", json.dumps(body), *extra,
                       check=False)


# --- InfraEnv -----------------------------------------------------------------


def test_infraenv_create_both_cluster_ref_and_os_image_version(ns_hub):
    hub = ns_hub
    r = hub.apply_obj(infraenv("both", clusterRef={"name": "cd", "namespace": NS}, osImageVersion="4.19"),
                      check=False)
    refused(r, "Either Spec.ClusterRef or Spec.OSImageVersion should be specified (not both).",
            "infraenvvalidators")
    assert hub.kubectl("-n", NS, "get", "infraenv", "both", check=False).returncode != 0
    hub.apply_obj(infraenv("one", osImageVersion="4.19"))


def test_infraenv_update_rules(ns_hub):
    hub = ns_hub
    hub.apply_obj(infraenv("late"))
    refused(patch(hub, "infraenv", "late", {"spec": {"clusterRef": {"name": "cd", "namespace": NS}}}),
            "Attempted to change Spec.ClusterRef which is immutable after InfraEnv creation.",
            "infraenvvalidators")
    refused(patch(hub, "infraenv", "late", {"spec": {"cpuArchitecture": "arm64"}}),
            "Attempted to change Spec.CpuArchitecture which is immutable after InfraEnv creation.",
            "infraenvvalidators")
    # "" reads as x86_64; other fields stay editable.
    assert patch(hub, "infraenv", "late", {"spec": {"cpuArchitecture": "x86_64"}}).returncode == 0
    assert patch(hub, "infraenv", "late", {"spec": {"sshAuthorizedKey": "ssh-rsa AAAA"}}).returncode == 0
    # Late binding: an OS image version may be added.
    assert patch(hub, "infraenv", "late", {"spec": {"osImageVersion": "4.19"}}).returncode == 0

    hub.apply_obj(infraenv("bound", clusterRef={"name": "day1", "namespace": NS}))
    refused(patch(hub, "infraenv", "bound", {"spec": {"clusterRef": None}}),
            "Attempted to change Spec.ClusterRef which is immutable after InfraEnv creation.",
            "infraenvvalidators")
    refused(patch(hub, "infraenv", "bound", {"spec": {"clusterRef": {"name": "other", "namespace": NS}}}),
            "Attempted to change Spec.ClusterRef which is immutable after InfraEnv creation.",
            "infraenvvalidators")
    # The ClusterDeployment is missing, then not installed: refused.
    msg = ("spec.OSImageVersion is not valid. It can't be added alongside with a clusterRef "
           "when the cluster is not installed yet.")
    refused(patch(hub, "infraenv", "bound", {"spec": {"osImageVersion": "4.19"}}), msg, "infraenvvalidators")
    hub.apply_obj(cluster_deployment("day1"))
    refused(patch(hub, "infraenv", "bound", {"spec": {"osImageVersion": "4.19"}}), msg, "infraenvvalidators")
    # Once installed it is allowed.
    assert patch(hub, "clusterdeployment", "day1", {"spec": {"installed": True, "clusterMetadata": {
        "clusterID": "c", "infraID": "i", "adminKubeconfigSecretRef": {"name": "kc"}}}}).returncode == 0
    r = patch(hub, "infraenv", "bound", {"spec": {"osImageVersion": "4.19"}})
    assert r.returncode == 0, r.stderr


# --- Agent --------------------------------------------------------------------


def agent(name, **spec):
    return {"apiVersion": IE_API, "kind": "Agent", "metadata": {"name": name, "namespace": NS},
            "spec": {"approved": False, "role": "", **spec}}


def test_agent_both_disk_fields(ns_hub):
    hub = ns_hub
    msg = "Either InstallationDiskID or InstallationDiskPath can be set, not both."
    r = hub.apply_obj(agent("a1", installation_disk_id="/dev/disk/by-id/wwn-1",
                            installation_disk_path="/dev/disk/by-path/pci-0"), check=False)
    refused(r, msg, "agentvalidators")
    hub.apply_obj(agent("a1", installation_disk_id="/dev/disk/by-id/wwn-1"))
    refused(patch(hub, "agent", "a1", {"spec": {"installation_disk_path": "/dev/disk/by-path/pci-0"}}), msg,
            "agentvalidators")
    # Switching from one to the other is fine.
    r = patch(hub, "agent", "a1", {"spec": {"installation_disk_id": None,
                                            "installation_disk_path": "/dev/disk/by-path/pci-0"}})
    assert r.returncode == 0, r.stderr


def set_agent_state(hub, name, state, kind="Host"):
    r = hub.kubectl("-n", NS, "patch", "agent", name, "--subresource=status", "--type", "merge", "-p",
                    json.dumps({"status": {"kind": kind, "debugInfo": {"state": state}}}))
    assert r.returncode == 0, r.stderr


def test_agent_cluster_ref_immutable_during_installation(ns_hub):
    hub = ns_hub
    msg = "Attempted to change Spec.ClusterDeploymentName which is immutable during Agent installation."
    ref = {"name": "cd", "namespace": NS}
    hub.apply_obj(agent("a2", clusterDeploymentName=ref))

    # The controllers may rewrite the state between the two writes: try
    # until the write meets the state it is about.
    def attempt(state, kind, new_ref):
        def once():
            set_agent_state(hub, "a2", state, kind)
            r = patch(hub, "agent", "a2", {"spec": {"clusterDeploymentName": new_ref}})
            if r.returncode == 0:
                patch(hub, "agent", "a2", {"spec": {"clusterDeploymentName": ref}})
                return None
            return r
        return wait_for(once, timeout=20, interval=0.2, what=f"a refusal in {state}")

    for state in ("preparing-for-installation", "installing", "installing-in-progress",
                  "installing-pending-user-action", "preparing-failed", "preparing-successful"):
        refused(attempt(state, "Host", {"name": "other", "namespace": NS}), msg, "agentvalidators")
    refused(attempt("installing", "Host", None), msg, "agentvalidators")
    refused(attempt("installing", "AddToExistingClusterHost", {"name": "other", "namespace": NS}), msg,
            "agentvalidators")
    assert hub.kubectl_json("-n", NS, "get", "agent", "a2")["spec"]["clusterDeploymentName"] == ref

    # Outside INST6 the reference may move (again until the write meets the
    # state it is about).  The day-2 exception (AddToExistingClusterHost
    # released with a nil reference) is covered by the unit table: the
    # controller rewrites status.kind of a host it does not see installing
    # as day 2.
    def allowed(state, kind, new_ref):
        def once():
            set_agent_state(hub, "a2", state, kind)
            r = patch(hub, "agent", "a2", {"spec": {"clusterDeploymentName": new_ref}})
            if r.returncode != 0:
                assert webhook("agentvalidators") + msg in r.stderr, r.stderr
                return None
            return r
        return wait_for(once, timeout=20, interval=0.2, what=f"an allowed write in {state}")
    allowed("known-unbound", "Host", ref)
    # Status writes themselves are never refused.
    set_agent_state(hub, "a2", "installing")


# --- AgentClassification --------------------------------------------------------


def classification(name, key="size", value="xlarge", query=".cpu.count == 4"):
    return {"apiVersion": IE_API, "kind": "AgentClassification", "metadata": {"name": name, "namespace": NS},
            "spec": {"labelKey": key, "labelValue": value, "query": query}}


def test_agent_classification_rules(ns_hub):
    hub = ns_hub
    hook = "agentclassificationvalidators"
    refused(hub.apply_obj(classification("c1", value="QUERYERROR-big"), check=False),
            "label must not start with QUERYERROR as this is reserved", hook)
    r = hub.apply_obj(classification("c1", value="not a label value"), check=False)
    assert r.returncode != 0 and webhook(hook) in r.stderr, r.stderr
    assert "agentclassification.agent-install.openshift.io/size=not a label value" in r.stderr, r.stderr
    r = hub.apply_obj(classification("c1", query=".cpu.count == (4"), check=False)
    assert r.returncode != 0 and webhook(hook) + "failed to parse query" in r.stderr, r.stderr

    hub.apply_obj(classification("c1"))
    msg = "Label modified: the specified label may not be modified after creation"
    refused(patch(hub, "agentclassification", "c1", {"spec": {"labelValue": "small"}}), msg, hook)
    refused(patch(hub, "agentclassification", "c1", {"spec": {"labelKey": "kind"}}), msg, hook)
    r = patch(hub, "agentclassification", "c1", {"spec": {"query": ".cpu.count >= 8"}})
    assert r.returncode == 0, r.stderr


# --- AgentClusterInstall ----------------------------------------------------------


def test_aci_create_rules_and_default(ns_hub):
    hub = ns_hub
    hook = "agentclusterinstallvalidators"
    refused(hub.apply_obj(aci("sno", cp=1, userManagedNetworking=False), check=False),
            "UserManagedNetworking must be set to true with SNO", hook)
    refused(hub.apply_obj(aci("bm", platformType="BareMetal", userManagedNetworking=True), check=False),
            "Can't set baremetal platform with user-managed-networking enabled", hook)
    refused(hub.apply_obj(aci("none", platformType="None", userManagedNetworking=False), check=False),
            "Can't set none platform with user-managed-networking disabled", hook)
    refused(hub.apply_obj(aci("ext", platformType="External", userManagedNetworking=False), check=False),
            "Can't set external platform with user-managed-networking disabled", hook)
    # The default: SNO -> true, multi-node -> false, None -> true; vSphere left alone.
    for name, kw, want in (("sno", {"cp": 1}, True), ("multi", {}, False),
                           ("nonep", {"platformType": "None"}, True),
                           ("bm", {"platformType": "BareMetal"}, False),
                           ("vs", {"platformType": "VSphere"}, None)):
        hub.apply_obj(aci(name, **kw))
        got = hub.kubectl_json("-n", NS, "get", "aci", name)["spec"]["networking"].get("userManagedNetworking")
        assert got is want, (name, got)


def start_install(hub, name, reason):
    r = hub.kubectl("-n", NS, "patch", "aci", name, "--subresource=status", "--type", "merge", "-p",
                    json.dumps({"status": {"conditions": [{
                        "type": "Completed", "status": "False" if reason != "InstallationCompleted" else "True",
                        "reason": reason, "message": "test", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}))
    assert r.returncode == 0, r.stderr


def test_aci_update_rules(ns_hub):
    hub = ns_hub
    hook = "agentclusterinstallvalidators"
    # A ClusterDeployment that installs nothing keeps the controllers away
    # from this ACI's status.
    hub.apply_obj(cluster_deployment("parked"))
    hub.apply_obj(aci("a", cp=3, workers=0))
    refused(patch(hub, "aci", "a", {"spec": {"imageSetRef": {"name": "openshift-v4.10.0"}}}),
            "Attempted to change AgentClusterInstall.ImageSetRef which is immutable", hook)
    refused(patch(hub, "aci", "a", {"spec": {"imageSetRef": None}}),
            "Attempted to change AgentClusterInstall.ImageSetRef which is immutable", hook)
    # Platform and topology are checked again, the stored values filling in.
    r = patch(hub, "aci", "a", {"spec": {"platformType": "BareMetal"}})
    assert r.returncode == 0, r.stderr
    refused(patch(hub, "aci", "a", {"spec": {"networking": {"userManagedNetworking": True}}}),
            "Can't set baremetal platform with user-managed-networking enabled", hook)
    refused(patch(hub, "aci", "a", {"spec": {"platformType": None,
                                             "provisionRequirements": {"controlPlaneAgents": 1}}}),
            "UserManagedNetworking must be set to true with SNO", hook)
    # Before the install starts the spec is free.
    r = patch(hub, "aci", "a", {"spec": {"sshPublicKey": "ssh-rsa AAAA one"}})
    assert r.returncode == 0, r.stderr

    # After it started: only clusterMetadata and ignitionEndpoint.
    start_install(hub, "a", "InstallationInProgress")
    r = patch(hub, "aci", "a", {"spec": {"sshPublicKey": "ssh-rsa AAAA two"}})
    refused(r, "Attempted to change AgentClusterInstall.Spec which is immutable after install started, "
            "except for ClusterMetadata,IgnitionEndpoint fields. Unsupported change: \n", hook)
    assert '- sshPublicKey: "ssh-rsa AAAA one"' in r.stderr and '+ sshPublicKey: "ssh-rsa AAAA two"' in r.stderr
    assert hub.kubectl_json("-n", NS, "get", "aci", "a")["spec"]["sshPublicKey"] == "ssh-rsa AAAA one"
    refused(patch(hub, "aci", "a", {"spec": {"provisionRequirements": {"workerAgents": 2}}}),
            "Attempted to change AgentClusterInstall.Spec which is immutable after install started", hook)
    for body in ({"spec": {"ignitionEndpoint": {"url": "https://ignition.example:22623"}}},
                 {"spec": {"clusterMetadata": {"clusterID": "c", "infraID": "i",
                                               "adminKubeconfigSecretRef": {"name": "kc"}}}},
                 {"metadata": {"labels": {"team": "edge"}}}):
        r = patch(hub, "aci", "a", body)
        assert r.returncode == 0, (body, r.stderr)
    # Status writes go through while the spec is frozen.
    start_install(hub, "a", "InstallationInProgress")
    # Once completed, provisionRequirements may change (day 2), nothing else.
    start_install(hub, "a", "InstallationCompleted")
    r = patch(hub, "aci", "a", {"spec": {"provisionRequirements": {"workerAgents": 2}}})
    assert r.returncode == 0, r.stderr
    refused(patch(hub, "aci", "a", {"spec": {"sshPublicKey": "ssh-rsa AAAA three"}}),
            "Attempted to change AgentClusterInstall.Spec which is immutable after install started", hook)
