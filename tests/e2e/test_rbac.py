"""Kubernetes RBAC with the real kubectl: the two personas of the late-binding
flow (config/rbac/personas.yaml, bound as the README shows) sharing one hub,
ServiceAccount tokens from `kubectl create token`, `kubectl auth can-i` and
`whoami`, impersonation, escalation prevention, and 401/403 in
kube-apiserver's words."""

import base64
import hashlib
import hmac
import json
import pathlib
import subprocess
import time
import uuid

import pytest

from conftest import KUBECTL, REPO, status_shape

POOL = "pool"
TENANT = "cluster-a"
CREATOR = f"system:serviceaccount:{TENANT}:creator"
INFRA = f"system:serviceaccount:{POOL}:infra-admin"
AGENTS = "agents.agent-install.openshift.io"
KUBECTLS = sorted(p for p in pathlib.Path("/usr/lib/google-cloud-sdk/bin").glob("kubectl.1.*"))


def agent(name, ns):
    return {"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "Agent",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"approved": False, "role": ""}}


def pull_secret(ns):
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
            "metadata": {"name": "pull-secret", "namespace": ns},
            "stringData": {".dockerconfigjson": '{"auths":{"quay.io":{"auth":"dXNlcjpwYXNz"}}}'}}


def cluster_deployment(ns):
    return {"apiVersion": "hive.openshift.io/v1", "kind": "ClusterDeployment",
            "metadata": {"name": "single-node", "namespace": ns},
            "spec": {"baseDomain": "hive.example.com", "clusterName": "test-cluster",
                     "clusterInstallRef": {"group": "extensions.hive.openshift.io",
                                           "kind": "AgentClusterInstall",
                                           "name": "test-agent-cluster-install",
                                           "version": "v1beta1"},
                     "controlPlaneConfig": {"servingCertificates": {}},
                     "platform": {"agentBareMetal": {"agentSelector": {}}},
                     "pullSecretRef": {"name": "pull-secret"}}}


def agent_cluster_install(ns):
    return {"apiVersion": "extensions.hive.openshift.io/v1beta1", "kind": "AgentClusterInstall",
            "metadata": {"name": "test-agent-cluster-install", "namespace": ns},
            "spec": {"clusterDeploymentRef": {"name": "single-node"},
                     "imageSetRef": {"name": "openshift-v4.9.0"},
                     "networking": {"clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
                                    "machineNetwork": [{"cidr": "192.168.126.0/24"}],
                                    "serviceNetwork": ["172.30.0.0/16"]},
                     "provisionRequirements": {"controlPlaneAgents": 1}}}


class Personas:
    """The module's hub with the README's persona setup done by the admin."""

    def __init__(self, hub):
        self.hub = hub
        k = hub.kubectl
        k("apply", "-f", REPO / "config/rbac/personas.yaml")
        k("create", "namespace", POOL)
        k("create", "namespace", TENANT)
        k("-n", POOL, "create", "serviceaccount", "infra-admin")
        k("-n", POOL, "create", "rolebinding", "infra-admin", "--clusterrole=agenthub-infra-admin",
          f"--serviceaccount={POOL}:infra-admin")
        k("-n", TENANT, "create", "serviceaccount", "creator")
        k("-n", TENANT, "create", "rolebinding", "creator", "--clusterrole=agenthub-cluster-creator",
          f"--serviceaccount={TENANT}:creator")
        k("-n", POOL, "create", "rolebinding", "creator-binds-agents",
          "--clusterrole=agenthub-agent-binder", f"--serviceaccount={TENANT}:creator")
        k("create", "clusterrolebinding", "creator-imagesets",
          "--clusterrole=agenthub-clusterimageset-reader", f"--serviceaccount={TENANT}:creator")
        self.creator = self.token(TENANT, "creator")
        self.infra = self.token(POOL, "infra-admin")

    def token(self, ns, sa, *extra):
        return self.hub.kubectl("-n", ns, "create", "token", sa, *extra).stdout.strip()

    def as_token(self, token, *args, check=True, input=None, binary=None):
        """kubectl with only a token: a kubeconfig without the admin's."""
        return self.hub.kubectl("--token", token, *args, check=check, input=input)


