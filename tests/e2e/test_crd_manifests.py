"""Checks of the project's CustomResourceDefinitions (config/crd/*.yaml).

The daemon loads its kinds from these manifests, and they must also install
unchanged on a real Kubernetes cluster.  This file checks, without a server:

- each file is one apiextensions.k8s.io/v1 CRD with the expected names, group,
  scope and versions (one storage version), a status subresource exactly when
  the schema has a status, a scale subresource on the kinds that scale, the
  Cluster API contract labels on the Cluster API kinds, and printer columns
  whose jsonPaths resolve in the schema;
- each schema is structural and uses only keywords apiextensions v1 accepts
  (every node typed, no properties next to additionalProperties, map lists keyed
  by required fields, enums and defaults that fit their schema, descriptions on
  every field so `kubectl explain` has something to show);
- every upstream example manifest (../shared/conformance/upstream-crs, when it
  is present) is valid against its CRD with nothing pruned: no undeclared
  field, no type mismatch, no enum or pattern violation, no missing required
  field.  A small structural walker below does the validation.

Only python3-yaml is needed.
"""
import datetime
import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / 'config' / 'crd'
CONFORMANCE_DIR = REPO / '..' / 'shared' / 'conformance' / 'upstream-crs'
CAPOA_DIR = REPO / '..' / 'shared' / 'conformance' / 'capoa'

# file -> (group, version, kind, plural, scope, shortNames, has status)
EXPECTED = {
    'agent-install.openshift.io_infraenvs.yaml':
        ('agent-install.openshift.io', 'v1beta1', 'InfraEnv', 'infraenvs', 'Namespaced', None, True),
    'agent-install.openshift.io_agents.yaml':
        ('agent-install.openshift.io', 'v1beta1', 'Agent', 'agents', 'Namespaced', None, True),
    'agent-install.openshift.io_nmstateconfigs.yaml':
        ('agent-install.openshift.io', 'v1beta1', 'NMStateConfig', 'nmstateconfigs', 'Namespaced', None, False),
    'agent-install.openshift.io_agentclassifications.yaml':
        ('agent-install.openshift.io', 'v1beta1', 'AgentClassification', 'agentclassifications', 'Namespaced',
         None, True),
    'extensions.hive.openshift.io_agentclusterinstalls.yaml':
        ('extensions.hive.openshift.io', 'v1beta1', 'AgentClusterInstall', 'agentclusterinstalls', 'Namespaced',
         ['aci'], True),
    'hive.openshift.io_clusterdeployments.yaml':
        ('hive.openshift.io', 'v1', 'ClusterDeployment', 'clusterdeployments', 'Namespaced', ['cd'], True),
    'hive.openshift.io_clusterimagesets.yaml':
        ('hive.openshift.io', 'v1', 'ClusterImageSet', 'clusterimagesets', 'Cluster', ['imgset'], True),
    'metal3.io_baremetalhosts.yaml':
        ('metal3.io', 'v1alpha1', 'BareMetalHost', 'baremetalhosts', 'Namespaced', ['bmh', 'bmhost'], True),
    'metal3.io_preprovisioningimages.yaml':
        ('metal3.io', 'v1alpha1', 'PreprovisioningImage', 'preprovisioningimages', 'Namespaced', ['ppimg'], True),
    # Cluster API: core (v1beta2), CAPM3 (v1beta1) and CAPOA (two versions each; see MULTI_VERSION).
    'cluster.x-k8s.io_clusters.yaml':
        ('cluster.x-k8s.io', 'v1beta2', 'Cluster', 'clusters', 'Namespaced', ['cl'], True),
    'cluster.x-k8s.io_machines.yaml':
        ('cluster.x-k8s.io', 'v1beta2', 'Machine', 'machines', 'Namespaced', ['ma'], True),
    'cluster.x-k8s.io_machinesets.yaml':
        ('cluster.x-k8s.io', 'v1beta2', 'MachineSet', 'machinesets', 'Namespaced', ['ms'], True),
    'cluster.x-k8s.io_machinedeployments.yaml':
        ('cluster.x-k8s.io', 'v1beta2', 'MachineDeployment', 'machinedeployments', 'Namespaced', ['md'], True),
    'infrastructure.cluster.x-k8s.io_metal3clusters.yaml':
        ('infrastructure.cluster.x-k8s.io', 'v1beta1', 'Metal3Cluster', 'metal3clusters', 'Namespaced',
         ['m3c', 'm3cluster', 'm3clusters', 'metal3c', 'metal3cluster'], True),
    'infrastructure.cluster.x-k8s.io_metal3machines.yaml':
        ('infrastructure.cluster.x-k8s.io', 'v1beta1', 'Metal3Machine', 'metal3machines', 'Namespaced',
         ['m3m', 'm3machine', 'm3machines', 'metal3m', 'metal3machine'], True),
    'infrastructure.cluster.x-k8s.io_metal3machinetemplates.yaml':
        ('infrastructure.cluster.x-k8s.io', 'v1beta1', 'Metal3MachineTemplate', 'metal3machinetemplates', 'Namespaced',
         ['m3mt', 'm3machinetemplate', 'm3machinetemplates', 'metal3mt', 'metal3machinetemplate'], False),
    'infrastructure.cluster.x-k8s.io_metal3datatemplates.yaml':
        ('infrastructure.cluster.x-k8s.io', 'v1beta1', 'Metal3DataTemplate', 'metal3datatemplates', 'Namespaced',
         ['m3dt', 'm3datatemplate', 'm3datatemplates', 'metal3dt', 'metal3datatemplate'], True),
    'infrastructure.cluster.x-k8s.io_metal3datas.yaml':
        ('infrastructure.cluster.x-k8s.io', 'v1beta1', 'Metal3Data', 'metal3datas', 'Namespaced',
         ['m3d', 'm3data', 'm3datas', 'metal3d', 'metal3data'], True),
    'infrastructure.cluster.x-k8s.io_metal3dataclaims.yaml':
        ('infrastructure.cluster.x-k8s.io', 'v1beta1', 'Metal3DataClaim', 'metal3dataclaims', 'Namespaced',
         ['m3dc', 'm3dataclaim', 'm3dataclaims', 'metal3dc', 'metal3dataclaim'], True),
    'bootstrap.cluster.x-k8s.io_openshiftassistedconfigs.yaml':
        ('bootstrap.cluster.x-k8s.io', 'v1alpha2', 'OpenshiftAssistedConfig', 'openshiftassistedconfigs',
         'Namespaced', ['oac', 'oacs'], True),
    'bootstrap.cluster.x-k8s.io_openshiftassistedconfigtemplates.yaml':
        ('bootstrap.cluster.x-k8s.io', 'v1alpha2', 'OpenshiftAssistedConfigTemplate',
         'openshiftassistedconfigtemplates', 'Namespaced', None, True),
    'controlplane.cluster.x-k8s.io_openshiftassistedcontrolplanes.yaml':
        ('controlplane.cluster.x-k8s.io', 'v1alpha3', 'OpenshiftAssistedControlPlane',
         'openshiftassistedcontrolplanes', 'Namespaced', ['oacp', 'oacps'], True),
}

