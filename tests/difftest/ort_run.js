// Runs one model under ONNX Runtime (onnxruntime-node, CPU) and writes every
// output as OUTDIR/NAME.npy (float32), like `glowc run --output-dir` ('/' and
// '\\' in a name become '_').
// By default graph optimisations are off and one thread runs: the reference
// should be the plain operators. --optimize turns them all on, as a QDQ model
// needs for DQ -> op -> Q groups to become ORT's int8 kernels (QLinearConv,
// ...); --optimized=FILE then saves the model ORT runs (which kernels it chose).
// --stream=NAME runs the model once per index of NAME's leading axis, that
// slice being the input, and writes each output stacked over the steps;
// --carry=OUT=IN feeds a step's output OUT to the next step as IN (the first
// step's IN is given): `glowc run --stream NAME=FILE --carry OUT=IN`'s
// semantics, so the two are compared step by step from one process each.
// --time=N then runs the first step's feeds N more times (after two warm-up
// runs) and prints "median X ms, min Y ms" as glowc bench does.
// Usage: node ort_run.js MODEL.onnx OUTDIR [--threads=N] [--optimize]
//                        [--optimized=FILE] [--stream=NAME] [--carry=OUT=IN]...
//                        [--time=N] NAME=FILE.npy...
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const {readNpy} = require('./npy.js');
const ARRAYS = {float32: Float32Array, int64: BigInt64Array, bool: Uint8Array};

// Slice k of a tensor's leading axis, as a tensor of the remaining dims.
function slice(t, k) {
  const inner = t.dims.slice(1), n = inner.reduce((a, b) => a * b, 1);
  return new ort.Tensor(t.type, t.data.slice(k * n, (k + 1) * n), inner);
}

// The steps' tensors of one output stacked on a new leading axis.
function stack(ts) {
  const n = ts[0].data.length, data = new ARRAYS[ts[0].type](n * ts.length);
  ts.forEach((t, k) => data.set(t.data, k * n));
  return new ort.Tensor(ts[0].type, data, [ts.length, ...ts[0].dims]);
}

function writeNpy(file, tensor) {
  // int64 outputs (a detector's labels) are written as float32: exact
  // below 2^24, which the testers' integers are.
  if (tensor.type === 'int64')
    tensor = new ort.Tensor('float32', Float32Array.from(tensor.data, Number), tensor.dims);
  if (tensor.type !== 'float32') throw new Error(`output of type ${tensor.type}`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'),
    Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength)]));
}

async function main() {
  const args = process.argv.slice(2);
  const flag = name => {
    const a = args.find(x => x === name || x.startsWith(name + '='));
    return a === undefined ? undefined : a.slice(name.length + 1);
  };
  const all = name => args.filter(a => a.startsWith(name + '=')).map(a => a.slice(name.length + 1));
  const [model, outdir, ...pairs] = args.filter(a => !a.startsWith('--'));
  const so = {intraOpNumThreads: +(flag('--threads') || 1), interOpNumThreads: 1,
              graphOptimizationLevel: flag('--optimize') !== undefined ? 'all' : 'disabled'};
  if (flag('--optimized')) so.optimizedModelFilePath = flag('--optimized');
  const s = await ort.InferenceSession.create(model, so);
  const feeds = {};
  for (const p of pairs) {
    const at = p.indexOf('=');
    feeds[p.slice(0, at)] = readNpy(p.slice(at + 1));
  }
  const streamed = flag('--stream');
  if (streamed !== undefined && !feeds[streamed]) throw new Error(`--stream=${streamed}: no such input given`);
  const carries = all('--carry').map(c => c.split('='));
  const steps = streamed === undefined ? 1 : feeds[streamed].dims[0];
  const outs = Object.fromEntries(s.outputNames.map(n => [n, []]));
  let first = null;
  for (let k = 0; k < steps; k++) {
    const step = streamed === undefined ? feeds : {...feeds, [streamed]: slice(feeds[streamed], k)};
    if (k === 0) first = step;
    const out = await s.run(step);
    for (const n of s.outputNames) outs[n].push(out[n]);
    for (const [o, i] of carries) feeds[i] = out[o];
  }
  for (const name of s.outputNames)
    writeNpy(path.join(outdir, name.replace(/[\/\\]/g, '_') + '.npy'),
             streamed === undefined ? outs[name][0] : stack(outs[name]));
  const iters = +(flag('--time') || 0);
  if (!iters) return;
  for (let i = 0; i < 2; i++) await s.run(first);
  const t = [];
  for (let i = 0; i < iters; i++) {
    const a = process.hrtime.bigint();
    await s.run(first);
    t.push(Number(process.hrtime.bigint() - a) / 1e6);
  }
  t.sort((a, b) => a - b);
  const median = iters % 2 ? t[iters >> 1] : (t[iters / 2 - 1] + t[iters / 2]) / 2;
  console.log(`median ${median.toFixed(3)} ms, min ${t[0].toFixed(3)} ms`);
}
main().catch(e => { console.error('error: ' + e.message); process.exit(1); });