@pytest.fixture(scope="module")
def p(module_hub):
    return Personas(module_hub)


def forbidden(r, message):
    """kubectl failed with a 403 carrying exactly this message (kubectl prints
    "Error from server (Forbidden): ..." or, for create commands,
    "error: failed to create ...: ...")."""
    assert r.returncode != 0, r.stdout
    assert (f"Error from server (Forbidden): {message}" in r.stderr
            or r.stderr.startswith("error: failed to create") and f": {message}" in r.stderr), r.stderr


# --- the two personas ---------------------------------------------------------


def test_creator_binds_pool_agent_and_creates_cluster(p):
    hub = p.hub
    name = str(uuid.uuid4())
    # The infrastructure admin's side: an Agent in the pool (made by the admin
    # here, as a discovered host would be) that the infra admin approves.
    hub.apply_obj(agent(name, POOL))
    r = p.as_token(p.infra, "-n", POOL, "patch", AGENTS, name, "-p",
                   '{"spec":{"approved":true}}', "--type", "merge")
    assert "patched" in r.stdout
    # The cluster creator's side: its pull secret, ClusterDeployment and ACI in
    # its namespace, then the bind of the pool's Agent.
    for obj in (pull_secret(TENANT), cluster_deployment(TENANT), agent_cluster_install(TENANT)):
        p.as_token(p.creator, "apply", "-f", "-", input=json.dumps(obj))
    r = p.as_token(p.creator, "-n", TENANT, "get", "clusterdeployment", "single-node", "-o",
                   "jsonpath={.spec.clusterName}")
    assert r.stdout == "test-cluster"
    r = p.as_token(p.creator, "-n", POOL, "get", "agents", "-o", "name")
    assert f"agent.agent-install.openshift.io/{name}" in r.stdout
    r = p.as_token(p.creator, "-n", POOL, "patch", AGENTS, name, "-p",
                   json.dumps({"spec": {"clusterDeploymentName": {"name": "single-node",
                                                                   "namespace": TENANT}}}),
                   "--type", "merge")
    assert r.stdout.strip() == f"agent.agent-install.openshift.io/{name} patched"
    obj = hub.kubectl_json("-n", POOL, "get", AGENTS, name)
    assert obj["spec"]["clusterDeploymentName"] == {"name": "single-node", "namespace": TENANT}


