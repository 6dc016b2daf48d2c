"""The JavaScript client (@kubernetes/client-node 1.x, installed by
scripts/install-deps.sh from tests/clients/js/package-lock.json) against the
hub: CustomObjectsApi CRUD on Agents and an informer with a label selector
(tests/clients/js/agents.mjs does the work; this drives it)."""

import shutil
import subprocess

import pytest

from conftest import REPO

JS_DIR = REPO / "tests" / "clients" / "js"


def test_client_node_crud_and_informer(module_hub):
    node = shutil.which("node")
    assert node, "node is not installed (scripts/install-deps.sh installs nodejs)"
    assert (JS_DIR / "node_modules" / "@kubernetes" / "client-node").is_dir(), \
        "run scripts/install-deps.sh: it installs the JS client from the lockfile"
    ns = module_hub.create_namespace("js-client")
    r = subprocess.run([node, "agents.mjs", str(module_hub.kubeconfig), ns], cwd=JS_DIR,
                       capture_output=True, text=True, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    for step in ("create returns the stored object", "merge patch", "json patch", "replace",
                 "list with a label selector", "delete (then 404)", "informer sees add",
                 "informer sees update", "informer sees delete"):
        assert f"ok {step}" in out, out
