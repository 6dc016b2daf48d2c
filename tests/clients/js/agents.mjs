// @kubernetes/client-node 1.x against agenthub: CustomObjectsApi CRUD on
// Agents, and an informer on Agents with a label selector that must see add,
// update and delete as an object is created, changed and relabelled out of
// the selection.  Usage: node agents.mjs KUBECONFIG NAMESPACE
// Prints one line per step; exits 0 when all pass, 3 when only the
// relabel-out-of-selection DELETED is missing, 1 on any other failure.
import * as k8s from '@kubernetes/client-node';

const [kubeconfigPath, ns] = process.argv.slice(2);
const kc = new k8s.KubeConfig();
kc.loadFromFile(kubeconfigPath);
const api = kc.makeApiClient(k8s.CustomObjectsApi);
const G = { group: 'agent-install.openshift.io', version: 'v1beta1', namespace: ns, plural: 'agents' };
const merge = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

function agent(name, pool) {
  return {
    apiVersion: 'agent-install.openshift.io/v1beta1', kind: 'Agent',
    metadata: { name, namespace: ns, labels: { pool } },
    spec: { approved: false, role: '' },
  };
}

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
  console.log(`ok ${what}`);
}

async function crud() {
  const created = await api.createNamespacedCustomObject({ ...G, body: agent('crud-1', 'x') });
  check(created.metadata.uid && created.metadata.name === 'crud-1', 'create returns the stored object');
  const got = await api.getNamespacedCustomObject({ ...G, name: 'crud-1' });
  check(got.spec.approved === false, 'get');
  const patched = await api.patchNamespacedCustomObject(
    { ...G, name: 'crud-1', body: { spec: { approved: true } } }, merge);
  check(patched.spec.approved === true, 'merge patch');
  const jp = await api.patchNamespacedCustomObject(
    { ...G, name: 'crud-1', body: [{ op: 'add', path: '/metadata/labels/extra', value: 'y' }] });
  check(jp.metadata.labels.extra === 'y', 'json patch (the 1.x default patch type)');
  jp.spec.hostname = 'host-1';
  const replaced = await api.replaceNamespacedCustomObject({ ...G, name: 'crud-1', body: jp });
  check(replaced.spec.hostname === 'host-1', 'replace');
  const list = await api.listNamespacedCustomObject({ ...G, labelSelector: 'pool=x' });
  check(list.items.length === 1 && list.items[0].metadata.name === 'crud-1', 'list with a label selector');
  await api.deleteNamespacedCustomObject({ ...G, name: 'crud-1' });
  let gone = false;
  try {
    await api.getNamespacedCustomObject({ ...G, name: 'crud-1' });
  } catch (e) {
    gone = e.code === 404;
  }
  check(gone, 'delete (then 404)');
}

function waitFor(events, pred, ms) {
  return new Promise((resolve) => {
    const start = Date.now();
    const tick = () => {
      const hit = events.find(pred);
      if (hit) return resolve(hit);
      if (Date.now() - start > ms) return resolve(null);
      setTimeout(tick, 50);
    };
    tick();
  });
}

async function informer() {
  const events = [];
  const path = `/apis/${G.group}/${G.version}/namespaces/${ns}/agents`;
  const inf = k8s.makeInformer(kc, path,
    () => api.listNamespacedCustomObject({ ...G, labelSelector: 'pool=a' }), 'pool=a');
  for (const verb of [k8s.ADD, k8s.UPDATE, k8s.DELETE]) {
    inf.on(verb, (obj) => events.push({ verb, name: obj.metadata.name, pool: obj.metadata.labels?.pool }));
  }
  let informerError = null;
  inf.on(k8s.ERROR, (err) => { informerError = err; });
  await inf.start();
  try {
    await api.createNamespacedCustomObject({ ...G, body: agent('inf-1', 'a') });
    await api.createNamespacedCustomObject({ ...G, body: agent('other', 'b') });
    check(await waitFor(events, (e) => e.verb === k8s.ADD && e.name === 'inf-1', 10000), 'informer sees add');
    await api.patchNamespacedCustomObject({ ...G, name: 'inf-1', body: { spec: { approved: true } } }, merge);
    check(await waitFor(events, (e) => e.verb === k8s.UPDATE && e.name === 'inf-1', 10000), 'informer sees update');
    await api.createNamespacedCustomObject({ ...G, body: agent('inf-2', 'a') });
    check(await waitFor(events, (e) => e.verb === k8s.ADD && e.name === 'inf-2', 10000), 'informer sees a second add');
    await api.deleteNamespacedCustomObject({ ...G, name: 'inf-2' });
    check(await waitFor(events, (e) => e.verb === k8s.DELETE && e.name === 'inf-2', 10000), 'informer sees delete');
    check(!events.some((e) => e.name === 'other'), 'informer never sees an object outside the selection');
    check(informerError === null, `informer reported no error (${informerError})`);
    // Relabelled out of the selection: a watch with a label selector reports
    // the object as DELETED (kube-apiserver's semantics).
    await api.patchNamespacedCustomObject(
      { ...G, name: 'inf-1', body: { metadata: { labels: { pool: 'b' } } } }, merge);
    const del = await waitFor(events, (e) => e.verb === k8s.DELETE && e.name === 'inf-1', 5000);
    if (!del) {
      console.log('RELABEL-DELETE-MISSING: no delete after inf-1 left the selection');
      return 3;
    }
    check(true, 'informer sees delete when the object leaves the selection');
    check(inf.list().every((o) => o.metadata.name !== 'inf-1'), 'the cache no longer holds it');
    return 0;
  } finally {
    await inf.stop();
  }
}

try {
  await crud();
  const rc = await informer();
  process.exit(rc);
} catch (e) {
  console.log(`FAIL ${e.stack || e}`);
  if (e.body) console.log(`body: ${typeof e.body === 'string' ? e.body : JSON.stringify(e.body)}`);
  process.exit(1);
}