def test_creator_cannot_read_pool_secrets_nor_delete_infraenvs(p):
    hub = p.hub
    hub.apply_obj(pull_secret(POOL))
    hub.apply_obj({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
                   "metadata": {"name": "myinfraenv", "namespace": POOL},
                   "spec": {"pullSecretRef": {"name": "pull-secret"}}})
    forbidden(p.as_token(p.creator, "-n", POOL, "get", "secret", "pull-secret", check=False),
              f'secrets "pull-secret" is forbidden: User "{CREATOR}" cannot get resource '
              f'"secrets" in API group "" in the namespace "{POOL}"')
    forbidden(p.as_token(p.creator, "-n", POOL, "get", "secrets", check=False),
              f'secrets is forbidden: User "{CREATOR}" cannot list resource "secrets" in API '
              f'group "" in the namespace "{POOL}"')
    forbidden(p.as_token(p.creator, "-n", POOL, "delete", "infraenv", "myinfraenv", check=False),
              f'infraenvs.agent-install.openshift.io "myinfraenv" is forbidden: User "{CREATOR}" '
              f'cannot delete resource "infraenvs" in API group "agent-install.openshift.io" in '
              f'the namespace "{POOL}"')
    r = hub.request("DELETE", f"/apis/agent-install.openshift.io/v1beta1/namespaces/{POOL}/agents",
                    token=p.creator)
    assert r.status == 403, r
    assert r.json()["message"] == (
        f'agents.agent-install.openshift.io is forbidden: User "{CREATOR}" cannot '
        f'deletecollection resource "agents" in API group "agent-install.openshift.io" in '
        f'the namespace "{POOL}"')
    # Cluster-scoped: the wording says so.
    forbidden(p.as_token(p.creator, "get", "namespaces", check=False),
              f'namespaces is forbidden: User "{CREATOR}" cannot list resource "namespaces" in '
              f'API group "" at the cluster scope')
    # Nor does a raw request fare better; the Status names the resource.
    r = p.hub.request("GET", f"/api/v1/namespaces/{POOL}/secrets/pull-secret", token=p.creator)
    assert r.status == 403
    body = r.json()
    status_shape(body, 403, "Forbidden")
    assert body["details"] == {"name": "pull-secret", "group": "", "kind": "secrets"} or \
        body["details"] == {"name": "pull-secret", "kind": "secrets"}, body
    # The infrastructure admin reads its pool's secrets, not the tenant's.
    r = p.as_token(p.infra, "-n", POOL, "get", "secret", "pull-secret", "-o", "name")
    assert r.stdout.strip() == "secret/pull-secret"
    forbidden(p.as_token(p.infra, "-n", TENANT, "get", "secrets", check=False),
              f'secrets is forbidden: User "{INFRA}" cannot list resource "secrets" in API '
              f'group "" in the namespace "{TENANT}"')


def test_can_i_both_ways(p):
    def can_i(*args):
        r = p.as_token(p.creator, "auth", "can-i", *args, check=False)
        return r.returncode, r.stdout.strip()

    assert can_i("patch", AGENTS, "-n", POOL) == (0, "yes")
    assert can_i("create", "clusterdeployments.hive.openshift.io", "-n", TENANT) == (0, "yes")
    assert can_i("get", "secrets", "-n", POOL) == (1, "no")
    assert can_i("delete", "infraenvs.agent-install.openshift.io", "-n", POOL) == (1, "no")
    assert can_i("get", "/version") == (0, "yes")
    # The admin may do anything.
    r = p.hub.kubectl("auth", "can-i", "delete", "secrets", "-n", POOL)
    assert r.stdout.strip() == "yes"
    r = p.hub.kubectl("auth", "can-i", "*", "*", "--all-namespaces")
    assert r.stdout.strip() == "yes"
    # --list: SelfSubjectRulesReview.
    r = p.as_token(p.creator, "auth", "can-i", "--list", "-n", POOL)
    lines = r.stdout.splitlines()
    assert any(l.startswith("agents.agent-install.openshift.io") and "patch" in l for l in lines), r.stdout
    assert not any(l.startswith("secrets ") for l in lines), r.stdout


@pytest.mark.parametrize("kubectl", [None] + [str(k) for k in KUBECTLS],
                         ids=lambda k: pathlib.Path(k).name if k else "default")
