#!/usr/bin/env python3
"""Writes the config/crd/ files of the Cluster API kinds (CAPI core v1beta2, CAPM3
v1beta1, CAPOA bootstrap and control plane): this project's own schemas, with
the upstream field names and types (bmac-capi.md C, D), descriptions of our own.

Usage: scripts/gen-capi-crds.py [config/crd]   (edit here, run, commit both)
"""
import copy, sys, yaml
from pathlib import Path

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / 'config' / 'crd')

class NoAlias(yaml.SafeDumper):
    def ignore_aliases(self, data):
        return True

def _kw(d, kw):
    for k, v in kw.items():
        if k == 'xpuf':
            d['x-kubernetes-preserve-unknown-fields'] = True
        elif k == 'fmt':
            if v: d['format'] = v
            else: d.pop('format', None)
        else:
            d[k] = v
    return d

def S(desc, **kw): return _kw({'description': desc, 'type': 'string'}, kw)
def I(desc, fmt='int32', **kw): return _kw({'description': desc, 'type': 'integer'}, dict(kw, fmt=fmt))
def B(desc, **kw): return _kw({'description': desc, 'type': 'boolean'}, kw)
def T(desc, **kw): return S(desc, fmt='date-time', **kw)
def O(desc, props, required=None, **kw):
    d = {'description': desc, 'type': 'object', 'properties': props}
    if required: d['required'] = required
    return _kw(d, kw)
def A(desc, items, **kw): return _kw({'description': desc, 'type': 'array', 'items': items}, kw)
def SA(desc, **kw): return A(desc, {'type': 'string'}, **kw)
def SM(desc): return {'description': desc, 'type': 'object', 'additionalProperties': {'type': 'string'}}
def FREE(desc): return {'description': desc, 'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}
def item(d):  # an items schema: no description needed, keep one anyway off
    d = copy.deepcopy(d); d.pop('description', None); return d

DNS1123 = r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'
COND_TYPE = r'^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$'
REASON = r'^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$'

def contract_ref(desc):
    return O(desc, {
        'apiGroup': S('API group of the referenced object.', minLength=1, maxLength=253, pattern=DNS1123),
        'kind': S('Kind of the referenced object.', minLength=1, maxLength=63, pattern=r'^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$'),
        'name': S('Name of the referenced object, in the same namespace.', minLength=1, maxLength=253, pattern=DNS1123),
    }, required=['apiGroup', 'kind', 'name'])

def object_ref(desc):
    return O(desc, {
        'apiVersion': S('API version of the referent.'),
        'fieldPath': S('A piece of the referent, when the reference is to part of an object.'),
        'kind': S('Kind of the referent.'),
        'name': S('Name of the referent.'),
        'namespace': S('Namespace of the referent.'),
        'resourceVersion': S('Resource version of the referent the reference was made to.'),
        'uid': S('UID of the referent.'),
    }, **{'x-kubernetes-map-type': 'atomic'})

def secret_ref(desc):
    return O(desc, {'name': S('Name of the Secret.'), 'namespace': S('Namespace of the Secret.')},
             **{'x-kubernetes-map-type': 'atomic'})

def local_ref(desc):
    return O(desc, {'name': S('Name of the referenced object, in the same namespace.', default='')},
             **{'x-kubernetes-map-type': 'atomic'})

def conditions(desc='Observations of the current state, one per condition type (metav1.Condition).'):
    return A(desc, {'type': 'object', 'required': ['lastTransitionTime', 'message', 'reason', 'status', 'type'],
                    'properties': {
        'lastTransitionTime': T('When the condition last changed status.'),
        'message': S('Human-readable details of the transition.', maxLength=32768),
        'observedGeneration': I('The .metadata.generation the condition was set from.', fmt='int64', minimum=0),
        'reason': S('Programmatic identifier of the last transition, CamelCase.', minLength=1, maxLength=1024, pattern=REASON),
        'status': S('Status of the condition.', enum=['True', 'False', 'Unknown']),
        'type': S('Type of the condition, CamelCase or foo.example.com/CamelCase.', maxLength=316, pattern=COND_TYPE),
    }}, maxItems=32, **{'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type']})

def v1b1_conditions(desc='Conditions in the Cluster API v1beta1 form (with severity).'):
    return A(desc, {'type': 'object', 'required': ['lastTransitionTime', 'status', 'type'], 'properties': {
        'lastTransitionTime': T('When the condition last changed status.'),
        'message': S('Human-readable details of the transition.', minLength=1, maxLength=10240),
        'reason': S('Programmatic identifier of the last transition, CamelCase.', minLength=1, maxLength=256),
        'severity': S('How bad a False condition is: Error, Warning or Info.', maxLength=32),
        'status': S('Status of the condition: True, False or Unknown.'),
        'type': S('Type of the condition, CamelCase.', minLength=1, maxLength=256),
    }})

def label_selector(desc):
    return O(desc, {
        'matchExpressions': A('Label requirements, ANDed.', {'type': 'object', 'required': ['key', 'operator'], 'properties': {
            'key': S('Label key the requirement applies to.'),
            'operator': S('In, NotIn, Exists or DoesNotExist.'),
            'values': A('Values for In and NotIn; empty for Exists and DoesNotExist.', {'type': 'string'},
                        **{'x-kubernetes-list-type': 'atomic'}),
        }}, **{'x-kubernetes-list-type': 'atomic'}),
        'matchLabels': SM('Labels that must all be present with these values.'),
    }, **{'x-kubernetes-map-type': 'atomic'})

def obj_meta(desc='Labels and annotations given to the objects made from this template.'):
    return O(desc, {'annotations': SM('Annotations to set.'), 'labels': SM('Labels to set.')})