# Files with more than one served version: every version, in order (the
# storage version is EXPECTED's).
MULTI_VERSION = {
    'bootstrap.cluster.x-k8s.io_openshiftassistedconfigs.yaml': ['v1alpha1', 'v1alpha2'],
    'bootstrap.cluster.x-k8s.io_openshiftassistedconfigtemplates.yaml': ['v1alpha1', 'v1alpha2'],
    'controlplane.cluster.x-k8s.io_openshiftassistedcontrolplanes.yaml': ['v1alpha2', 'v1alpha3'],
}

# Kinds with a scale subresource (autoscaling/v1 Scale): replicas and selector paths.
SCALE = {'MachineSet', 'MachineDeployment', 'OpenshiftAssistedControlPlane'}
SCALE_PATHS = {'specReplicasPath': '.spec.replicas', 'statusReplicasPath': '.status.replicas',
               'labelSelectorPath': '.status.selector'}

# CRD labels: the Cluster API contract (cluster.x-k8s.io/<contract>: <versions>), bmac-capi.md
# section C.1 and D, and core Cluster API's provider label on its own kinds.
EXPECTED_LABELS = {
    'cluster.x-k8s.io': {'cluster.x-k8s.io/provider': 'cluster-api'},
    'infrastructure.cluster.x-k8s.io': {'cluster.x-k8s.io/v1beta1': 'v1beta1', 'cluster.x-k8s.io/v1beta2': 'v1beta1'},
    'bootstrap.cluster.x-k8s.io': {'cluster.x-k8s.io/v1beta1': 'v1alpha1', 'cluster.x-k8s.io/v1beta2': 'v1alpha2'},
    'controlplane.cluster.x-k8s.io': {'cluster.x-k8s.io/v1beta1': 'v1alpha2',
                                      'cluster.x-k8s.io/v1beta2': 'v1alpha3'},
}

# Printer columns that must be there, as (name, jsonPath, type, priority).
EXPECTED_COLUMNS = {
    'AgentClusterInstall': [('Cluster', '.spec.clusterDeploymentRef.name', 'string', 0),
                            ('State', '.status.debugInfo.state', 'string', 0)],
    'Agent': [('Cluster', '.spec.clusterDeploymentName.name', 'string', 0),
              ('Approved', '.spec.approved', 'boolean', 0),
              ('Role', '.status.role', 'string', 0),
              ('Stage', '.status.progress.currentStage', 'string', 0),
              ('Hostname', '.status.inventory.hostname', 'string', 1),
              ('Requested Hostname', '.spec.hostname', 'string', 1)],
    'InfraEnv': [('ISO Created At', '.status.createdTime', 'string', 0),
                 ('ISO URL', '.status.isoDownloadURL', 'string', 1)],
    'ClusterImageSet': [('Release', '.spec.releaseImage', 'string', 0)],
    'ClusterDeployment': [('InfraID', '.spec.clusterMetadata.infraID', 'string', 0),
                          ('ProvisionStatus', ".status.conditions[?(@.type=='Provisioned')].reason", 'string', 0),
                          ('PowerState', '.status.powerState', 'string', 0),
                          ('Age', '.metadata.creationTimestamp', 'date', 0)],
    'BareMetalHost': [('State', '.status.provisioning.state', 'string', 0),
                      ('Consumer', '.spec.consumerRef.name', 'string', 0),
                      ('Online', '.spec.online', 'string', 0),
                      ('Error', '.status.errorType', 'string', 0),
                      ('Age', '.metadata.creationTimestamp', 'date', 0)],
    'PreprovisioningImage': [('Ready', ".status.conditions[?(@.type=='Ready')].status", 'string', 0)],
    'Cluster': [('Phase', '.status.phase', 'string', 0), ('Age', '.metadata.creationTimestamp', 'date', 0)],
    'Machine': [('Cluster', '.spec.clusterName', 'string', 0), ('Node Name', '.status.nodeRef.name', 'string', 0),
                ('Provider ID', '.spec.providerID', 'string', 10), ('Phase', '.status.phase', 'string', 0),
                ('Version', '.spec.version', 'string', 0)],
    'MachineDeployment': [('Cluster', '.spec.clusterName', 'string', 0), ('Desired', '.spec.replicas', 'integer', 0),
                          ('Current', '.status.replicas', 'integer', 0), ('Phase', '.status.phase', 'string', 0)],
    'MachineSet': [('Desired', '.spec.replicas', 'integer', 0), ('Current', '.status.replicas', 'integer', 0)],
    'Metal3Machine': [('ProviderID', '.spec.providerID', 'string', 0), ('Ready', '.status.ready', 'string', 0)],
    'OpenshiftAssistedControlPlane': [('Initialized', '.status.initialization.controlPlaneInitialized', 'boolean', 0),
                                      ('Distribution Version', '.spec.distributionVersion', 'string', 0)],
}