def test_whoami_names_the_user(p, kubectl):
    exe = kubectl or KUBECTL
    r = subprocess.run([exe, "--kubeconfig", str(p.hub.kubeconfig), "--token", p.creator,
                        "auth", "whoami", "-o", "json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)["status"]["userInfo"]
    assert info["username"] == CREATOR
    assert info["groups"] == ["system:serviceaccounts", f"system:serviceaccounts:{TENANT}",
                              "system:authenticated"]
    r = subprocess.run([exe, "--kubeconfig", str(p.hub.kubeconfig), "auth", "whoami"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "system:admin" in r.stdout and "system:masters" in r.stdout


# --- tokens ----------------------------------------------------------------------


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def forge(hub, claims, key=None):
    """A token signed with the hub's ServiceAccount key (or another key)."""
    if key is None:
        key = bytes.fromhex((hub.data_dir / "sa.key").read_text().strip())
    head = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64url(json.dumps(claims).encode())
    sig = hmac.new(key, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64url(sig)}"


def claims_of(token):
    body = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))


def test_token_claims_duration_and_bounds(p):
    c = claims_of(p.creator)
    assert c["sub"] == CREATOR
    assert c["aud"] == ["https://kubernetes.default.svc.cluster.local"]
    assert c["exp"] - c["iat"] == 3600
    assert c["kubernetes.io"]["namespace"] == TENANT
    assert c["kubernetes.io"]["serviceaccount"]["name"] == "creator"
    t = p.token(TENANT, "creator", "--duration=2h")
    c = claims_of(t)
    assert c["exp"] - c["iat"] == 7200
    # Longer than the hub grants: shortened to 48 hours.
    c = claims_of(p.token(TENANT, "creator", "--duration=1000h"))
    assert c["exp"] - c["iat"] == 48 * 3600
    r = p.hub.kubectl("-n", TENANT, "create", "token", "creator", "--duration=5m", check=False)
    assert r.returncode != 0
    assert "spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes" in r.stderr
    r = p.hub.kubectl("-n", TENANT, "create", "token", "nobody", check=False)
    assert 'serviceaccounts "nobody" not found' in r.stderr
    # Only those allowed to create serviceaccounts/token get one.
    forbidden(p.as_token(p.creator, "-n", TENANT, "create", "token", "creator", check=False),
              f'serviceaccounts "creator" is forbidden: User "{CREATOR}" cannot create resource '
              f'"serviceaccounts/token" in API group "" in the namespace "{TENANT}"')


def test_expired_forged_and_orphaned_tokens_get_401(p):
    hub = p.hub
    good = claims_of(p.creator)
    now = int(time.time())
    # The forging helper is right: the same claims, re-signed, work.
    assert p.as_token(forge(hub, good), "-n", TENANT, "get", "cd", "-o", "name").returncode == 0
    cases = {
        "expired": forge(hub, {**good, "exp": now - 5, "iat": now - 3605, "nbf": now - 3605}),
        "other key": forge(hub, good, key=b"k" * 32),
        "other audience": forge(hub, {**good, "aud": ["https://example.com"]}),
        "other uid": forge(hub, {**good, "kubernetes.io": {
            "namespace": TENANT, "serviceaccount": {"name": "creator", "uid": str(uuid.uuid4())}}}),
        "garbage": "a.b.c",
    }
    for what, tok in cases.items():
        r = hub.request("GET", f"/apis/hive.openshift.io/v1/namespaces/{TENANT}/clusterdeployments",
                        token=tok)
        assert r.status == 401, (what, r)
        status_shape(r.json(), 401, "Unauthorized")
        r = p.as_token(tok, "-n", TENANT, "get", "cd", check=False)
        assert r.returncode != 0 and "Unauthorized" in r.stderr, (what, r.stderr)
    assert hub.request("GET", "/api", token=False).status == 401
    # A token of a deleted ServiceAccount (even if one of the same name comes back).
    hub.kubectl("-n", TENANT, "create", "serviceaccount", "short-lived")
    hub.kubectl("-n", TENANT, "create", "rolebinding", "short-lived", "--clusterrole=view",
                f"--serviceaccount={TENANT}:short-lived")
    tok = p.token(TENANT, "short-lived")
    assert p.as_token(tok, "-n", TENANT, "get", "cd", "-o", "name").returncode == 0
    hub.kubectl("-n", TENANT, "delete", "serviceaccount", "short-lived")
    r = p.as_token(tok, "-n", TENANT, "get", "cd", check=False)
    assert r.returncode != 0 and "Unauthorized" in r.stderr, r.stderr
    hub.kubectl("-n", TENANT, "create", "serviceaccount", "short-lived")
    r = p.as_token(tok, "-n", TENANT, "get", "cd", check=False)
    assert r.returncode != 0 and "Unauthorized" in r.stderr, r.stderr


# --- impersonation --------------------------------------------------------------


def test_impersonation_for_admins_only(p):
    hub = p.hub
    # The admin acts as the creator, and is then held to the creator's rules.
    r = hub.kubectl("--as", CREATOR, "-n", POOL, "get", "agents", "-o", "name")
    assert r.returncode == 0
    forbidden(hub.kubectl("--as", CREATOR, "-n", POOL, "get", "secrets", check=False),
              f'secrets is forbidden: User "{CREATOR}" cannot list resource "secrets" in API '
              f'group "" in the namespace "{POOL}"')
    r = hub.kubectl("--as", "jane", "--as-group", "pool-admins", "--as-group", "auditors",
                    "auth", "whoami", "-o", "json")
    info = json.loads(r.stdout)["status"]["userInfo"]
    assert info["username"] == "jane"
    assert info["groups"] == ["pool-admins", "auditors", "system:authenticated"]
    # A group binding applies to an impersonated group member.
    hub.kubectl("-n", POOL, "create", "rolebinding", "pool-admins", "--clusterrole=view",
                "--group=pool-admins")
    r = hub.kubectl("--as", "jane", "--as-group", "pool-admins", "-n", POOL, "auth", "can-i",
                    "list", "agents.agent-install.openshift.io")
    assert r.stdout.strip() == "yes"
    r = hub.kubectl("--as", "jane", "-n", POOL, "auth", "can-i", "list",
                    "agents.agent-install.openshift.io", check=False)
    assert r.stdout.strip() == "no"
    # The creator may not impersonate anyone.
    forbidden(p.as_token(p.creator, "--as", "system:admin", "get", "ns", check=False),
              f'users "system:admin" is forbidden: User "{CREATOR}" cannot impersonate resource '
              f'"users" in API group "" at the cluster scope')
    forbidden(p.as_token(p.creator, "--as", INFRA, "-n", POOL, "get", "secrets", check=False),
              f'serviceaccounts "infra-admin" is forbidden: User "{CREATOR}" cannot impersonate '
              f'resource "serviceaccounts" in API group "" in the namespace "{POOL}"')
    # Each impersonated name is checked: users yes, groups no.
    hub.apply_obj({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": "impersonate-users"},
                   "rules": [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"]}]})
    hub.kubectl("-n", TENANT, "create", "serviceaccount", "impersonator")
    hub.kubectl("create", "clusterrolebinding", "impersonator", "--clusterrole=impersonate-users",
                f"--serviceaccount={TENANT}:impersonator")
    imp = p.token(TENANT, "impersonator")
    user = f"system:serviceaccount:{TENANT}:impersonator"
    r = p.as_token(imp, "--as", "jane", "auth", "whoami", "-o", "json")
    assert json.loads(r.stdout)["status"]["userInfo"]["username"] == "jane"
    forbidden(p.as_token(imp, "--as", "jane", "--as-group", "system:masters", "get", "ns",
                         check=False),
              f'groups "system:masters" is forbidden: User "{user}" cannot impersonate resource '
              f'"groups" in API group "" at the cluster scope')


# --- escalation -------------------------------------------------------------------


def test_no_escalation_through_bindings_or_roles(p):
    hub = p.hub
    hub.kubectl("-n", TENANT, "create", "serviceaccount", "tenant-admin")
    hub.kubectl("-n", TENANT, "create", "rolebinding", "tenant-admin", "--clusterrole=admin",
                f"--serviceaccount={TENANT}:tenant-admin")
    tok = p.token(TENANT, "tenant-admin")
    user = f"system:serviceaccount:{TENANT}:tenant-admin"
    # Granting what one holds is fine (view is part of admin) ...
    r = p.as_token(tok, "-n", TENANT, "create", "rolebinding", "viewers", "--clusterrole=view",
                   "--group=viewers")
    assert "created" in r.stdout
    # ... granting cluster-admin is not, in a namespace or cluster-wide.
    r = p.as_token(tok, "-n", TENANT, "create", "rolebinding", "takeover",
                   "--clusterrole=cluster-admin", f"--serviceaccount={TENANT}:tenant-admin",
                   check=False)
    assert r.returncode != 0
    assert (f'rolebindings.rbac.authorization.k8s.io "takeover" is forbidden: user "{user}" '
            f'(groups=["system:serviceaccounts" "system:serviceaccounts:{TENANT}" '
            f'"system:authenticated"]) is attempting to grant RBAC permissions not currently '
            f'held:\n{{APIGroups:["*"], Resources:["*"], Verbs:["*"]}}') in r.stderr, r.stderr
    forbidden(p.as_token(tok, "create", "clusterrolebinding", "takeover",
                         "--clusterrole=cluster-admin", f"--serviceaccount={TENANT}:tenant-admin",
                         check=False),
              f'clusterrolebindings.rbac.authorization.k8s.io is forbidden: User "{user}" cannot '
              f'create resource "clusterrolebindings" in API group "rbac.authorization.k8s.io" at '
              f'the cluster scope')
    # Nor by a Role that holds more, nor by changing a binding's role.
    r = p.as_token(tok, "-n", TENANT, "create", "role", "big", "--verb=*", "--resource=*.*",
                   check=False)
    assert r.returncode != 0 and "attempting to grant RBAC permissions not currently held" in r.stderr
    r = p.as_token(tok, "-n", TENANT, "create", "role", "small", "--verb=get",
                   "--resource=configmaps")
    assert "created" in r.stdout
    r = p.as_token(tok, "-n", TENANT, "patch", "rolebinding", "viewers", "--type=merge", "-p",
                   '{"roleRef":{"name":"cluster-admin"}}', check=False)
    assert r.returncode != 0 and ("attempting to grant" in r.stderr or "cannot change roleRef" in r.stderr)
    assert not p.as_token(tok, "auth", "can-i", "get", "secrets", "-n", POOL, check=False).returncode == 0
    # With `bind` on cluster-admin the same binding is allowed (the admin grants it).
    hub.apply_obj({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": "bind-cluster-admin", "namespace": TENANT},
                   "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
                              "verbs": ["bind"], "resourceNames": ["cluster-admin"]}]})
    hub.kubectl("-n", TENANT, "create", "rolebinding", "tenant-admin-binds", "--role=bind-cluster-admin",
                f"--serviceaccount={TENANT}:tenant-admin")
    r = p.as_token(tok, "-n", TENANT, "create", "rolebinding", "takeover",
                   "--clusterrole=cluster-admin", "--group=ops")
    assert "created" in r.stdout


def test_rbac_objects_checked(p):
    hub = p.hub
    r = hub.apply_obj({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                       "metadata": {"name": "bad", "namespace": TENANT},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Foo", "name": "x"},
                       "subjects": [{"kind": "User", "name": "u"}]}, check=False)
    assert r.returncode != 0
    assert 'roleRef.kind: Unsupported value: "Foo"' in r.stderr
    r = hub.apply_obj({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                       "metadata": {"name": "bad", "namespace": TENANT},
                       "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": []}]}, check=False)
    assert r.returncode != 0
    assert "rules[0].verbs: Required value" in r.stderr
    hub.kubectl("-n", TENANT, "create", "rolebinding", "fixed", "--clusterrole=view", "--user=u")
    r = hub.kubectl("-n", TENANT, "patch", "rolebinding", "fixed", "--type=merge", "-p",
                    '{"roleRef":{"name":"edit"}}', check=False)
    assert r.returncode != 0 and "cannot change roleRef" in r.stderr


def test_default_roles_and_discovery(p):
    hub = p.hub
    names = hub.kubectl("get", "clusterroles", "-o", "name").stdout.split()
    for n in ("cluster-admin", "admin", "edit", "view", "system:discovery",
              "system:public-info-viewer", "system:basic-user"):
        assert f"clusterrole.rbac.authorization.k8s.io/{n}" in names
    crb = hub.kubectl_json("get", "clusterrolebinding", "cluster-admin")
    assert crb["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                "name": "system:masters"}]
    # Aggregation: a new role labelled aggregate-to-view widens view (and edit, admin).
    hub.apply_obj({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": "view-widgets",
                                "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
                   "rules": [{"apiGroups": [""], "resources": ["widgets"], "verbs": ["get"]}]})
    hub.kubectl("-n", TENANT, "create", "rolebinding", "agg-admin", "--clusterrole=admin",
                "--user=agg-user")
    r = hub.kubectl("--as", "agg-user", "-n", TENANT, "auth", "can-i", "get", "widgets")
    assert r.stdout.strip() == "yes"
    r = hub.kubectl("--as", "agg-user", "-n", TENANT, "auth", "can-i", "delete", "widgets", check=False)
    assert r.stdout.strip() == "no"
    # Any authenticated user may discover the API and read the persona kinds' schemas.
    for path in ("/api", "/apis", "/apis/agent-install.openshift.io/v1beta1", "/version",
                 "/openapi/v3"):
        r = hub.request("GET", path, token=p.creator)
        assert r.status == 200, (path, r)
    r = p.as_token(p.creator, "api-resources", "--api-group=rbac.authorization.k8s.io", "-o", "name")
    assert "rolebindings.rbac.authorization.k8s.io" in r.stdout.split()


def test_default_serviceaccount_per_namespace(p):
    hub = p.hub
    hub.kubectl("create", "namespace", "fresh-ns")
    sa = hub.kubectl_json("-n", "fresh-ns", "get", "serviceaccount", "default")
    assert sa["metadata"]["name"] == "default" and sa["metadata"]["uid"]
    # Its token authenticates (and, with no binding, may only discover).
    tok = p.token("fresh-ns", "default")
    r = p.as_token(tok, "auth", "whoami", "-o", "json")
    assert json.loads(r.stdout)["status"]["userInfo"]["username"] == "system:serviceaccount:fresh-ns:default"
    forbidden(p.as_token(tok, "-n", "fresh-ns", "get", "configmaps", check=False),
              'configmaps is forbidden: User "system:serviceaccount:fresh-ns:default" cannot list '
              'resource "configmaps" in API group "" in the namespace "fresh-ns"')
    # Namespaces made with apply get one too.
    hub.apply_obj({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "applied-ns"}})
    assert hub.kubectl_json("-n", "applied-ns", "get", "sa", "default")["metadata"]["name"] == "default"


@pytest.mark.parametrize("kubectl", [str(k) for k in KUBECTLS], ids=lambda k: pathlib.Path(k).name)
def test_can_i_and_create_token_with_each_kubectl(p, kubectl):
    """kubectl 1.27-1.31 send these requests as JSON, 1.32+ as protobuf."""
    base = [kubectl, "--kubeconfig", str(p.hub.kubeconfig)]

    def run(*args):
        return subprocess.run(base + list(args), capture_output=True, text=True, timeout=60)

    r = run("--token", p.creator, "auth", "can-i", "patch", AGENTS, "-n", POOL)
    assert (r.returncode, r.stdout.strip()) == (0, "yes"), r.stderr
    r = run("--token", p.creator, "auth", "can-i", "get", "secrets", "-n", POOL)
    assert (r.returncode, r.stdout.strip()) == (1, "no"), r.stderr
    r = run("-n", TENANT, "create", "token", "creator", "--duration=15m")
    assert r.returncode == 0, r.stderr
    c = claims_of(r.stdout.strip())
    assert c["exp"] - c["iat"] == 900 and c["sub"] == CREATOR
    name = "rb-" + pathlib.Path(kubectl).name.replace(".", "-")
    r = run("-n", TENANT, "create", "rolebinding", name, "--clusterrole=view", "--user=someone")
    assert r.returncode == 0, r.stderr
    rb = p.hub.kubectl_json("-n", TENANT, "get", "rolebinding", name)
    assert rb["roleRef"]["name"] == "view" and rb["subjects"][0]["name"] == "someone"
