// The import rules of src/, checked by dependency-cruiser on every `npm test`
// (test/architecture.test.ts runs it; `npx depcruise src` prints the same verdict).
//
// Layers, lowest first. A folder may import its own files, the folders of lower layers, and nothing
// else: never a layer above it, never a sibling of its own layer. The same holds one level down
// inside src/server and src/sim. Each folder's README states its place.

/** src/<folder>: the layers of the package. */
export const SRC_LAYERS = [
  ['util'], // no imports from src
  ['core'], // the addon's typed wrappers, the routing vocabulary
  ['engines', 'events', 'preprocess', 'hash-pool'],
  ['routing'],
  ['sim'], // simulated engines and trace replay; the server may embed a simulated fleet
  ['server'],
  ['cli'],
];

/** src/server/<folder>: the server's own layers (all of them inside the `server` layer above). */
export const SERVER_LAYERS = [
  ['call', 'config'], // the neutral HTTP call, bodies and error replies; the configuration schema
  ['observability'],
  ['http', 'openai', 'fleet', 'access', 'dashboard'], // frontends; the OpenAI protocol; workers at runtime; who may call; the live page
  ['replicas', 'discovery'], // router replicas acting as one over NATS; workers discovered from Kubernetes
  ['app'], // the composition root
];

/** src/sim/<folder>. */
export const SIM_LAYERS = [
  ['engine'], // the pure engine model
  ['worker', 'replay'], // the model behind real protocols; the model in virtual time
];

const alt = (names) => names.map((n) => n.replace(/[.-]/g, (c) => `\\${c}`)).join('|');

/** One rule per folder: from it, to any folder of `parent` that is not itself or below it. */
function layerRules(parent, layers, prefix) {
  return layers.flatMap((layer, i) => {
    const below = layers.slice(0, i).flat();
    return layer.map((folder) => ({
      name: `${prefix}${folder}-imports-only-below`,
      comment: `${parent}${folder} may import ${below.length ? below.map((f) => parent + f).join(', ') : `nothing else of ${parent}`} (layers: ${layers.map((l) => l.join('/')).join(' < ')})`,
      severity: 'error',
      from: { path: `^${parent}${folder}/` },
      to: { path: `^${parent}`, pathNot: `^${parent}(${alt([folder, ...below])})/` },
    }));
  });
}

export default {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'no circle of files (type-only imports count too)',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-folder-cycle',
      comment: 'no circle of folders (a folder counts with its sub-folders)',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
    ...layerRules('src/', SRC_LAYERS, 'src-'),
    ...layerRules('src/server/', SERVER_LAYERS, 'server-'),
    ...layerRules('src/sim/', SIM_LAYERS, 'sim-'),
    {
      name: 'binding-only-through-core',
      comment: 'only src/core (and the hash pool worker thread, which cannot import TypeScript) load the native addon',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/core/', '^src/hash-pool/hash-pool\\.worker\\.mjs$'] },
      to: { path: '^native/' },
    },
    {
      name: 'no-unresolvable',
      comment: 'an import that resolves to nothing is a typo or a missing dependency',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    // Packages that declare only `exports` (no `main`), like @nats-io/kv, resolve through it.
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