# Fields the specs rely on: (kind, dotted path, type).  "[]" steps into array
# items, "{}" into additionalProperties.
EXPECTED_FIELDS = [
    ('InfraEnv', 'spec.pullSecretRef.name', 'string'),
    ('InfraEnv', 'spec.proxy.noProxy', 'string'),
    ('InfraEnv', 'spec.additionalNTPSources[]', 'string'),
    ('InfraEnv', 'spec.ntpSources[]', 'string'),
    ('InfraEnv', 'spec.agentLabels{}', 'string'),
    ('InfraEnv', 'spec.nmStateConfigLabelSelector.matchExpressions[].values[]', 'string'),
    ('InfraEnv', 'spec.clusterRef.namespace', 'string'),
    ('InfraEnv', 'spec.kernelArguments[].value', 'string'),
    ('InfraEnv', 'spec.mirrorRegistryRef.namespace', 'string'),
    ('InfraEnv', 'spec.imageType', 'string'),
    ('InfraEnv', 'spec.osImageVersion', 'string'),
    ('InfraEnv', 'spec.agentApproval.autoApprove', 'boolean'),
    ('InfraEnv', 'spec.networkDiscoveryDelaySeconds', 'integer'),
    ('InfraEnv', 'status.agentLabelSelector.matchLabels{}', 'string'),
    ('InfraEnv', 'status.debugInfo.staticNetworkDownloadURL', 'string'),
    ('InfraEnv', 'status.bootArtifacts.discoveryIgnitionURL', 'string'),
    ('InfraEnv', 'status.conditions[].lastHeartbeatTime', 'string'),
    ('Agent', 'spec.installation_disk_path', 'string'),
    ('Agent', 'spec.ignitionEndpointTokenReference.namespace', 'string'),
    ('Agent', 'spec.ignitionEndpointHTTPHeaders{}', 'string'),
    ('Agent', 'spec.nodeLabels{}', 'string'),
    ('Agent', 'spec.fencingCredentialsSecretRef.name', 'string'),
    ('Agent', 'status.inventory.disks[].installationEligibility.notEligibleReasons[]', 'string'),
    ('Agent', 'status.inventory.disks[].ioPerf.syncDurationMilliseconds', 'integer'),
    ('Agent', 'status.inventory.gpus[].vendorID', 'string'),
    ('Agent', 'status.inventory.boot.pxeInterface', 'string'),
    ('Agent', 'status.inventory.systemVendor.serialNumber', 'string'),
    ('Agent', 'status.inventory.reportTime', 'string'),
    ('Agent', 'status.validationsInfo{}[].message', 'string'),
    ('Agent', 'status.deprovision_info.cluster_namespace', 'string'),
    ('Agent', 'status.csrStatus.approvedCSRs[].approvedAt', 'string'),
    ('Agent', 'status.csrStatus.lastApprovalAttempt', 'string'),
    ('Agent', 'status.kind', 'string'),
    ('Agent', 'status.bootstrap', 'boolean'),
    ('AgentClusterInstall', 'spec.manifestsConfigMapRefs[].name', 'string'),
    ('AgentClusterInstall', 'spec.clusterMetadata.adminKubeconfigSecretRef.name', 'string'),
    ('AgentClusterInstall', 'spec.networking.clusterNetwork[].hostPrefix', 'integer'),
    ('AgentClusterInstall', 'spec.networking.userManagedNetworking', 'boolean'),
    ('AgentClusterInstall', 'spec.provisionRequirements.arbiterAgents', 'integer'),
    ('AgentClusterInstall', 'spec.arbiter.hyperthreading', 'string'),
    ('AgentClusterInstall', 'spec.ignitionEndpoint.caCertificateReference.name', 'string'),
    ('AgentClusterInstall', 'spec.diskEncryption.tangServers', 'string'),
    ('AgentClusterInstall', 'spec.external.cloudControllerManager', 'string'),
    ('AgentClusterInstall', 'spec.loadBalancer.type', 'string'),
    ('AgentClusterInstall', 'spec.ntpSources[]', 'string'),
    ('AgentClusterInstall', 'status.conditions[].lastProbeTime', 'string'),
    ('AgentClusterInstall', 'status.progress.totalPercentage', 'integer'),
    ('AgentClusterInstall', 'status.validationsInfo{}[].id', 'string'),
    ('AgentClusterInstall', 'status.connectivityMajorityGroups', 'string'),
    ('NMStateConfig', 'spec.interfaces[].macAddress', 'string'),
    ('AgentClassification', 'status.matchedCount', 'integer'),
    ('AgentClassification', 'status.errorCount', 'integer'),
    ('ClusterDeployment', 'spec.platform.agentBareMetal.agentSelector.matchLabels{}', 'string'),
    ('ClusterDeployment', 'spec.controlPlaneConfig.servingCertificates.additional[].domain', 'string'),
    ('ClusterDeployment', 'spec.controlPlaneConfig.apiURLOverride', 'string'),
    ('ClusterDeployment', 'spec.clusterMetadata.metadataJSONSecretRef.name', 'string'),
    ('ClusterDeployment', 'spec.clusterMetadata.adminPasswordSecretRef.name', 'string'),
    ('ClusterDeployment', 'spec.ingress[].domain', 'string'),
    ('ClusterDeployment', 'spec.installAttemptsLimit', 'integer'),
    ('ClusterDeployment', 'spec.preserveOnDelete', 'boolean'),
    ('ClusterDeployment', 'spec.hibernateAfter', 'string'),
    ('ClusterDeployment', 'spec.clusterPoolRef.poolName', 'string'),
    ('ClusterDeployment', 'status.installedTimestamp', 'string'),
    ('ClusterDeployment', 'status.installStartedTimestamp', 'string'),
    ('ClusterDeployment', 'status.webConsoleURL', 'string'),
    ('ClusterDeployment', 'status.installRestarts', 'integer'),
    ('BareMetalHost', 'spec.bootMACAddress', 'string'),
    ('BareMetalHost', 'spec.image.format', 'string'),
    ('BareMetalHost', 'spec.customDeploy.method', 'string'),
    ('BareMetalHost', 'spec.rootDeviceHints.deviceName', 'string'),
    ('BareMetalHost', 'spec.bmc.disableCertificateVerification', 'boolean'),
    ('BareMetalHost', 'spec.preprovisioningNetworkDataName', 'string'),
    ('BareMetalHost', 'status.hardware.hostname', 'string'),
    ('BareMetalHost', 'status.provisioning.state', 'string'),
    ('PreprovisioningImage', 'spec.acceptFormats[]', 'string'),
    ('PreprovisioningImage', 'status.networkData.version', 'string'),
    ('PreprovisioningImage', 'status.conditions[].observedGeneration', 'integer'),
    # Cluster API fields the controllers read and write (bmac-capi.md section D).
    ('Cluster', 'spec.clusterNetwork.pods.cidrBlocks[]', 'string'),
    ('Cluster', 'spec.clusterNetwork.services.cidrBlocks[]', 'string'),
    ('Cluster', 'spec.controlPlaneEndpoint.port', 'integer'),
    ('Cluster', 'spec.paused', 'boolean'),
    ('Cluster', 'spec.controlPlaneRef.apiGroup', 'string'),
    ('Cluster', 'spec.infrastructureRef.kind', 'string'),
    ('Cluster', 'status.initialization.infrastructureProvisioned', 'boolean'),
    ('Cluster', 'status.initialization.controlPlaneInitialized', 'boolean'),
    ('Machine', 'spec.bootstrap.configRef.name', 'string'),
    ('Machine', 'spec.bootstrap.dataSecretName', 'string'),
    ('Machine', 'spec.infrastructureRef.apiGroup', 'string'),
    ('Machine', 'spec.providerID', 'string'),
    ('Machine', 'spec.deletion.nodeDeletionTimeoutSeconds', 'integer'),
    ('Machine', 'status.nodeRef.name', 'string'),
    ('Machine', 'status.initialization.bootstrapDataSecretCreated', 'boolean'),
    ('Machine', 'status.conditions[].reason', 'string'),
    ('MachineSet', 'spec.template.spec.bootstrap.configRef.kind', 'string'),
    ('MachineSet', 'status.selector', 'string'),
    ('MachineDeployment', 'spec.replicas', 'integer'),
    ('MachineDeployment', 'spec.selector.matchLabels{}', 'string'),
    ('MachineDeployment', 'status.upToDateReplicas', 'integer'),
    ('Metal3Cluster', 'spec.controlPlaneEndpoint.host', 'string'),
    ('Metal3Cluster', 'status.ready', 'boolean'),
    ('Metal3Cluster', 'status.initialization.provisioned', 'boolean'),
    ('Metal3Machine', 'spec.image.checksumType', 'string'),
    ('Metal3Machine', 'spec.userData.name', 'string'),
    ('Metal3Machine', 'spec.hostSelector.matchLabels{}', 'string'),
    ('Metal3Machine', 'spec.dataTemplate.name', 'string'),
    ('Metal3Machine', 'status.initialization.provisioned', 'boolean'),
    ('Metal3MachineTemplate', 'spec.template.spec.image.url', 'string'),
    ('Metal3DataTemplate', 'spec.clusterName', 'string'),
    ('OpenshiftAssistedConfig', 'spec.nodeRegistration.kubeletExtraLabels[]', 'string'),
    ('OpenshiftAssistedConfig', 'spec.postBootstrapKubeconfigPath', 'string'),
    ('OpenshiftAssistedConfig', 'status.initialization.dataSecretCreated', 'boolean'),
    ('OpenshiftAssistedConfig', 'status.v1beta1Conditions[].severity', 'string'),
    ('OpenshiftAssistedConfigTemplate', 'spec.template.spec.pullSecretRef.name', 'string'),
    ('OpenshiftAssistedControlPlane', 'spec.machineTemplate.infrastructureRef.apiGroup', 'string'),
    ('OpenshiftAssistedControlPlane', 'spec.machineTemplate.deletion.nodeDrainTimeoutSeconds', 'integer'),
    ('OpenshiftAssistedControlPlane', 'spec.config.capabilities.additionalEnabledCapabilities[]', 'string'),
    ('OpenshiftAssistedControlPlane', 'spec.openshiftAssistedConfigSpec.preBootstrapCommands[]', 'string'),
    ('OpenshiftAssistedControlPlane', 'status.initialization.controlPlaneInitialized', 'boolean'),
    ('OpenshiftAssistedControlPlane', 'status.upToDateReplicas', 'integer'),
]

