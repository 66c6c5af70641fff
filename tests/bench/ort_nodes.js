// ONNX Runtime's own per-node profile of one model (onnxruntime-node, CPU),
// for setting glowc's per-node rows (glowc bench --per-node) beside ORT's:
// runs a warm-up, then ITERS profiled runs, and prints one line per node
// "KERNEL_US OP NAME" with the median over the runs of that node's
// kernel time in microseconds, largest first, then "total X us"; with
// --min, the least of the runs instead (the statistic of glowc bench
// --per-node's "min" column and of bench_conv/bench_qconv: set medians
// beside medians and minima beside minima, never one beside the other).
// Usage: node ort_nodes.js MODEL.onnx THREADS ITERS [INPUT.npy] [--min]
const ort = require('onnxruntime-node');
const fs = require('fs');
const os = require('os');
const path = require('path');
const {createSession, benchFeeds, median} = require('./ort_session.js');

async function main() {
  const args = process.argv.slice(2).filter(a => a !== '--min');
  const least = args.length !== process.argv.length - 2;
  const [model, threads, iters, input] = [args[0], +args[1], +args[2], args[3]];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ort-nodes-'));
  const s = await createSession(ort, model, threads,
                                {enableProfiling: true, profileFilePrefix: path.join(dir, 'p')});
  const feeds = benchFeeds(ort, s, input);
  for (let i = 0; i < 3; i++) await s.run(feeds);
  for (let i = 0; i < iters; i++) await s.run(feeds);
  s.endProfiling();
  // The binding returns nothing; ORT names the file PREFIX_DATE.json.
  const files = fs.readdirSync(dir).filter(f => f.endsWith('.json'));
  if (files.length !== 1) throw new Error(`ort_nodes: no profile written in ${dir}`);
  const events = JSON.parse(fs.readFileSync(path.join(dir, files[0])));
  // Kernel events: one per node per run; the last ITERS runs are the
  // measured ones (the warm-up's come first in the file).
  const per = new Map();
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const name = e.name.slice(0, -'_kernel_time'.length);
    if (!per.has(name)) per.set(name, {op: (e.args && e.args.op_name) || '?', t: []});
    per.get(name).t.push(e.dur);
  }
  const rows = [];
  let total = 0;
  for (const [name, v] of per) {
    const runs = v.t.slice(-iters);
    const med = least ? Math.min(...runs) : median(runs);
    rows.push([med, v.op, name]);
    total += med;
  }
  rows.sort((a, b) => b[0] - a[0] || (a[2] < b[2] ? -1 : 1));
  for (const r of rows) console.log(`${r[0].toFixed(1).padStart(9)} ${r[1]} ${r[2]}`);
  console.log(`total ${total.toFixed(1)} us over ${rows.length} nodes`);
  fs.rmSync(dir, {recursive: true, force: true});
}
main().catch(e => { console.error(e.message); process.exit(1); });
