"""bench/ztp_objects.py NS N MANIFESTS: print (as one JSON List) what bench/ztp.sh
applies: N single-node clusters (bench/fleet_objects.py: ClusterDeployment +
AgentClusterInstall sno-i, one pull secret, one ClusterImageSet), one pool
InfraEnv `pool` (late binding, no clusterRef), and the simulator's BMC Secrets
and BareMetalHosts from MANIFESTS, the i-th BMH bound to sno-i through the
bmac.agent-install.openshift.io/cluster-reference annotation."""
import sys

import yaml

from fleet_objects import objects


def main():
    if len(sys.argv) != 4 or not sys.argv[2].isdigit():
        sys.exit("usage: ztp_objects.py NAMESPACE N MANIFESTS")
    ns, n = sys.argv[1], int(sys.argv[2])
    items = [o for o in objects(ns, n) if o["kind"] != "InfraEnv"]
    items.append({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
                  "metadata": {"name": "pool", "namespace": ns},
                  "spec": {"pullSecretRef": {"name": "pull-secret"}}})
    bmhs = 0
    with open(sys.argv[3]) as f:
        for d in yaml.safe_load_all(f):
            if not d:
                continue
            if d["kind"] == "BareMetalHost":
                d["metadata"].setdefault("annotations", {})[
                    "bmac.agent-install.openshift.io/cluster-reference"] = f"{ns}/sno-{bmhs}"
                bmhs += 1
            items.append(d)
    if bmhs != n:
        sys.exit(f"ztp_objects.py: {bmhs} BareMetalHosts in {sys.argv[3]}, want {n}")
    import json
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)


if __name__ == "__main__":
    main()