# (kind, dotted path) -> the required list the object there must have.
EXPECTED_REQUIRED = {
    ('InfraEnv', 'spec'): ['pullSecretRef'],
    ('InfraEnv', 'spec.mirrorRegistryRef'): ['name', 'namespace'],
    ('Agent', 'spec'): ['approved', 'role'],
    ('Agent', 'spec.ignitionEndpointTokenReference'): ['name', 'namespace'],
    ('Agent', 'status.inventory.interfaces[]'): ['flags', 'ipV4Addresses', 'ipV6Addresses'],
    ('Agent', 'status.inventory.disks[]'): ['id'],
    ('Agent', 'status.inventory.disks[].installationEligibility'): ['notEligibleReasons'],
    ('AgentClusterInstall', 'spec'): ['clusterDeploymentRef', 'networking', 'provisionRequirements'],
    ('AgentClusterInstall', 'spec.imageSetRef'): ['name'],
    ('AgentClusterInstall', 'spec.provisionRequirements'): ['controlPlaneAgents'],
    ('AgentClusterInstall', 'spec.networking.machineNetwork[]'): ['cidr'],
    ('AgentClusterInstall', 'spec.networking.clusterNetwork[]'): ['cidr'],
    ('AgentClusterInstall', 'spec.compute[]'): ['name'],
    ('AgentClusterInstall', 'spec.ignitionEndpoint.caCertificateReference'): ['name', 'namespace'],
    ('AgentClusterInstall', 'status.progress'): ['totalPercentage'],
    ('NMStateConfig', 'spec.interfaces[]'): ['macAddress', 'name'],
    ('AgentClassification', 'spec'): ['labelKey', 'labelValue', 'query'],
    ('ClusterImageSet', 'spec'): ['releaseImage'],
    ('ClusterDeployment', 'spec.clusterInstallRef'): ['group', 'kind', 'name', 'version'],
    ('ClusterDeployment', 'spec.platform.agentBareMetal'): ['agentSelector'],
    ('ClusterDeployment', 'spec.clusterMetadata'): ['adminKubeconfigSecretRef', 'clusterID', 'infraID'],
    ('BareMetalHost', 'spec'): ['online'],
    ('Machine', 'spec'): ['bootstrap', 'clusterName', 'infrastructureRef'],
    ('Machine', 'spec.infrastructureRef'): ['apiGroup', 'kind', 'name'],
    ('MachineDeployment', 'spec'): ['clusterName', 'selector', 'template'],
    ('OpenshiftAssistedControlPlane', 'spec'): ['distributionVersion', 'machineTemplate'],
    ('OpenshiftAssistedControlPlane', 'spec.config'): ['baseDomain'],
}

# (kind, dotted path) -> enum.
EXPECTED_ENUMS = {
    ('InfraEnv', 'spec.ipxeScriptType'): ['', 'DiscoveryImageAlways', 'BootOrderControl'],
    ('InfraEnv', 'spec.kernelArguments[].operation'): ['append', 'replace', 'delete'],
    ('AgentClusterInstall', 'spec.networking.networkType'):
        ['OpenShiftSDN', 'OVNKubernetes', 'CiscoACI', 'Cilium', 'Calico', 'None'],
    ('AgentClusterInstall', 'spec.platformType'): ['', 'BareMetal', 'None', 'VSphere', 'Nutanix', 'External'],
    ('AgentClusterInstall', 'spec.controlPlane.hyperthreading'): ['', 'Enabled', 'Disabled'],
    ('AgentClusterInstall', 'spec.diskEncryption.mode'): ['tpmv2', 'tang'],
    ('AgentClusterInstall', 'spec.loadBalancer.type'): ['ClusterManaged', 'UserManaged'],
    ('AgentClusterInstall', 'spec.external.cloudControllerManager'): ['', 'External'],
    ('ClusterDeployment', 'spec.powerState'): ['', 'Running', 'Hibernating'],
    ('PreprovisioningImage', 'spec.acceptFormats[]'): ['iso', 'initrd'],
    ('Metal3Machine', 'spec.image.format'): ['raw', 'qcow2', 'vdi', 'vmdk', 'live-iso'],
    ('Metal3Machine', 'spec.automatedCleaningMode'): ['metadata', 'disabled'],
    ('OpenshiftAssistedConfig', 'spec.kernelArguments[].operation'): ['append', 'replace', 'delete'],
    ('Machine', 'status.phase'): ['Pending', 'Provisioning', 'Provisioned', 'Running', 'Updating', 'Deleting',
                                  'Deleted', 'Failed', 'Unknown'],
}

