"""bench/fleet_objects.py NS N: print (as one JSON List) the objects of N
single-node clusters for bench/fleet.sh: a namespace, one pull secret, one
ClusterImageSet, and per cluster i a ClusterDeployment sno-i, its
AgentClusterInstall sno-i (one control-plane agent) and an InfraEnv sno-i
bound to it (clusterRef) that approves its Agents by itself."""
import base64
import json
import sys

PULL_SECRET = '{"auths":{"cloud.openshift.com":{"auth":"c2VjcmV0OnRva2Vu","email":"a@example.com"}}}'


def objects(ns, n):
    yield {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    yield {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
           "metadata": {"name": "pull-secret", "namespace": ns},
           "data": {".dockerconfigjson": base64.b64encode(PULL_SECRET.encode()).decode()}}
    yield {"apiVersion": "hive.openshift.io/v1", "kind": "ClusterImageSet",
           "metadata": {"name": "fleet-release"},
           "spec": {"releaseImage": "quay.io/openshift-release-dev/ocp-release:4.16.0-x86_64"}}
    for i in range(n):
        name = f"sno-{i}"
        yield {"apiVersion": "hive.openshift.io/v1", "kind": "ClusterDeployment",
               "metadata": {"name": name, "namespace": ns},
               "spec": {"baseDomain": "fleet.example.com", "clusterName": name,
                        "clusterInstallRef": {"group": "extensions.hive.openshift.io", "version": "v1beta1",
                                              "kind": "AgentClusterInstall", "name": name},
                        "platform": {"agentBareMetal": {"agentSelector": {}}},
                        "pullSecretRef": {"name": "pull-secret"}}}
        yield {"apiVersion": "extensions.hive.openshift.io/v1beta1", "kind": "AgentClusterInstall",
               "metadata": {"name": name, "namespace": ns},
               "spec": {"clusterDeploymentRef": {"name": name},
                        "imageSetRef": {"name": "fleet-release"},
                        "networking": {"clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
                                       "machineNetwork": [{"cidr": "192.168.0.0/16"}],
                                       "serviceNetwork": ["172.30.0.0/16"]},
                        "provisionRequirements": {"controlPlaneAgents": 1}}}
        yield {"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
               "metadata": {"name": name, "namespace": ns},
               "spec": {"clusterRef": {"name": name, "namespace": ns},
                        "pullSecretRef": {"name": "pull-secret"},
                        "agentApproval": {"autoApprove": True}}}


def main():
    if len(sys.argv) != 3 or not sys.argv[2].isdigit():
        sys.exit("usage: fleet_objects.py NAMESPACE N")
    json.dump({"apiVersion": "v1", "kind": "List", "items": list(objects(sys.argv[1], int(sys.argv[2])))},
              sys.stdout)


if __name__ == "__main__":
    main()
