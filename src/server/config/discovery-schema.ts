// Where workers are discovered besides the configured ones: Kubernetes pods chosen by a label
// selector (src/server/discovery). Off when absent.
import { Type } from '@sinclair/typebox';
import { defaulted } from './declare.js';
import { cli, text } from './schema-common.js';

/** A namespace name: a DNS label. */
const NAMESPACE = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';

export const KubernetesDiscoverySchema = Type.Object(
  {
    selector: text({
      maxLength: 4096,
      description:
        "Label selector of the engine pods, in Kubernetes' syntax (`app=vllm`, `app in (vllm,sglang),tier!=canary`): each Ready pod it selects is a worker. Required: a selector that picks every pod of the namespace is never meant.",
      ...cli({
        flag: 'discovery-selector',
        arg: 'SELECTOR',
        group: 'Fleet',
        help: "label selector of the engine pods (e.g. 'app=vllm'); each Ready pod is a worker",
      }),
    }),
    namespace: Type.Optional(
      Type.String({
        pattern: NAMESPACE,
        maxLength: 63,
        expected: 'a Kubernetes namespace name (lower-case letters, digits and -)',
        description: "The namespace of the pods (default: the router pod's own in a cluster, else the kubeconfig context's, else `default`).",
        ...cli({
          flag: 'discovery-namespace',
          arg: 'NS',
          group: 'Fleet',
          help: 'namespace of the engine pods',
          defaultHelp: "default: the router pod's own, else the kubeconfig context's, else default",
        }),
      }),
    ),
    kubeconfig: Type.Optional(
      text({
        description:
          'A kubeconfig file to reach the API server with (default: $KUBECONFIG, else the service account of the pod the router runs in, else ~/.kube/config).',
      }),
    ),
    retryBaseMs: defaulted(
      Type.Integer({
        minimum: 10,
        maximum: 60_000,
        default: 1000,
        description: 'First wait before a failed list or watch is tried again; it doubles at each failure in a row.',
      }),
    ),
    retryMaxMs: defaulted(
      Type.Integer({
        minimum: 10,
        maximum: 600_000,
        default: 30_000,
        description: 'Longest wait between tries while the API server cannot be reached (the last known fleet keeps serving).',
      }),
    ),
    watchTimeoutSeconds: defaulted(
      Type.Integer({
        minimum: 1,
        maximum: 86_400,
        default: 300,
        description: 'The API server ends each watch after this long and the router watches again from where it was, so a silently dead connection is noticed.',
      }),
    ),
    startupTimeoutMs: defaulted(
      Type.Integer({
        minimum: 0,
        maximum: 600_000,
        default: 10_000,
        description: 'How long startup waits for the first list of pods; past it the router starts and keeps trying.',
      }),
    ),
  },
  { additionalProperties: false, description: 'Workers from the pods of a Kubernetes namespace (docs/kubernetes.md, "Discovery").' },
);

export const DiscoverySchema = Type.Object(
  { kubernetes: Type.Optional(KubernetesDiscoverySchema) },
  {
    additionalProperties: false,
    description: 'Workers discovered at runtime, beside those of `workers` and the admin API (off when absent).',
    ...cli({
      flag: 'discovery',
      arg: 'SOURCE',
      turnsOn: true,
      group: 'Fleet',
      help: 'discover workers: kubernetes (the Ready pods --discovery-selector picks)',
    }),
  },
);