# (kind, dotted path) -> default.
EXPECTED_DEFAULTS = {
    ('InfraEnv', 'spec.cpuArchitecture'): 'x86_64',
    ('InfraEnv', 'spec.ipxeScriptType'): 'DiscoveryImageAlways',
    ('InfraEnv', 'spec.agentApproval.autoApprove'): False,
    ('AgentClusterInstall', 'spec.controlPlane.hyperthreading'): 'Enabled',
    ('AgentClusterInstall', 'spec.diskEncryption.enableOn'): 'none',
    ('AgentClusterInstall', 'spec.external.platformName'): 'Unknown',
    ('AgentClusterInstall', 'spec.loadBalancer.type'): 'ClusterManaged',
    ('BareMetalHost', 'spec.automatedCleaningMode'): 'metadata',
    ('OpenshiftAssistedConfig', 'spec.cpuArchitecture'): 'x86_64',
    ('OpenshiftAssistedControlPlane', 'spec.machineTemplate.deletion'): {'nodeDeletionTimeoutSeconds': 10},
    ('Metal3MachineTemplate', 'spec.nodeReuse'): False,
}

CORE_KINDS = {('v1', 'Namespace'), ('v1', 'Secret'), ('v1', 'ConfigMap')}

# Keywords of apiextensions.k8s.io/v1 JSONSchemaProps this project uses or may use.
ALLOWED_KEYWORDS = {
    'description', 'type', 'format', 'title', 'properties', 'required', 'items', 'additionalProperties',
    'enum', 'pattern', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf',
    'minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties', 'uniqueItems',
    'default', 'nullable', 'example',
    'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-int-or-string', 'x-kubernetes-embedded-resource',
    'x-kubernetes-list-type', 'x-kubernetes-list-map-keys', 'x-kubernetes-map-type',
    'x-kubernetes-validations',
}
TYPES = {'object', 'array', 'string', 'integer', 'number', 'boolean'}
FORMATS = {'date-time', 'date', 'int32', 'int64', 'double', 'float', 'byte', 'duration', 'uri', 'uuid',
           'hostname', 'ipv4', 'ipv6', 'cidr', 'mac', 'password'}
COLUMN_TYPES = {'string', 'integer', 'number', 'boolean', 'date'}
DATE_TIME = re.compile(r'^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$')


# ---- loading ---------------------------------------------------------------

def load_crds():
    crds = {}
    for path in sorted(CRD_DIR.glob('*.yaml')):
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        crds[path.name] = docs
    return crds


CRDS = load_crds()


def crd_of(fname):
    return CRDS[fname][0]


def schema_of(crd, version=None):
    """The schema of a version (default: the storage version)."""
    for v in crd['spec']['versions']:
        if v['name'] == version or (version is None and v['storage']):
            return v['schema']['openAPIV3Schema']
    raise KeyError(version)


def by_kind():
    out = {}
    for docs in CRDS.values():
        crd = docs[0]
        for v in crd['spec']['versions']:
            out[(crd['spec']['group'] + '/' + v['name'], crd['spec']['names']['kind'])] = crd
    return out


def kind_schema(kind):
    for crd in by_kind().values():
        if crd['spec']['names']['kind'] == kind:
            return schema_of(crd)
    raise KeyError(kind)


def lookup(schema, dotted):
    """Subschema at a dotted path; "[]" steps into items, "{}" into additionalProperties."""
    node = schema
    for part in re.findall(r'[^.\[\]{}]+|\[\]|\{\}', dotted):
        if part == '[]':
            node = node['items']
        elif part == '{}':
            node = node['additionalProperties']
        else:
            node = node['properties'][part]
    return node


# ---- the structural walker ---------------------------------------------------

def _type_ok(t, v):
    if t == 'object':
        return isinstance(v, dict)
    if t == 'array':
        return isinstance(v, list)
    if t == 'string':
        # YAML may turn unquoted timestamps into datetimes; clients send strings.
        return isinstance(v, (str, datetime.date))
    if t == 'integer':
        return isinstance(v, int) and not isinstance(v, bool)
    if t == 'number':
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == 'boolean':
        return isinstance(v, bool)
    return False


