// What ort_bench.js and ort_nodes.js share: a CPU session of one model as
// make bench runs ORT (all graph optimisations, sequential, THREADS intra-op
// threads, one inter-op), the feeds of a run (the .npy given, or every input
// filled with 0.5 at its declared shape, symbolic dims as 1), and a median.
const {readNpy} = require('../difftest/npy.js');

function createSession(ort, model, threads, extra = {}) {
  return ort.InferenceSession.create(model, {
    intraOpNumThreads: threads, interOpNumThreads: 1,
    graphOptimizationLevel: 'all', executionMode: 'sequential', ...extra,
  });
}

function benchFeeds(ort, session, input) {
  const meta = session.inputMetadata ? session.inputMetadata[0] : null;
  const feeds = {};
  for (const name of session.inputNames) {
    const dims = meta && meta.shape ? meta.shape.map(d => (typeof d === 'number' ? d : 1)) : null;
    feeds[name] = input ? readNpy(input)
                        : new ort.Tensor('float32', new Float32Array(dims.reduce((a, b) => a * b, 1)).fill(0.5), dims);
  }
  return feeds;
}

// The median of an array of numbers (sorted in place).
function median(t) {
  t.sort((a, b) => a - b);
  const n = t.length;
  return n % 2 ? t[n >> 1] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

module.exports = {createSession, benchFeeds, median};
