"""The README's walk-throughs run as written: every ```sh block from "A kubectl
walk-through" up to "`agenthub serve`", in order, in one bash (set -euo
pipefail), against a fresh hub.  The only adaptation is the directory layout,
made mechanically: the script runs in a scratch directory where `data` is the
hub's data directory (so data/kubeconfig names the hub's port), `build` the
build directory and `../shared` the shared directory, exactly the layout of a
checkout after `make run`.  Background jobs the blocks start (simulators, a
watch) are stopped at the end with the script's process group."""
import os
import re
import signal
import subprocess

import pytest

from conftest import BUILD, KUBECTL, REPO, SANITIZER_MARKERS, SHARED

README = REPO / "README.md"


def walkthrough_script():
    text = README.read_text()
    start = text.index("## A kubectl walk-through")
    end = text.index("## `agenthub serve`")
    blocks = re.findall(r"^```sh\n(.*?)^```", text[start:end], re.S | re.M)
    assert len(blocks) >= 4, "the walk-throughs' shell blocks"
    return blocks


def test_readme_walkthroughs_run_as_written(hub, tmp_path):
    if not (SHARED / "conformance" / "upstream-crs").is_dir():
        pytest.skip("conformance manifests not available")
    blocks = walkthrough_script()
    work = tmp_path / "checkout"
    work.mkdir()
    (work / "data").symlink_to(hub.data_dir)
    (work / "build").symlink_to(BUILD)
    # The repository's own manifests the walk-throughs apply (config/rbac/...).
    (work / "config").symlink_to(REPO / "config")
    (tmp_path / "shared").symlink_to(SHARED)
    script = tmp_path / "walkthrough.sh"
    script.write_text("set -euo pipefail\nset -x\n" + "\n".join(blocks))
    env = dict(os.environ, HOME=str(tmp_path), PATH=f"{os.path.dirname(KUBECTL)}:{os.environ['PATH']}")
    env.pop("KUBECONFIG", None)
    out_path = tmp_path / "walkthrough.out"
    with open(out_path, "w") as out:
        p = subprocess.Popen(["bash", str(script)], cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT,
                             start_new_session=True)
        try:
            rc = p.wait(timeout=600)
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            if p.poll() is None:
                p.kill()
                p.wait(10)
    text = out_path.read_text(errors="replace")
    assert rc == 0, f"walk-through failed (rc {rc}); the end of its output:\n{text[-6000:]}"
    for m in SANITIZER_MARKERS:
        assert m not in text, text[-6000:]
    # What the comments promise shows in the output.
    assert re.search(r"^0479107b-3436-45d3-83a8-cb9a1dc4fb9e\s+test-multinode\s+true", text, re.M), text[-6000:]
    assert len(re.findall(r"^\S+\s+known-unbound\s+false\s+<none>", text, re.M)) >= 3
    assert re.search(r"^\S+\s+known-unbound\s+true\s+<none>", text, re.M)
    assert re.search(r"^\S+\s+\S+\s+\S+\s+single-node\s+master$", text, re.M)
    assert re.search(r"^test-agent-cluster-install\s+adding-hosts$", text, re.M)
    assert re.search(r"server: https://api\.test-cluster\.hive\.example\.com:6443", text)
    assert "\nUnbindingPendingUserAction+ kubectl" in text or "\nUnbound+ kubectl" in text
    assert len(re.findall(r"^\S+\s+known-unbound\s+Unbound$", text, re.M)) >= 2
    # Cluster API: the Machine with its provider ID and node, the kubeconfig's server.
    assert re.search(r"^test-sno-[a-z0-9]{5}\s+metal3://test-capi/sim-18-0/test-sno-[a-z0-9]{5}\s+sim-18-0$",
                     text, re.M), text[-6000:]
    assert "server: https://api.test-sno.lab.home:6443" in text