def validate(schema, value, path='', errs=None, root=True):
    """Validate value against a structural schema the way the API server does
    for custom resources, but report (rather than prune) undeclared fields.
    Returns the list of problems, each a string starting with the field path."""
    if errs is None:
        errs = []
    where = path or '<root>'
    if value is None:
        if not schema.get('nullable'):
            errs.append(f'{where}: null value for a field that is not nullable (it would be dropped)')
        return errs
    if schema.get('x-kubernetes-int-or-string'):
        if not (_type_ok('integer', value) or _type_ok('string', value)):
            errs.append(f'{where}: must be an integer or a string, got {type(value).__name__}')
            return errs
    else:
        t = schema.get('type')
        if t and not _type_ok(t, value):
            errs.append(f'{where}: must be of type {t}, got {type(value).__name__} {value!r:.60}')
            return errs
    if 'enum' in schema and value not in schema['enum']:
        errs.append(f'{where}: unsupported value {value!r}: supported values: {schema["enum"]}')

    if isinstance(value, dict):
        props = schema.get('properties')
        addl = schema.get('additionalProperties')
        preserve = schema.get('x-kubernetes-preserve-unknown-fields') is True
        for key, sub in value.items():
            sub_path = f'{path}.{key}' if path else key
            if root and key == 'metadata':
                if not isinstance(sub, dict):
                    errs.append(f'{sub_path}: must be an object')
                continue
            if props is not None and key in props:
                validate(props[key], sub, sub_path, errs, False)
            elif isinstance(addl, dict):
                validate(addl, sub, sub_path, errs, False)
            elif preserve or addl is True:
                continue
            else:
                errs.append(f'{sub_path}: field not declared in the schema (it would be pruned)')
        for key in schema.get('required', []):
            if key not in value:
                errs.append(f'{path + "." if path else ""}{key}: required value missing')
        if 'minProperties' in schema and len(value) < schema['minProperties']:
            errs.append(f'{where}: fewer than {schema["minProperties"]} properties')
        if 'maxProperties' in schema and len(value) > schema['maxProperties']:
            errs.append(f'{where}: more than {schema["maxProperties"]} properties')
    elif isinstance(value, list):
        items = schema.get('items')
        for i, sub in enumerate(value):
            if items is not None:
                validate(items, sub, f'{path}[{i}]', errs, False)
        if 'minItems' in schema and len(value) < schema['minItems']:
            errs.append(f'{where}: must have at least {schema["minItems"]} items')
        if 'maxItems' in schema and len(value) > schema['maxItems']:
            errs.append(f'{where}: must have at most {schema["maxItems"]} items')
        if schema.get('x-kubernetes-list-type') == 'map':
            keys = schema.get('x-kubernetes-list-map-keys', [])
            seen = set()
            for item in value:
                k = tuple(item.get(key) for key in keys) if isinstance(item, dict) else None
                if k in seen:
                    errs.append(f'{where}: duplicate entries for map keys {keys} = {k}')
                seen.add(k)
    elif isinstance(value, (str, datetime.date)):
        s = value if isinstance(value, str) else value.isoformat()
        if 'pattern' in schema and not re.search(schema['pattern'], s):
            errs.append(f'{where}: {s!r} should match {schema["pattern"]!r}')
        if 'minLength' in schema and len(s) < schema['minLength']:
            errs.append(f'{where}: shorter than {schema["minLength"]}')
        if 'maxLength' in schema and len(s) > schema['maxLength']:
            errs.append(f'{where}: longer than {schema["maxLength"]}')
        if schema.get('format') == 'date-time' and isinstance(value, str) and not DATE_TIME.match(s):
            errs.append(f'{where}: {s!r} is not an RFC 3339 date-time')
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if 'minimum' in schema and value < schema['minimum']:
            errs.append(f'{where}: {value} is less than the minimum {schema["minimum"]}')
        if 'maximum' in schema and value > schema['maximum']:
            errs.append(f'{where}: {value} is greater than the maximum {schema["maximum"]}')
        fmt = schema.get('format')
        if fmt == 'int32' and not -2**31 <= value < 2**31:
            errs.append(f'{where}: {value} does not fit int32')
        if fmt == 'int64' and not -2**63 <= value < 2**63:
            errs.append(f'{where}: {value} does not fit int64')
    return errs


# ---- structural-schema checks --------------------------------------------------

def structural_problems(node, path, root=False):
    """Ways in which a schema node breaks apiextensions v1's structural-schema
    rules (or this project's: a description on every field)."""
    out = []
    where = path or '<root>'
    if not isinstance(node, dict):
        return [f'{where}: schema node is not an object']
    for key in node:
        if key not in ALLOWED_KEYWORDS:
            out.append(f'{where}: keyword {key!r} is not allowed in a v1 CRD schema')
    for junctor in ('allOf', 'anyOf', 'oneOf', 'not'):
        if junctor in node:
            out.append(f'{where}: {junctor} is not used by these schemas (keep them simple)')
    t = node.get('type')
    if t is None:
        if not node.get('x-kubernetes-int-or-string'):
            out.append(f'{where}: missing type')
    elif t not in TYPES:
        out.append(f'{where}: unknown type {t!r}')
    if node.get('x-kubernetes-int-or-string') and t is not None:
        out.append(f'{where}: x-kubernetes-int-or-string must not carry a type')
    if 'x-kubernetes-preserve-unknown-fields' in node and node['x-kubernetes-preserve-unknown-fields'] is not True:
        out.append(f'{where}: x-kubernetes-preserve-unknown-fields must be true when present')
    if 'format' in node and node['format'] not in FORMATS:
        out.append(f'{where}: unknown format {node["format"]!r}')
    if 'nullable' in node and not isinstance(node['nullable'], bool):
        out.append(f'{where}: nullable must be a boolean')
    if node.get('uniqueItems') is True:
        out.append(f'{where}: uniqueItems: true is not allowed in v1')
    if 'pattern' in node:
        try:
            re.compile(node['pattern'])
        except re.error as e:
            out.append(f'{where}: bad pattern: {e}')
    is_field = not root and not path.endswith('[]') and not path.endswith('{}')
    if is_field and not node.get('description'):
        out.append(f'{where}: field has no description (kubectl explain shows it)')

    if 'properties' in node:
        if t != 'object':
            out.append(f'{where}: properties on a non-object')
        if 'additionalProperties' in node:
            out.append(f'{where}: properties and additionalProperties are mutually exclusive')
        for name, sub in node['properties'].items():
            sub_path = f'{path}.{name}' if path else name
            if root and name == 'metadata':
                if sub != {'type': 'object'}:
                    out.append(f'{sub_path}: the root metadata schema must be just type: object')
                continue
            out += structural_problems(sub, sub_path)
        for req in node.get('required', []):
            if req not in node['properties']:
                out.append(f'{where}: required field {req!r} is not declared')
    elif node.get('required') and t == 'object':
        out.append(f'{where}: required without properties')
    if 'additionalProperties' in node:
        addl = node['additionalProperties']
        if addl is False:
            out.append(f'{where}: additionalProperties: false is not allowed in v1')
        elif isinstance(addl, dict):
            out += structural_problems(addl, f'{path}{{}}')
    if t == 'array':
        if not isinstance(node.get('items'), dict):
            out.append(f'{where}: an array needs one items schema')
        else:
            out += structural_problems(node['items'], f'{path}[]')
    elif 'items' in node:
        out.append(f'{where}: items on a non-array')
    if 'x-kubernetes-list-type' in node:
        lt = node['x-kubernetes-list-type']
        if t != 'array' or lt not in ('atomic', 'set', 'map'):
            out.append(f'{where}: bad x-kubernetes-list-type {lt!r}')
        if lt == 'map':
            keys = node.get('x-kubernetes-list-map-keys') or []
            items = node.get('items', {})
            if not keys:
                out.append(f'{where}: a map list needs x-kubernetes-list-map-keys')
            for k in keys:
                ks = items.get('properties', {}).get(k)
                if ks is None or (k not in items.get('required', []) and 'default' not in ks):
                    out.append(f'{where}: map key {k!r} must be a required (or defaulted) item field')
    elif 'x-kubernetes-list-map-keys' in node:
        out.append(f'{where}: x-kubernetes-list-map-keys without list type map')
    if 'x-kubernetes-map-type' in node and (t != 'object' or node['x-kubernetes-map-type'] not in
                                            ('atomic', 'granular')):
        out.append(f'{where}: bad x-kubernetes-map-type')
    for rule in node.get('x-kubernetes-validations', []):
        if not isinstance(rule, dict) or not isinstance(rule.get('rule'), str):
            out.append(f'{where}: x-kubernetes-validations entries need a rule string')
    for value in node.get('enum', []):
        bare = {k: v for k, v in node.items() if k not in ('enum', 'default')}
        for e in validate(bare, value, where, None, False):
            out.append(f'enum value {value!r}: {e}')
    if 'default' in node:
        for e in validate(node, node['default'], where, None, False):
            out.append(f'default {node["default"]!r}: {e}')
    return out