def readiness_gates(desc):
    return A(desc, {'type': 'object', 'required': ['conditionType'], 'properties': {
        'conditionType': S('Condition type that must be true.', minLength=1, maxLength=316, pattern=COND_TYPE),
        'polarity': S('Positive (True is good) or Negative (False is good).', enum=['Positive', 'Negative']),
    }}, maxItems=32, **{'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['conditionType']})

def replicas_counts(desc):
    return O(desc, {
        'desiredReplicas': I('Replicas wanted.'),
        'replicas': I('Replicas that exist.'),
        'readyReplicas': I('Replicas with Ready true.'),
        'availableReplicas': I('Replicas with Available true.'),
        'upToDateReplicas': I('Replicas with UpToDate true.'),
        'versions': A('Kubernetes versions run by the replicas.', {'type': 'object', 'required': ['version'], 'properties': {
            'version': S('A Kubernetes version.', minLength=1, maxLength=256),
            'replicas': I('How many replicas run it.')}}, maxItems=32),
        'upgradePlan': A('Versions an upgrade goes through.', {'type': 'object', 'required': ['version'], 'properties': {
            'version': S('A Kubernetes version.', minLength=1, maxLength=256)}}, maxItems=32),
    })

# ---------------------------------------------------------------- CAPI core
def machine_spec(desc='Desired state of a Machine.'):
    return O(desc, {
        'clusterName': S('Name of the Cluster this Machine belongs to.', minLength=1, maxLength=63),
        'bootstrap': O('How the Machine gets its bootstrap data: a config reference or a data Secret name.', {
            'configRef': contract_ref('The bootstrap provider object (e.g. an OpenshiftAssistedConfig) that makes the data Secret.'),
            'dataSecretName': S('Name of the Secret holding the bootstrap data, set by the bootstrap provider or by hand.', minLength=0, maxLength=253),
        }),
        'infrastructureRef': contract_ref('The infrastructure provider object (e.g. a Metal3Machine) backing this Machine.'),
        'version': S('Kubernetes version of the node.', minLength=1, maxLength=256),
        'providerID': S('ID of the machine as the provider knows it; matches the Node spec.providerID.', minLength=1, maxLength=512),
        'failureDomain': S('Failure domain the Machine is placed in.', minLength=1, maxLength=256),
        'minReadySeconds': I('Seconds the Node must be ready before the Machine is available.', minimum=0),
        'readinessGates': readiness_gates('More conditions the Machine Ready condition takes into account.'),
        'taints': A('Taints the Node gets.', {'type': 'object', 'required': ['effect', 'key', 'propagation'], 'properties': {
            'key': S('Taint key.', minLength=1, maxLength=317),
            'value': S('Taint value.', minLength=1, maxLength=63),
            'effect': S('Taint effect.', enum=['NoSchedule', 'PreferNoSchedule', 'NoExecute']),
            'propagation': S('When the taint is applied.', enum=['Always', 'OnInitialization']),
        }}, maxItems=64),
        'deletion': O('How the Machine is deleted.', {
            'nodeDrainTimeoutSeconds': I('Longest time draining the node may take; 0 waits forever.', minimum=0),
            'nodeVolumeDetachTimeoutSeconds': I('Longest wait for volumes to detach; 0 waits forever.', minimum=0),
            'nodeDeletionTimeoutSeconds': I('How long to retry deleting the Node; 0 retries forever.', minimum=0),
        }),
    }, required=['bootstrap', 'clusterName', 'infrastructureRef'])

def deprecated_v1b1(desc, extra=None):
    props = {'conditions': v1b1_conditions('Conditions in the v1beta1 form.'),
             'failureReason': S('Terminal problem, for machines to read (v1beta1).'),
             'failureMessage': S('Terminal problem, for people to read (v1beta1).', minLength=1, maxLength=10240)}
    props.update(extra or {})
    return O(desc, {'v1beta1': O('Fields of the v1beta1 API kept during the transition.', props)})

def machine_template(desc='Template of the Machines created.'):
    return O(desc, {'metadata': obj_meta('Labels and annotations of the Machines.'),
                    'spec': machine_spec('Spec of the Machines.')}, required=['spec'])

CLUSTER = O('Cluster is a Kubernetes cluster managed through Cluster API.', {
    'spec': O('Desired state of the Cluster.', {
        'paused': B('Pause reconciliation of the Cluster and its objects.'),
        'clusterNetwork': O('Network of the cluster.', {
            'apiServerPort': I('Port the API server listens on.', minimum=1, maximum=65535),
            'services': O('Service network.', {'cidrBlocks': SA('CIDR blocks.', maxItems=100)}, required=['cidrBlocks']),
            'pods': O('Pod network.', {'cidrBlocks': SA('CIDR blocks.', maxItems=100)}, required=['cidrBlocks']),
            'serviceDomain': S('Domain name of services.', minLength=1, maxLength=253),
        }),
        'controlPlaneEndpoint': O('Where the control plane is reached.', {
            'host': S('Host name or IP address.', maxLength=512),
            'port': I('Port.', minimum=1, maximum=65535)}),
        'controlPlaneRef': contract_ref('The control-plane provider object (e.g. an OpenshiftAssistedControlPlane).'),
        'infrastructureRef': contract_ref('The infrastructure provider object (e.g. a Metal3Cluster).'),
        'topology': FREE('Managed topology through a ClusterClass (not used by agenthub; kept as given).'),
        'availabilityGates': readiness_gates('More conditions the Cluster Available condition takes into account.'),
    }),
    'status': O('Observed state of the Cluster.', {
        'conditions': conditions(),
        'initialization': O('Provisioning milestones.', {
            'infrastructureProvisioned': B('The infrastructure provider says the infrastructure is ready.'),
            'controlPlaneInitialized': B('The control plane can accept requests.')}),
        'controlPlane': replicas_counts('Replica counts of the control plane.'),
        'workers': replicas_counts('Replica counts of the workers.'),
        'failureDomains': A('Failure domains the infrastructure offers.', {'type': 'object', 'required': ['name'], 'properties': {
            'name': S('Name of the failure domain.', minLength=1, maxLength=256),
            'controlPlane': B('Fit for control-plane machines.'),
            'attributes': SM('Free-form attributes.')}}, maxItems=100),
        'phase': S('Phase of the Cluster.', enum=['Pending', 'Provisioning', 'Provisioned', 'Deleting', 'Failed', 'Unknown']),
        'observedGeneration': I('Latest generation observed by the controller.', fmt='int64', minimum=1),
        'deprecated': deprecated_v1b1('Deprecated fields.'),
    }),
})

MACHINE = O('Machine is one node of a Cluster API cluster.', {
    'spec': machine_spec(),
    'status': O('Observed state of the Machine.', {
        'conditions': conditions(),
        'initialization': O('Provisioning milestones.', {
            'bootstrapDataSecretCreated': B('The bootstrap data Secret exists.'),
            'infrastructureProvisioned': B('The infrastructure machine is provisioned.')}),
        'nodeRef': O('The Node of this Machine.', {'name': S('Name of the Node.', minLength=1, maxLength=253)}, required=['name']),
        'nodeInfo': FREE('System information the Node reports.'),
        'lastUpdated': T('When the phase last changed.'),
        'failureDomain': S('Failure domain the Machine runs in.', minLength=1, maxLength=256),
        'addresses': A('Addresses of the machine.', {'type': 'object', 'required': ['address', 'type'], 'properties': {
            'type': S('Address type.', enum=['Hostname', 'ExternalIP', 'InternalIP', 'ExternalDNS', 'InternalDNS']),
            'address': S('The address.', minLength=1, maxLength=256)}}, maxItems=256),
        'phase': S('Phase of the Machine.', enum=['Pending', 'Provisioning', 'Provisioned', 'Running', 'Updating',
                                                   'Deleting', 'Deleted', 'Failed', 'Unknown']),
        'certificatesExpiryDate': T('When the machine certificates expire.'),
        'observedGeneration': I('Latest generation observed by the controller.', fmt='int64', minimum=1),
        'deletion': O('Progress of the deletion.', {
            'nodeDrainStartTime': T('When draining the node started.'),
            'waitForNodeVolumeDetachStartTime': T('When waiting for volume detach started.'),
            'waitForPreDrainHookStartTime': T('When waiting for pre-drain hooks started.'),
            'waitForPreTerminateHookStartTime': T('When waiting for pre-terminate hooks started.')}),
        'deprecated': deprecated_v1b1('Deprecated fields.'),
    }),
})

def set_status(desc, phase):
    props = {
        'conditions': conditions(),
        'selector': S('Label selector of the Machines, in string form (for the scale subresource).', minLength=1, maxLength=4096),
        'replicas': I('Machines that exist.'),
        'readyReplicas': I('Machines with Ready true.'),
        'availableReplicas': I('Machines with Available true.'),
        'upToDateReplicas': I('Machines with UpToDate true.'),
        'versions': A('Kubernetes versions of the Machines.', {'type': 'object', 'required': ['version'], 'properties': {
            'version': S('A Kubernetes version.', minLength=1, maxLength=256),
            'replicas': I('How many Machines run it.', minimum=1)}}, maxItems=100),
        'observedGeneration': I('Latest generation observed by the controller.', fmt='int64', minimum=1),
    }
    if phase:
        props['phase'] = S('Phase of the MachineDeployment.', enum=['ScalingUp', 'ScalingDown', 'Running', 'Failed', 'Unknown'])
        props['deprecated'] = deprecated_v1b1('Deprecated fields.', {
            'readyReplicas': I('Ready replicas (v1beta1).'), 'availableReplicas': I('Available replicas (v1beta1).'),
            'updatedReplicas': I('Updated replicas (v1beta1).'), 'unavailableReplicas': I('Unavailable replicas (v1beta1).')})
    else:
        props['deprecated'] = deprecated_v1b1('Deprecated fields.', {
            'readyReplicas': I('Ready replicas (v1beta1).'), 'availableReplicas': I('Available replicas (v1beta1).'),
            'fullyLabeledReplicas': I('Replicas with the template labels (v1beta1).')})
    return O(desc, props)

def set_spec(desc, md):
    props = {
        'clusterName': S('Name of the Cluster the Machines belong to.', minLength=1, maxLength=63),
        'replicas': I('Number of Machines wanted.'),
        'selector': label_selector('Labels of the Machines this object owns; must match the template labels.'),
        'template': machine_template(),
        'machineNaming': O('How Machines are named.', {'template': S('Name template ({{ .machineSet.name }}, {{ .random }}).', minLength=1, maxLength=256)}),
        'deletion': O('Which Machines go first when scaling down.', {
            'order': S('Deletion order.', enum=['Random', 'Newest', 'Oldest'])}),
    }
    if md:
        props['paused'] = B('Pause rollouts.')
        props['rollout'] = O('How changes roll out.', {
            'after': T('Roll out all Machines created before this time.'),
            'strategy': O('Rollout strategy.', {
                'type': S('Strategy type.', enum=['RollingUpdate', 'OnDelete']),
                'rollingUpdate': O('Rolling update parameters.', {
                    'maxSurge': {'description': 'Machines that may be created above the wanted count.', 'x-kubernetes-int-or-string': True},
                    'maxUnavailable': {'description': 'Machines that may be unavailable during the update.', 'x-kubernetes-int-or-string': True},
                })}, required=['type'])})
        props['remediation'] = O('Remediation of unhealthy Machines.', {
            'maxInFlight': {'description': 'Machines remediated at once.', 'x-kubernetes-int-or-string': True}})
    return O(desc, props, required=['clusterName', 'selector', 'template'])

MACHINESET = O('MachineSet keeps a number of Machines from one template.', {
    'spec': set_spec('Desired state of the MachineSet.', False),
    'status': set_status('Observed state of the MachineSet.', False)})
MACHINEDEPLOYMENT = O('MachineDeployment rolls out Machines through MachineSets.', {
    'spec': set_spec('Desired state of the MachineDeployment.', True),
    'status': set_status('Observed state of the MachineDeployment.', True)})

# ---------------------------------------------------------------- CAPM3 v1beta1
def capm3_v1b2_status(desc='Conditions in the Cluster API v1beta2 form.'):
    return O(desc, {'conditions': conditions()})

def m3m_spec(desc):
    return O(desc, {
        'providerID': S('Provider ID of the machine: metal3://<namespace>/<bmh>/<metal3machine>.'),
        'image': O('Image written to the host disk.', {
            'url': S('Where the image is downloaded from.'),
            'checksum': S('Checksum of the image, or a URL to it.'),
            'checksumType': S('Checksum algorithm.', enum=['md5', 'sha256', 'sha512']),
            'format': S('Format of the image.', enum=['raw', 'qcow2', 'vdi', 'vmdk', 'live-iso'])}, required=['url']),
        'userData': secret_ref('Secret with the user data given to the host.'),
        'metaData': secret_ref('Secret with the metadata given to the host.'),
        'networkData': secret_ref('Secret with the network data given to the host.'),
        'dataTemplate': object_ref('Metal3DataTemplate that renders metaData and networkData.'),
        'hostSelector': O('Which BareMetalHosts may be chosen.', {
            'matchLabels': SM('Labels the host must have.'),
            'matchExpressions': A('Label requirements the host must meet.', {'type': 'object', 'required': ['key', 'operator', 'values'], 'properties': {
                'key': S('Label key.'), 'operator': S('Selection operator.'),
                'values': SA('Values.')}})}),
        'automatedCleaningMode': S('Disk cleaning before provisioning and after deprovisioning.', enum=['metadata', 'disabled']),
        'customDeploy': O('Custom deploy procedure run instead of writing an image.', {
            'method': S('Name of the custom deploy method.')}, required=['method']),
        'failureDomain': S('Failure domain of the machine.'),
    })

M3M = O('Metal3Machine is the infrastructure machine of a Cluster API Machine on a BareMetalHost.', {
    'spec': m3m_spec('Desired state of the Metal3Machine.'),
    'status': O('Observed state of the Metal3Machine.', {
        'ready': B('The host is provisioned (Cluster API v1beta1 contract).'),
        'initialization': O('Provisioning milestones (Cluster API v1beta2 contract).', {
            'provisioned': B('The host is provisioned.')}),
        'addresses': A('Addresses of the host.', {'type': 'object', 'required': ['address', 'type'], 'properties': {
            'type': S('Address type.', enum=['Hostname', 'ExternalIP', 'InternalIP', 'ExternalDNS', 'InternalDNS']),
            'address': S('The address.', minLength=1, maxLength=256)}}),
        'conditions': v1b1_conditions(),
        'failureReason': S('Terminal problem, for machines to read.'),
        'failureMessage': S('Terminal problem, for people to read.'),
        'lastUpdated': T('When the status last changed.'),
        'phase': S('Phase of the Metal3Machine.'),
        'userData': secret_ref('Secret with the user data given to the host.'),
        'metaData': secret_ref('Secret with the rendered metadata.'),
        'networkData': secret_ref('Secret with the rendered network data.'),
        'renderedData': object_ref('Metal3Data rendered for this machine.'),
        'v1beta2': capm3_v1b2_status(),
    }),
})

M3MT = O('Metal3MachineTemplate is the template MachineDeployments and control planes clone Metal3Machines from.', {
    'spec': O('Desired state of the template.', {
        'nodeReuse': B('Reuse the same BareMetalHosts when the machines are replaced.', default=False),
        'template': O('The Metal3Machine template.', {
            'metadata': obj_meta('Labels and annotations of the Metal3Machines.'),
            'spec': m3m_spec('Spec of the Metal3Machines.')}, required=['spec']),
    }, required=['template']),
})

FAILURE_DOMAINS = lambda d: {'description': d, 'type': 'object', 'additionalProperties': {'type': 'object', 'properties': {
    'controlPlane': B('Fit for control-plane machines.'), 'attributes': SM('Free-form attributes.')}}}

M3C = O('Metal3Cluster is the infrastructure cluster of a Cluster API Cluster on bare metal.', {
    'spec': O('Desired state of the Metal3Cluster.', {
        'controlPlaneEndpoint': O('Where the control plane is reached.', {
            'host': S('Host name or IP address.'), 'port': I('Port.', fmt=None)}, required=['host', 'port']),
        'noCloudProvider': B('Deprecated: the cluster has no cloud provider (use cloudProviderEnabled).'),
        'cloudProviderEnabled': B('The cluster runs a cloud provider.'),
        'failureDomains': FAILURE_DOMAINS('Failure domains machines can be placed in.'),
    }),
    'status': O('Observed state of the Metal3Cluster.', {
        'ready': B('The cluster infrastructure is ready (Cluster API v1beta1 contract).'),
        'initialization': O('Provisioning milestones (Cluster API v1beta2 contract).', {
            'provisioned': B('The cluster infrastructure is provisioned.')}),
        'conditions': v1b1_conditions(),
        'failureDomains': FAILURE_DOMAINS('Failure domains found.'),
        'failureReason': S('Terminal problem, for machines to read.'),
        'failureMessage': S('Terminal problem, for people to read.'),
        'lastUpdated': T('When the status last changed.'),
        'v1beta2': capm3_v1b2_status(),
    }),
})

M3DT = O('Metal3DataTemplate renders the metadata and network data of Metal3Machines.', {
    'spec': O('Desired state of the Metal3DataTemplate.', {
        'clusterName': S('Name of the Cluster.', minLength=1),
        'templateReference': S('Reference to another template, to keep indexes across templates.'),
        'metaData': FREE('Metadata to render: strings, indexes, object names, namespaces, labels, annotations, host interfaces, IP pool values.'),
        'networkData': FREE('Network data to render: links, networks and services (OpenStack network_data.json form).'),
    }, required=['clusterName']),
    'status': O('Observed state of the Metal3DataTemplate.', {
        'indexes': {'description': 'Index given to each claim.', 'type': 'object', 'additionalProperties': {'type': 'integer'}},
        'lastUpdated': T('When the status last changed.'),
    }),
})

M3D = O('Metal3Data is the rendered data of one Metal3Machine.', {
    'spec': O('Desired state of the Metal3Data.', {
        'index': I('Index of this data in its template.', fmt=None),
        'templateReference': S('Reference to another template, to keep indexes across templates.'),
        'metaData': secret_ref('Secret with the rendered metadata.'),
        'networkData': secret_ref('Secret with the rendered network data.'),
        'claim': object_ref('The Metal3DataClaim this data answers.'),
        'template': object_ref('The Metal3DataTemplate rendered.'),
    }, required=['claim', 'template']),
    'status': O('Observed state of the Metal3Data.', {
        'ready': B('The data is rendered.'),
        'errorMessage': S('Why rendering failed.'),
    }),
})

M3DC = O('Metal3DataClaim asks a Metal3DataTemplate for a Metal3Data.', {
    'spec': O('Desired state of the Metal3DataClaim.', {
        'template': object_ref('The Metal3DataTemplate to render from.')}, required=['template']),
    'status': O('Observed state of the Metal3DataClaim.', {
        'renderedData': object_ref('The Metal3Data rendered for the claim.'),
        'errorMessage': S('Why rendering failed.'),
    }),
})

# ---------------------------------------------------------------- CAPOA
PATH_PATTERN = '^/[a-zA-Z0-9_./-]+$'
DURATION = r'^[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))+)$'

def oac_spec(desc, v2):
    p = {
        'proxy': O('Proxy settings of the InfraEnv.', {
            'httpProxy': S('Proxy for HTTP requests.'), 'httpsProxy': S('Proxy for HTTPS requests.'),
            'noProxy': S('Comma-separated destinations that bypass the proxy.')}),
        'pullSecretRef': local_ref('Secret with the pull secret (key .dockerconfigjson); unset: a placeholder.'),
        'additionalNTPSources': SA('More NTP sources for the hosts.'),
        'sshAuthorizedKey': S('SSH public key for the discovery image and the node.'),
        'nmStateConfigLabelSelector': label_selector('Labels of the NMStateConfigs the InfraEnv uses.'),
        'cpuArchitecture': S('CPU architecture of the image and the release.', default='x86_64'),
        'kernelArguments': A('Kernel arguments given to the installer.', {'type': 'object', 'properties': {
            'operation': S('What to do with the argument.', enum=['append', 'replace', 'delete']),
            'value': S('The kernel argument.', pattern=r'^(?:(?:[^ \t\n\r"]+)|(?:"[^"]*"))+$')}}),
        'additionalTrustBundle': S('PEM certificates trusted by the hosts.'),
        'osImageVersion': S('OS image version of the discovery image.'),
        'nodeRegistration': O('How the node registers.', {
            'name': S('Node name (may be an environment variable such as $METADATA_NAME).'),
            'kubeletExtraLabels': SA('Extra node labels, key=value (the value may be $VAR or ${VAR}).')}),
    }
    if v2:
        p['nodeRegistration']['properties']['providerID'] = S('Provider ID given to the node.')
        p['preBootstrapCommands'] = SA('Commands run on the installed node before bootstrap.')
        p['postBootstrapCommands'] = SA('Commands run on the installed node after bootstrap.')
        p['bootstrapCommandSentinelDir'] = S('Directory of the sentinel file of the bootstrap commands (default /var/lib/capoa).', pattern=PATH_PATTERN)
        p['postBootstrapKubeconfigPath'] = S('Kubeconfig the post-bootstrap commands use (default /var/lib/kubelet/kubeconfig).', pattern=PATH_PATTERN)
    return O(desc, p)

OAC_V1 = O('OpenshiftAssistedConfig is the bootstrap configuration of one Machine installed by the Assisted Installer.', {
    'spec': oac_spec('Desired state of the OpenshiftAssistedConfig.', False),
    'status': O('Observed state of the OpenshiftAssistedConfig.', {
        'ready': B('The bootstrap data Secret is created.'),
        'dataSecretName': S('Name of the bootstrap data Secret.'),
        'infraEnvRef': object_ref('The InfraEnv of this config.'),
        'agentRef': local_ref('The Agent of this machine.'),
        'failureReason': S('Terminal problem, for machines to read.'),
        'failureMessage': S('Terminal problem, for people to read.'),
        'observedGeneration': I('Latest generation observed by the controller.', fmt='int64'),
        'conditions': v1b1_conditions(),
    }),
})
OAC_V2 = O('OpenshiftAssistedConfig is the bootstrap configuration of one Machine installed by the Assisted Installer.', {
    'spec': oac_spec('Desired state of the OpenshiftAssistedConfig.', True),
    'status': O('Observed state of the OpenshiftAssistedConfig.', {
        'conditions': conditions(),
        'initialization': O('Provisioning milestones.', {
            'dataSecretCreated': B('The bootstrap data Secret is created.')}),
        'dataSecretName': S('Name of the bootstrap data Secret.', minLength=1, maxLength=253),
        'observedGeneration': I('Latest generation observed by the controller.', fmt='int64', minimum=1),
        'v1beta1Conditions': v1b1_conditions('Conditions in the Cluster API v1beta1 form (Ready, DataSecretAvailable).'),
    }),
})

def oact(v2):
    return O('OpenshiftAssistedConfigTemplate is the template OpenshiftAssistedConfigs are cloned from.', {
        'spec': O('Desired state of the template.', {
            'template': O('The OpenshiftAssistedConfig template.', {
                'metadata': obj_meta('Labels and annotations of the configs.'),
                'spec': oac_spec('Spec of the configs.', v2)}, required=['spec'])}, required=['template']),
        'status': O('Observed state of the template (empty).', {}),
    })

def oacp_config():
    return O('Cluster-wide settings of the installation.', {
        'apiVIPs': SA('Virtual IPs of the API (at most 2).', maxItems=2),
        'ingressVIPs': SA('Virtual IPs of the ingress (at most 2).', maxItems=2),
        'manifestsConfigMapRefs': A('ConfigMaps with extra manifests.', {'type': 'object', 'required': ['name'], 'properties': {
            'name': S('Name of the ConfigMap.')}}),
        'diskEncryption': O('Disk encryption of the nodes.', {
            'enableOn': S('Which nodes get encrypted disks.', enum=['none', 'all', 'masters', 'arbiters', 'workers',
                         'masters,arbiters', 'masters,workers', 'arbiters,workers', 'masters,arbiters,workers']),
            'mode': S('Encryption mode.', enum=['tpmv2', 'tang']),
            'tangServers': S('Tang servers, JSON.')}),
        'proxy': O('Proxy settings of the cluster.', {
            'httpProxy': S('Proxy for HTTP requests.'), 'httpsProxy': S('Proxy for HTTPS requests.'),
            'noProxy': S('Comma-separated destinations that bypass the proxy.')}),
        'mastersSchedulable': B('Workloads may run on control-plane nodes.'),
        'sshAuthorizedKey': S('SSH public key of the cluster nodes.'),
        'clusterName': S('Name of the OpenShift cluster (default: the Cluster name).'),
        'baseDomain': S('Base DNS domain of the cluster.'),
        'pullSecretRef': local_ref('Secret with the pull secret (key .dockerconfigjson).'),
        'imageRegistryRef': local_ref('ConfigMap with the image registry configuration.'),
        'capabilities': O('Cluster capabilities.', {
            'baselineCapability': S('Baseline capability set.'),
            'additionalEnabledCapabilities': SA('More capabilities to enable.')}),
    }, required=['baseDomain'])

def oacp(v3):
    if v3:
        mt = O('Template of the control-plane Machines.', {
            'metadata': obj_meta('Labels and annotations of the Machines.'),
            'infrastructureRef': contract_ref('Infrastructure machine template (e.g. a Metal3MachineTemplate).'),
            'deletion': O('How control-plane Machines are deleted.', {
                'nodeDrainTimeoutSeconds': I('Longest time draining the node may take.', minimum=0),
                'nodeVolumeDetachTimeoutSeconds': I('Longest wait for volumes to detach.', minimum=0),
                'nodeDeletionTimeoutSeconds': I('How long to retry deleting the Node.', minimum=0),
            }, default={'nodeDeletionTimeoutSeconds': 10}),
        }, required=['infrastructureRef'])
    else:
        mt = O('Template of the control-plane Machines.', {
            'metadata': obj_meta('Labels and annotations of the Machines.'),
            'infrastructureRef': object_ref('Infrastructure machine template (e.g. a Metal3MachineTemplate).'),
            'nodeDrainTimeout': S('Longest time draining the node may take (a Go duration such as 1m30s).', pattern=DURATION),
            'nodeVolumeDetachTimeout': S('Longest wait for volumes to detach (a Go duration).', pattern=DURATION),
            'nodeDeletionTimeout': S('How long to retry deleting the Node (a Go duration).', pattern=DURATION),
        }, required=['infrastructureRef'])
    spec = O('Desired state of the OpenshiftAssistedControlPlane.', {
        'distributionVersion': S('OpenShift (or OKD) version to install.'),
        'replicas': I('Number of control-plane Machines.'),
        'machineTemplate': mt,
        'openshiftAssistedConfigSpec': oac_spec('Bootstrap configuration of the control-plane Machines.', v3),
        'config': oacp_config(),
    }, required=['distributionVersion', 'machineTemplate'])
    if v3:
        status = O('Observed state of the OpenshiftAssistedControlPlane.', {
            'conditions': conditions(),
            'initialization': O('Provisioning milestones.', {
                'controlPlaneInitialized': B('The control plane can accept requests.')}),
            'selector': S('Label selector of the control-plane Machines, in string form.', minLength=1, maxLength=4096),
            'replicas': I('Control-plane Machines that exist.'),
            'readyReplicas': I('Control-plane Machines with Ready true.'),
            'availableReplicas': I('Control-plane Machines with Available true.'),
            'upToDateReplicas': I('Control-plane Machines with UpToDate true.'),
            'version': S('Kubernetes version of the control plane.', minLength=1, maxLength=256),
            'distributionVersion': S('OpenShift version installed.'),
            'observedGeneration': I('Latest generation observed by the controller.', fmt='int64', minimum=1),
        })
    else:
        status = O('Observed state of the OpenshiftAssistedControlPlane.', {
            'conditions': v1b1_conditions(),
            'clusterDeploymentRef': object_ref('The ClusterDeployment of the cluster.'),
            'selector': S('Label selector of the control-plane Machines, in string form.'),
            'replicas': I('Control-plane Machines that exist.'),
            'readyReplicas': I('Control-plane Machines that are ready.'),
            'updatedReplicas': I('Control-plane Machines with the wanted spec.'),
            'unavailableReplicas': I('Control-plane Machines that are not available.'),
            'version': S('Kubernetes version of the control plane.'),
            'distributionVersion': S('OpenShift version installed.'),
            'initialized': B('The control plane can accept requests.'),
            'ready': B('The control plane is available.'),
            'failureReason': S('Terminal problem, for machines to read.'),
            'failureMessage': S('Terminal problem, for people to read.'),
        })
    return O('OpenshiftAssistedControlPlane is the control plane of an OpenShift cluster installed by the Assisted Installer.',
             {'spec': spec, 'status': status})

# ---------------------------------------------------------------- output
META = {'apiVersion': {'description': 'Versioned schema of this object (group/version).', 'type': 'string'},
        'kind': {'description': 'REST kind of this object, in CamelCase.', 'type': 'string'},
        'metadata': {'type': 'object'}}

def root(schema):
    s = copy.deepcopy(schema)
    props = dict(META)
    props.update(s['properties'])
    s['properties'] = props
    for k in ('spec', 'status'):
        if k in props and k == 'status' and not props[k]['properties']:
            pass
    return s

def col(name, path, typ='string', desc=None, prio=0):
    c = {'name': name, 'type': typ, 'jsonPath': path}
    if desc: c['description'] = desc
    if prio: c['priority'] = prio
    return c
AGE = col('Age', '.metadata.creationTimestamp', 'date', 'Time since creation')
CLUSTER_LABEL = col('Cluster', ".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']", desc='Cluster this object belongs to')

def crd(group, kind, plural, versions, labels, comment, short=None, scale=False, categories=None):
    names = {'kind': kind, 'listKind': kind + 'List', 'plural': plural}
    if short: names['shortNames'] = short
    names['singular'] = kind.lower()
    if categories: names['categories'] = categories
    vs = []
    for name, storage, schema, cols in versions:
        v = {'name': name, 'served': True, 'storage': storage}
        if cols: v['additionalPrinterColumns'] = cols
        v['schema'] = {'openAPIV3Schema': root(schema)}
        sub = {}
        if 'status' in schema['properties']:
            sub['status'] = {}
        if scale:
            sub['scale'] = {'specReplicasPath': '.spec.replicas', 'statusReplicasPath': '.status.replicas',
                            'labelSelectorPath': '.status.selector'}
        if sub: v['subresources'] = sub
        vs.append(v)
    doc = {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
           'metadata': {'name': f'{plural}.{group}', 'labels': labels},
           'spec': {'group': group, 'names': names, 'scope': 'Namespaced', 'versions': vs}}
    text = ('# CustomResourceDefinition for agenthub, written for this project.\n'
            f'# {kind} ({group}): {comment}\n'
            '# Generated by scripts/gen-capi-crds.py (edit there); loaded (embedded) by src/kube/registry.c;\n'
            '# installable on a Kubernetes cluster as is.\n---\n')
    text += yaml.dump(doc, Dumper=NoAlias, sort_keys=False, default_flow_style=False, width=120, allow_unicode=True)
    (OUT / f'{group}_{plural}.yaml').write_text(text)

CORE = 'cluster.x-k8s.io'
INFRA = 'infrastructure.cluster.x-k8s.io'
CORE_LABELS = {'cluster.x-k8s.io/provider': 'cluster-api'}
M3_LABELS = {'cluster.x-k8s.io/provider': 'infrastructure-metal3', 'cluster.x-k8s.io/v1beta1': 'v1beta1', 'cluster.x-k8s.io/v1beta2': 'v1beta1'}
OAC_LABELS = {'cluster.x-k8s.io/v1beta1': 'v1alpha1', 'cluster.x-k8s.io/v1beta2': 'v1alpha2'}
OACP_LABELS = {'cluster.x-k8s.io/v1beta1': 'v1alpha2', 'cluster.x-k8s.io/v1beta2': 'v1alpha3'}

def cond(t): return f".status.conditions[?(@.type=='{t}')].status"

crd(CORE, 'Cluster', 'clusters', [('v1beta2', True, CLUSTER, [
    col('ClusterClass', '.spec.topology.classRef.name', desc='Name of the ClusterClass'),
    col('Available', cond('Available'), desc='Cluster pass all availability checks'),
    col('CP Desired', '.status.controlPlane.desiredReplicas', 'integer', 'Control-plane replicas wanted'),
    col('CP Current', '.status.controlPlane.replicas', 'integer', 'Control-plane replicas that exist', 10),
    col('CP Ready', '.status.controlPlane.readyReplicas', 'integer', 'Control-plane replicas ready', 10),
    col('CP Available', '.status.controlPlane.availableReplicas', 'integer', 'Control-plane replicas available'),
    col('CP Up-to-date', '.status.controlPlane.upToDateReplicas', 'integer', 'Control-plane replicas up to date'),
    col('W Desired', '.status.workers.desiredReplicas', 'integer', 'Worker replicas wanted'),
    col('W Current', '.status.workers.replicas', 'integer', 'Worker replicas that exist', 10),
    col('W Ready', '.status.workers.readyReplicas', 'integer', 'Worker replicas ready', 10),
    col('W Available', '.status.workers.availableReplicas', 'integer', 'Worker replicas available'),
    col('W Up-to-date', '.status.workers.upToDateReplicas', 'integer', 'Worker replicas up to date'),
    col('Paused', cond('Paused'), desc='Reconciliation paused', prio=10),
    col('Phase', '.status.phase', desc='Cluster phase'),
    AGE])], CORE_LABELS, 'a cluster managed through Cluster API.', short=['cl'], categories=['cluster-api'])

crd(CORE, 'Machine', 'machines', [('v1beta2', True, MACHINE, [
    col('Cluster', '.spec.clusterName', desc='Cluster'),
    col('Node Name', '.status.nodeRef.name', desc='Node of the Machine'),
    col('Provider ID', '.spec.providerID', desc='Provider ID', prio=10),
    col('Failure domain', '.status.failureDomain', desc='Failure domain'),
    col('Ready', cond('Ready'), desc='Machine is ready'),
    col('Available', cond('Available'), desc='Machine is available'),
    col('Up-to-date', cond('UpToDate'), desc='Machine is up to date'),
    col('Internal-IP', ".status.addresses[?(@.type=='InternalIP')].address", desc='Internal IP', prio=10),
    col('External-IP', ".status.addresses[?(@.type=='ExternalIP')].address", desc='External IP', prio=10),
    col('OS-Image', '.status.nodeInfo.osImage', desc='OS image of the node', prio=10),
    col('Paused', cond('Paused'), desc='Reconciliation paused', prio=10),
    col('Phase', '.status.phase', desc='Machine phase'),
    AGE,
    col('Version', '.spec.version', desc='Kubernetes version')])], CORE_LABELS, 'one node of a Cluster API cluster.',
    short=['ma'], categories=['cluster-api'])

crd(CORE, 'MachineSet', 'machinesets', [('v1beta2', True, MACHINESET, [
    col('Cluster', '.spec.clusterName', desc='Cluster'),
    col('Desired', '.spec.replicas', 'integer', 'Machines wanted'),
    col('Current', '.status.replicas', 'integer', 'Machines that exist'),
    col('Ready', '.status.readyReplicas', 'integer', 'Machines ready'),
    col('Available', '.status.availableReplicas', 'integer', 'Machines available'),
    col('Up-to-date', '.status.upToDateReplicas', 'integer', 'Machines up to date'),
    col('Paused', cond('Paused'), desc='Reconciliation paused', prio=10),
    AGE,
    col('Version', '.spec.template.spec.version', desc='Kubernetes version')])], CORE_LABELS,
    'a number of Machines from one template.', short=['ms'], scale=True, categories=['cluster-api'])

crd(CORE, 'MachineDeployment', 'machinedeployments', [('v1beta2', True, MACHINEDEPLOYMENT, [
    col('Cluster', '.spec.clusterName', desc='Cluster'),
    col('Available', cond('Available'), desc='MachineDeployment is available'),
    col('Desired', '.spec.replicas', 'integer', 'Machines wanted'),
    col('Current', '.status.replicas', 'integer', 'Machines that exist'),
    col('Ready', '.status.readyReplicas', 'integer', 'Machines ready'),
    col('Available Replicas', '.status.availableReplicas', 'integer', 'Machines available'),
    col('Up-to-date', '.status.upToDateReplicas', 'integer', 'Machines up to date'),
    col('Paused', cond('Paused'), desc='Reconciliation paused', prio=10),
    col('Phase', '.status.phase', desc='MachineDeployment phase'),
    AGE,
    col('Version', '.spec.template.spec.version', desc='Kubernetes version')])], CORE_LABELS,
    'Machines rolled out through MachineSets.', short=['md'], scale=True, categories=['cluster-api'])

crd(INFRA, 'Metal3Cluster', 'metal3clusters', [('v1beta1', True, M3C, [
    AGE, col('Ready', '.status.ready', desc='Infrastructure ready'),
    col('Error', '.status.failureReason', desc='Error'),
    CLUSTER_LABEL,
    col('Endpoint', '.spec.controlPlaneEndpoint', desc='Control-plane endpoint')])], M3_LABELS,
    'the bare-metal infrastructure of a Cluster API Cluster.', short=['m3c', 'm3cluster', 'm3clusters', 'metal3c', 'metal3cluster'],
    categories=['cluster-api'])
crd(INFRA, 'Metal3Machine', 'metal3machines', [('v1beta1', True, M3M, [
    AGE, col('ProviderID', '.spec.providerID', desc='Provider ID'),
    col('Ready', '.status.ready', desc='Host provisioned'),
    CLUSTER_LABEL,
    col('Phase', '.status.phase', desc='Phase')])], M3_LABELS,
    'the BareMetalHost backing a Cluster API Machine.', short=['m3m', 'm3machine', 'm3machines', 'metal3m', 'metal3machine'],
    categories=['cluster-api'])
crd(INFRA, 'Metal3MachineTemplate', 'metal3machinetemplates', [('v1beta1', True, M3MT, [AGE])], M3_LABELS,
    'the template Metal3Machines are cloned from.', short=['m3mt', 'm3machinetemplate', 'm3machinetemplates', 'metal3mt', 'metal3machinetemplate'],
    categories=['cluster-api'])
crd(INFRA, 'Metal3DataTemplate', 'metal3datatemplates', [('v1beta1', True, M3DT, [CLUSTER_LABEL, AGE])], M3_LABELS,
    'renders the metadata and network data of Metal3Machines.', short=['m3dt', 'm3datatemplate', 'm3datatemplates', 'metal3dt', 'metal3datatemplate'], categories=['cluster-api'])
crd(INFRA, 'Metal3Data', 'metal3datas', [('v1beta1', True, M3D, [AGE])], M3_LABELS,
    'the rendered data of one Metal3Machine.', short=['m3d', 'm3data', 'm3datas', 'metal3d', 'metal3data'], categories=['cluster-api'])
crd(INFRA, 'Metal3DataClaim', 'metal3dataclaims', [('v1beta1', True, M3DC, [AGE])], M3_LABELS,
    'a request for a Metal3Data.', short=['m3dc', 'm3dataclaim', 'm3dataclaims', 'metal3dc', 'metal3dataclaim'], categories=['cluster-api'])

OACP_V2_COLS = [CLUSTER_LABEL,
    col('Initialized', '.status.initialized', 'boolean', 'The control plane can accept requests'),
    col('API Server Available', '.status.ready', 'boolean', 'The API server is available'),
    col('Desired', '.spec.replicas', 'integer', 'Control-plane Machines wanted', 10),
    col('Replicas', '.status.replicas', 'integer', 'Control-plane Machines that exist'),
    col('Ready', '.status.readyReplicas', 'integer', 'Control-plane Machines ready'),
    col('Up-To-Date', '.status.updatedReplicas', 'integer', 'Control-plane Machines up to date'),
    col('Unavailable', '.status.unavailableReplicas', 'integer', 'Control-plane Machines not available'),
    AGE, col('Distribution Version', '.spec.distributionVersion', desc='OpenShift version')]
OACP_V3_COLS = [CLUSTER_LABEL,
    col('Initialized', '.status.initialization.controlPlaneInitialized', 'boolean', 'The control plane can accept requests'),
    col('Desired', '.spec.replicas', 'integer', 'Control-plane Machines wanted', 10),
    col('Replicas', '.status.replicas', 'integer', 'Control-plane Machines that exist'),
    col('Ready', '.status.readyReplicas', 'integer', 'Control-plane Machines ready'),
    col('Up-To-Date', '.status.upToDateReplicas', 'integer', 'Control-plane Machines up to date'),
    col('Available', '.status.availableReplicas', 'integer', 'Control-plane Machines available'),
    AGE, col('Distribution Version', '.spec.distributionVersion', desc='OpenShift version')]
OAC_COLS = [CLUSTER_LABEL,
    col('Data Secret', '.status.dataSecretName', desc='Bootstrap data Secret'), AGE]

crd('bootstrap.cluster.x-k8s.io', 'OpenshiftAssistedConfig', 'openshiftassistedconfigs',
    [('v1alpha1', False, OAC_V1, OAC_COLS + [col('Ready', '.status.ready', 'boolean', 'Bootstrap data ready')]),
     ('v1alpha2', True, OAC_V2, OAC_COLS + [col('Ready', '.status.initialization.dataSecretCreated', 'boolean', 'Bootstrap data ready')])],
    OAC_LABELS, 'the Assisted Installer bootstrap of one Machine (CAPOA).', short=['oac', 'oacs'])
crd('bootstrap.cluster.x-k8s.io', 'OpenshiftAssistedConfigTemplate', 'openshiftassistedconfigtemplates',
    [('v1alpha1', False, oact(False), [AGE]), ('v1alpha2', True, oact(True), [AGE])],
    OAC_LABELS, 'the template OpenshiftAssistedConfigs are cloned from (CAPOA).')
crd('controlplane.cluster.x-k8s.io', 'OpenshiftAssistedControlPlane', 'openshiftassistedcontrolplanes',
    [('v1alpha2', False, oacp(False), OACP_V2_COLS), ('v1alpha3', True, oacp(True), OACP_V3_COLS)],
    OACP_LABELS, 'the control plane of an OpenShift cluster installed by the Assisted Installer (CAPOA).',
    short=['oacp', 'oacps'], scale=True)
