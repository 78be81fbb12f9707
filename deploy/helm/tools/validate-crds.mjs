// The chart's custom resources, which kubeconform has no schema for here: each ServiceMonitor of
// the rendered manifests (stdin, multi-document YAML) against prometheus-operator's CRD schema, as
// @kubernetes-models/prometheus-operator compiles it. Exit 1 on the first invalid one.
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';

const KINDS = { 'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor };
let checked = 0;
for (const doc of parseAllDocuments(readFileSync(0, 'utf8'))) {
  const obj = doc.toJS();
  const Model = obj && KINDS[`${obj.apiVersion}/${obj.kind}`];
  if (!Model) continue;
  try {
    new Model(obj).validate();
  } catch (err) {
    console.error(`${obj.kind} ${obj.metadata?.name}: ${err.message}`);
    process.exit(1);
  }
  checked++;
}
console.log(`custom resources valid: ${checked}`);
