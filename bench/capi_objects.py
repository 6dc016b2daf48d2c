"""bench/capi_objects.py NS N: print (as one JSON List) what bench/capi.sh applies for
N single-node Cluster API clusters sno-0 .. sno-N-1 in namespace NS, each shaped as
upstream CAPOA's examples/sno-example.yaml: a pull secret, a Cluster, a Metal3Cluster
(endpoint sno-i.lab.home:6443), an OpenshiftAssistedControlPlane (1 replica,
distributionVersion CAPI_VERSION, default 4.19.0), a Metal3MachineTemplate (an RHCOS
qcow2 image that is never downloaded) and a Metal3DataTemplate."""
import json
import os
import sys

SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample user@example.com"
PULL_SECRET = ("eyJhdXRocyI6eyJyZWdpc3RyeS5leGFtcGxlLmNvbSI6eyJhdXRoIjoiZFhObGNqcHdZWE56IiwiZW1h"
               "aWwiOiJhQGV4YW1wbGUuY29tIn19fQ==")
IMAGE = {"checksum": "https://rhcos.example.com/rhcos-4.19-x86_64-metal.x86_64.qcow2.sha256",
         "checksumType": "sha256", "format": "qcow2",
         "url": "https://rhcos.example.com/rhcos-4.19-x86_64-metal.x86_64.qcow2"}


def cluster(ns, name, version):
    ps = f"{name}-pull-secret"
    meta = lambda n: {"name": n, "namespace": ns}  # noqa: E731
    return [
        {"apiVersion": "v1", "kind": "Secret", "metadata": meta(ps), "type": "kubernetes.io/dockerconfigjson",
         "data": {".dockerconfigjson": PULL_SECRET}},
        {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": meta(name),
         "spec": {"clusterNetwork": {"pods": {"cidrBlocks": ["172.18.0.0/20"]},
                                     "services": {"cidrBlocks": ["10.96.0.0/12"]}},
                  "controlPlaneRef": {"apiGroup": "controlplane.cluster.x-k8s.io",
                                      "kind": "OpenshiftAssistedControlPlane", "name": name},
                  "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                        "kind": "Metal3Cluster", "name": name}}},
        {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "Metal3Cluster", "metadata": meta(name),
         "spec": {"controlPlaneEndpoint": {"host": f"{name}.lab.home", "port": 6443}, "noCloudProvider": True}},
        {"apiVersion": "controlplane.cluster.x-k8s.io/v1alpha3", "kind": "OpenshiftAssistedControlPlane",
         "metadata": meta(name),
         "spec": {"openshiftAssistedConfigSpec": {
                      "pullSecretRef": {"name": ps}, "sshAuthorizedKey": SSH_KEY,
                      "nodeRegistration": {"name": "$METADATA_NAME",
                                           "kubeletExtraLabels": ["metal3.io/uuid=$METADATA_UUID"]}},
                  "distributionVersion": version,
                  "config": {"baseDomain": "lab.home", "pullSecretRef": {"name": ps}, "sshAuthorizedKey": SSH_KEY},
                  "machineTemplate": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                                            "kind": "Metal3MachineTemplate",
                                                            "name": f"{name}-controlplane"}},
                  "replicas": 1}},
        {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "Metal3MachineTemplate",
         "metadata": meta(f"{name}-controlplane"),
         "spec": {"nodeReuse": False,
                  "template": {"spec": {"automatedCleaningMode": "disabled",
                                        "dataTemplate": {"name": f"{name}-controlplane-template"},
                                        "image": IMAGE}}}},
        {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "Metal3DataTemplate",
         "metadata": meta(f"{name}-controlplane-template"), "spec": {"clusterName": name}},
    ]


def main():
    if len(sys.argv) != 3 or not sys.argv[2].isdigit():
        sys.exit("usage: capi_objects.py NAMESPACE N")
    ns, n = sys.argv[1], int(sys.argv[2])
    version = os.environ.get("CAPI_VERSION", "4.19.0")
    items = []
    for i in range(n):
        items += cluster(ns, f"sno-{i}", version)
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)


if __name__ == "__main__":
    main()