# ---- printer-column jsonPaths ------------------------------------------------

def json_path_steps(path):
    """Split a printer-column jsonPath into field names and array steps."""
    assert path.startswith('.'), path
    steps, buf, i = [], '', 1
    while i < len(path):
        c = path[i]
        if c == '\\' and i + 1 < len(path):
            buf += path[i + 1]
            i += 2
            continue
        if c == '.':
            if buf:
                steps.append(('field', buf))
            buf = ''
        elif c == '[':
            if buf:
                steps.append(('field', buf))
            buf = ''
            end = path.index(']', i)
            inner = path[i + 1:end]
            m = re.match(r"^\?\(@\.([A-Za-z0-9_]+)\s*==\s*'[^']*'\)$", inner)
            steps.append(('filter', m.group(1)) if m else ('index', inner))
            i = end
        else:
            buf += c
        i += 1
    if buf:
        steps.append(('field', buf))
    return steps


def resolve_json_path(schema, path):
    """None when the path resolves in the schema, else why not."""
    node = schema
    steps = json_path_steps(path)
    if steps and steps[0] == ('field', 'metadata'):
        # metadata is served by the API machinery (ObjectMeta), not the CRD schema.
        return None if len(steps) >= 2 else 'bare .metadata'
    for kind, name in steps:
        if node.get('x-kubernetes-preserve-unknown-fields'):
            return None
        if kind == 'field':
            if name in node.get('properties', {}):
                node = node['properties'][name]
            elif isinstance(node.get('additionalProperties'), dict):
                node = node['additionalProperties']
            else:
                return f'{name!r} is not declared'
        else:
            if node.get('type') != 'array':
                return f'[{name}] applied to a non-array'
            node = node['items']
            if kind == 'filter' and name not in node.get('properties', {}):
                return f'filter field {name!r} is not declared in the items'
    return None


# ---- tests: the CRD files ----------------------------------------------------

def test_the_expected_files_and_only_them():
    assert set(CRDS) == set(EXPECTED), 'config/crd/ must hold exactly one CRD file per kind'


@pytest.mark.parametrize('fname', sorted(EXPECTED))
def test_no_yaml_anchors_or_aliases(fname):
    # The daemon's YAML reader (src/base/yamljson.c) rejects anchors and aliases.
    with open(CRD_DIR / fname) as f:
        for ev in yaml.parse(f):
            assert not isinstance(ev, yaml.AliasEvent), f'alias at {ev.start_mark}'
            assert getattr(ev, 'anchor', None) is None, f'anchor at {ev.start_mark}'


@pytest.mark.parametrize('fname', sorted(EXPECTED))
def test_crd_structure(fname):
    group, version, kind, plural, scope, short, has_status = EXPECTED[fname]
    docs = CRDS[fname]
    assert len(docs) == 1, 'one CRD per file'
    crd = docs[0]
    assert crd['apiVersion'] == 'apiextensions.k8s.io/v1'
    assert crd['kind'] == 'CustomResourceDefinition'
    assert crd['metadata']['name'] == f'{plural}.{group}'
    spec = crd['spec']
    assert spec['group'] == group
    assert spec['scope'] == scope
    names = spec['names']
    assert names['kind'] == kind
    assert names['listKind'] == kind + 'List'
    assert names['plural'] == plural
    assert names['singular'] == kind.lower()
    assert names.get('shortNames') == short
    assert f"{names['plural']}.{spec['group']}" == crd['metadata']['name']
    versions = spec['versions']
    assert [v['name'] for v in versions] == MULTI_VERSION.get(fname, [version])
    assert [v['name'] for v in versions if v['storage']] == [version], 'one storage version'
    for v in versions:
        assert v['served'] is True
        schema = v['schema']['openAPIV3Schema']
        assert schema['type'] == 'object'
        assert schema['properties']['metadata'] == {'type': 'object'}
        assert schema['properties']['apiVersion']['type'] == 'string'
        assert schema['properties']['kind']['type'] == 'string'
        assert 'spec' in schema['properties']
        assert ('status' in schema['properties']) == has_status
        subs = v.get('subresources', {})
        assert ('status' in subs) == has_status, 'status subresource exactly when the schema has a status'
        assert set(subs) <= {'status', 'scale'}
        assert ('scale' in subs) == (kind in SCALE)
        if kind in SCALE:
            assert subs['scale'] == SCALE_PATHS
    labels = crd['metadata'].get('labels', {})
    for k, val in EXPECTED_LABELS.get(group, {}).items():
        assert labels.get(k) == val, f'CRD label {k}: {labels}'


@pytest.mark.parametrize('fname', sorted(EXPECTED))
def test_schema_is_structural(fname):
    for v in crd_of(fname)['spec']['versions']:
        problems = structural_problems(v['schema']['openAPIV3Schema'], '', root=True)
        assert not problems, f'{v["name"]}:\n' + '\n'.join(problems)


@pytest.mark.parametrize('fname', sorted(EXPECTED))
def test_printer_columns(fname):
    crd = crd_of(fname)
    for ver in crd['spec']['versions']:
        seen = set()
        for c in ver.get('additionalPrinterColumns', []):
            assert set(c) <= {'name', 'type', 'jsonPath', 'description', 'priority', 'format'}, c
            assert c['type'] in COLUMN_TYPES, c
            assert c['name'] not in seen, f'duplicate column {c["name"]}'
            seen.add(c['name'])
            assert isinstance(c.get('priority', 0), int)
            why = resolve_json_path(ver['schema']['openAPIV3Schema'], c['jsonPath'])
            assert why is None, f'{ver["name"]}: {c["name"]}: {c["jsonPath"]}: {why}'
    v = [ver for ver in crd['spec']['versions'] if ver['storage']][0]
    cols = v.get('additionalPrinterColumns', [])
    kind = crd['spec']['names']['kind']
    got = {c['name']: (c['jsonPath'], c['type'], c.get('priority', 0)) for c in cols}
    for name, path, typ, prio in EXPECTED_COLUMNS.get(kind, []):
        assert got.get(name) == (path, typ, prio), f'{kind} column {name}: {got.get(name)}'


