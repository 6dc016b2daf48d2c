"""The agent protocol as upstream's agent speaks it (issue 19, "Agent protocol").

Hosts here are driven by upstream_agent.UpstreamAgent: registration, every
step reply and the install progress in the JSON of upstream's models, not
agenthub-agent's.  Covered: belongs-to-majority-group on a None-platform
(user-managed networking) cluster without machineNetwork, where the address
families come from the cluster and service networks (upstream's L3 check);
GET host of a bound host carrying cluster_id and the fields upstream's
swagger marks as always present; and a 3-node None-platform install to
Completed."""
import urllib.parse

from conftest import wait_for
from test_install import NS, agents, cluster_deployment, conds_of, infraenv, setup_common
from upstream_agent import STAGES, UpstreamAgent, drive, fleet


def umn_aci_without_machine_network(name, cd, cp=3):
    return {"apiVersion": "extensions.hive.openshift.io/v1beta1", "kind": "AgentClusterInstall",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"clusterDeploymentRef": {"name": cd},
                     "imageSetRef": {"name": "openshift-v4.9.0"},
                     "platformType": "None",
                     "networking": {"userManagedNetworking": True,
                                    "clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
                                    "serviceNetwork": ["172.30.0.0/16"]},
                     "provisionRequirements": {"controlPlaneAgents": cp}}}


def validation(agent, vid):
    for group in (agent.get("status", {}).get("validationsInfo") or {}).values():
        for v in group:
            if v["id"] == vid:
                return v
    return None


def why_not(hub, aci):
    """What holds a cluster back: its conditions and the hosts' failing validations."""
    a = hub.kubectl_json("-n", NS, "get", "aci", aci)
    out = [a.get("status", {}).get("debugInfo"), [(c["type"], c["reason"], c["message"])
                                                  for c in a.get("status", {}).get("conditions", [])]]
    for ag in agents(hub):
        out.append((ag["metadata"]["name"], ag["status"]["debugInfo"],
                    [(v["id"], v["status"], v["message"]) for g in (ag["status"].get("validationsInfo") or {}).values()
                     for v in g if v["status"] not in ("success",)]))
    return out


def approve(hub, host_ids):
    for hid in host_ids:
        hub.kubectl("-n", NS, "patch", "agents.agent-install.openshift.io", hid, "-p",
                    '{"spec":{"approved":true}}', "--type", "merge")


def test_get_bound_host_carries_cluster_id_and_required_fields(hub):
    setup_common(hub)
    hub.apply_obj(cluster_deployment("bound", "bound-aci"))
    hub.apply_obj(umn_aci_without_machine_network("bound-aci", "bound"))
    ie = infraenv(hub, "bound-ie", "bound")
    host = UpstreamAgent(hub, ie, 0)
    reg = host.register()
    for k in ("id", "href", "kind", "status", "status_info"):
        assert k in reg, (k, reg)

    def cluster_id():
        url = hub.kubectl_json("-n", NS, "get", "aci", "bound-aci").get("status", {}).get(
            "debugInfo", {}).get("eventsURL")
        return urllib.parse.parse_qs(urllib.parse.urlparse(url).query)["cluster_id"][0] if url else None
    cid = wait_for(cluster_id, timeout=30, what="the ACI's eventsURL")
    host.step()
    got = host.get_host()
    assert got.get("cluster_id") == cid, got
    assert got["id"] == host.id and got["infra_env_id"] == ie["metadata"]["uid"], got
    for k in ("href", "kind", "status", "status_info", "progress_stages"):
        assert k in got, (k, got)
    assert got["kind"] == "Host" and got["href"].endswith(f"/hosts/{host.id}"), got


def test_three_node_none_platform_installs_with_upstream_agent_json(hub):
    setup_common(hub)
    hub.apply_obj(cluster_deployment("up3", "up3-aci"))
    hub.apply_obj(umn_aci_without_machine_network("up3-aci", "up3"))
    ie = infraenv(hub, "up3-ie", "up3")
    hosts = fleet(hub, ie, 3)
    for h in hosts:
        h.register()

    def inventoried():
        items = [a for a in agents(hub) if a.get("status", {}).get("inventory", {}).get("cpu")]
        return len(items) == 3
    drive(hosts, inventoried, timeout=60, what="3 Agents with an inventory")
    approve(hub, [h.id for h in hosts])

    # belongs-to-majority-group from the cluster/service networks' families.
    def majority_ok():
        vs = [validation(a, "belongs-to-majority-group") for a in agents(hub)]
        return vs if len(vs) == 3 and all(v and v["status"] == "success" for v in vs) else None
    vs = drive(hosts, majority_ok, timeout=120, what="belongs-to-majority-group success on every host")
    assert all(v["message"] == "Host has connectivity to the majority of hosts in the cluster" for v in vs), vs

    # The install starts by itself once the cluster is ready (every step answered).
    def installing():
        st = hub.kubectl_json("-n", NS, "get", "aci", "up3-aci").get("status", {}).get("debugInfo", {}).get("state")
        hs = [h.get_host()["status"] for h in hosts]
        return st if st in ("preparing-for-installation", "installing") and \
            all(s in ("installing", "installing-in-progress") for s in hs) else None
    drive(hosts, installing, timeout=180, what="the install to start", diag=lambda: why_not(hub, "up3-aci"))
    for t in ("inventory", "connectivity-check", "ntp-synchronizer", "domain-resolution",
              "installation-disk-speed-check", "container-image-availability"):
        assert any(t in h.stepped for h in hosts), (t, [sorted(h.stepped) for h in hosts])

    roles = {}
    for h in hosts:
        g = h.get_host()
        roles[h.id] = "bootstrap" if g.get("bootstrap") else \
            (g.get("suggested_role") if g["role"] == "auto-assign" else g["role"])
    assert sorted(roles.values()) == ["bootstrap", "master", "master"], roles
    # Bootstrap last through its stages, as the real install goes.
    order = sorted(hosts, key=lambda h: roles[h.id] == "bootstrap")
    for h in order:
        for stage in STAGES[roles[h.id]]:
            status, body = h.progress(stage)
            assert status == 200, (h.id, stage, status, body)
            if stage in ("Starting installation", "Installing"):
                h.step()
    hub.kubectl("-n", NS, "wait", "--for=condition=Completed", "aci/up3-aci", "--timeout=120s", timeout=140)
    c = conds_of(hub.kubectl_json("-n", NS, "get", "aci", "up3-aci"))
    assert c["Completed"]["reason"] == "InstallationCompleted", c
    assert all(a["status"]["debugInfo"]["state"] == "installed" for a in agents(hub))
