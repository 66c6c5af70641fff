// Times ONNX Runtime (onnxruntime-node, CPU) on one model: session creation
// and the first run (printed as "first X ms", from before the session is
// created to the first result, in this process: node's start and loading
// the library are not counted), a warm-up, then ITERS runs; prints
// "median X ms, min Y ms" like glowc bench.
// Usage: node ort_bench.js MODEL.onnx THREADS ITERS [INPUT.npy]
const ort = require('onnxruntime-node');
const {createSession, benchFeeds, median} = require('./ort_session.js');

async function main() {
  const [model, threads, iters, input] = [process.argv[2], +process.argv[3], +process.argv[4], process.argv[5]];
  const t0 = process.hrtime.bigint();
  const s = await createSession(ort, model, threads);
  const feeds = benchFeeds(ort, s, input);
  await s.run(feeds);
  console.log(`first ${(Number(process.hrtime.bigint() - t0) / 1e6).toFixed(1)} ms`);
  for (let i = 0; i < 2; i++) await s.run(feeds);
  const t = [];
  for (let i = 0; i < iters; i++) {
    const a = process.hrtime.bigint();
    await s.run(feeds);
    t.push(Number(process.hrtime.bigint() - a) / 1e6);
  }
  const med = median(t);
  console.log(`median ${med.toFixed(3)} ms, min ${t[0].toFixed(3)} ms`);
}
main().catch(e => { console.error(e.message); process.exit(1); });