@pytest.mark.parametrize('kind,path,typ', EXPECTED_FIELDS)
def test_expected_fields_declared(kind, path, typ):
    assert lookup(kind_schema(kind), path)['type'] == typ


@pytest.mark.parametrize('key', sorted(EXPECTED_REQUIRED))
def test_expected_required(key):
    kind, path = key
    assert sorted(lookup(kind_schema(kind), path).get('required', [])) == sorted(EXPECTED_REQUIRED[key])


@pytest.mark.parametrize('key', sorted(EXPECTED_ENUMS))
def test_expected_enums(key):
    kind, path = key
    assert lookup(kind_schema(kind), path).get('enum') == EXPECTED_ENUMS[key]


@pytest.mark.parametrize('key', sorted(EXPECTED_DEFAULTS))
def test_expected_defaults(key):
    kind, path = key
    node = lookup(kind_schema(kind), path)
    assert 'default' in node and node['default'] == EXPECTED_DEFAULTS[key]


def test_free_form_and_nullable_fields():
    nm = kind_schema('NMStateConfig')
    assert lookup(nm, 'spec.config').get('x-kubernetes-preserve-unknown-fields') is True
    assert lookup(nm, 'spec.interfaces').get('minItems') == 1
    assert lookup(kind_schema('Agent'), 'status.conditions[].lastHeartbeatTime').get('nullable') is True
    aci = kind_schema('AgentClusterInstall')
    assert lookup(aci, 'spec.apiVIPs').get('maxItems') == 2
    assert lookup(aci, 'spec.ingressVIPs').get('maxItems') == 2
    assert lookup(kind_schema('InfraEnv'), 'spec.networkDiscoveryDelaySeconds').get('minimum') == 0


# ---- tests: the walker itself -------------------------------------------------

def test_walker_reports_problems():
    ie = kind_schema('InfraEnv')
    good = {'apiVersion': 'agent-install.openshift.io/v1beta1', 'kind': 'InfraEnv',
            'metadata': {'name': 'x', 'anything': {'goes': 1}},
            'spec': {'pullSecretRef': {'name': 'ps'}}}
    assert validate(ie, good) == []
    cases = [
        ({'pullSecretRef': {'name': 'ps'}, 'bogus': 1}, 'spec.bogus: field not declared'),
        ({'pullSecretRef': {'name': 'ps'}, 'proxy': {'httpProxy': 3}}, 'spec.proxy.httpProxy: must be of type string'),
        ({'pullSecretRef': {'name': 'ps'}, 'ipxeScriptType': 'Sometimes'}, 'spec.ipxeScriptType: unsupported value'),
        ({'proxy': {}}, 'spec.pullSecretRef: required value missing'),
        ({'pullSecretRef': {'name': 'ps'}, 'networkDiscoveryDelaySeconds': -1}, 'less than the minimum'),
        ({'pullSecretRef': {'name': 'ps'}, 'kernelArguments': [{'operation': 'append', 'value': 'a b'}]},
         'should match'),
        ({'pullSecretRef': {'name': 'ps'}, 'agentApproval': {'autoApprove': 'yes'}}, 'must be of type boolean'),
        ({'pullSecretRef': {'name': 'ps'}, 'agentLabels': {'a': 1}}, 'spec.agentLabels.a: must be of type string'),
    ]
    for spec, want in cases:
        errs = validate(ie, dict(good, spec=spec))
        assert any(want in e for e in errs), (spec, errs)
    aci = kind_schema('AgentClusterInstall')
    errs = validate(aci, {'spec': {'clusterDeploymentRef': {'name': 'c'}, 'networking': {},
                                   'provisionRequirements': {'controlPlaneAgents': 1},
                                   'apiVIPs': ['a', 'b', 'c']}})
    assert any('at most 2 items' in e for e in errs), errs
    errs = validate(kind_schema('NMStateConfig'), {'spec': {'interfaces': []}})
    assert any('at least 1 items' in e for e in errs), errs
    errs = validate(kind_schema('Agent'), {'spec': {'role': '', 'approved': False},
                                           'status': {'conditions': [{'type': 'A', 'status': 'True',
                                                                      'lastHeartbeatTime': None}]}})
    assert errs == [], errs
    errs = validate(kind_schema('Agent'), {'spec': {'role': '', 'approved': 1}})
    assert any('spec.approved: must be of type boolean' in e for e in errs), errs


# ---- tests: the upstream example manifests ------------------------------------

def conformance_docs():
    if not CONFORMANCE_DIR.is_dir():
        return []
    out = []
    paths = sorted(CONFORMANCE_DIR.glob('*.yaml'))
    if CAPOA_DIR.is_dir():
        paths += sorted(CAPOA_DIR.glob('*.yaml'))
    for path in paths:
        with open(path) as f:
            for i, doc in enumerate(yaml.safe_load_all(f)):
                if doc is not None:
                    out.append((f'{path.name}#{i}', doc))
    return out


CONFORMANCE = conformance_docs()


def test_conformance_dir_present():
    if not CONFORMANCE_DIR.is_dir():
        pytest.skip(f'{CONFORMANCE_DIR} is absent')
    kinds = {doc.get('kind') for _, doc in CONFORMANCE}
    # Every agent-flow kind has at least one example upstream.
    assert {'InfraEnv', 'Agent', 'AgentClusterInstall', 'ClusterDeployment', 'ClusterImageSet',
            'NMStateConfig', 'AgentClassification'} <= kinds


@pytest.mark.parametrize('name,doc', CONFORMANCE or [pytest.param(None, None, marks=pytest.mark.skip(
    reason='conformance manifests absent'))])
def test_upstream_manifest_is_valid_without_pruning(name, doc):
    key = (doc.get('apiVersion'), doc.get('kind'))
    if key in CORE_KINDS:
        pytest.skip('core kind')
    crd = by_kind().get(key)
    assert crd is not None, f'{name}: no CRD for {key}'
    errs = validate(schema_of(crd, doc['apiVersion'].split('/')[-1]), doc)
    assert not errs, f'{name}:\n' + '\n'.join(errs)
