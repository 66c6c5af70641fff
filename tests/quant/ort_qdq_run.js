// Runs a QDQ model under ONNX Runtime (onnxruntime-node, CPU) with its graph
// optimisations on, so that DQ -> op -> Q groups become its int8 kernels
// (QLinearConv, QLinearAdd, ...), and writes each output as OUTDIR/NAME.npy
// (float32). With OPTIMIZED set, also saves the model ORT runs there (to
// check which kernels it chose).
// Usage: node ort_qdq_run.js MODEL.onnx OUTDIR THREADS NAME=FILE.npy... [--optimized=FILE]
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

function readNpyFloat32(file) {
  const buf = fs.readFileSync(file);
  const hlen = buf.readUInt16LE(8);
  const header = buf.subarray(10, 10 + hlen).toString('latin1');
  if (!/'descr': '<f4'/.test(header) || /'fortran_order': True/.test(header))
    throw new Error(`${file}: not a C-order float32 .npy`);
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(',').filter(s => s.trim()).map(Number);
  const data = buf.subarray(10 + hlen);
  return new ort.Tensor('float32',
    new Float32Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length)), shape);
}

function writeNpy(file, tensor) {
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
  const opt = args.find(a => a.startsWith('--optimized='));
  const [model, outdir, threads, ...pairs] = args.filter(a => a !== opt);
  const so = {intraOpNumThreads: +threads, interOpNumThreads: 1, graphOptimizationLevel: 'all'};
  if (opt) so.optimizedModelFilePath = opt.slice('--optimized='.length);
  const s = await ort.InferenceSession.create(model, so);
  const feeds = {};
  for (const p of pairs) {
    const at = p.indexOf('=');
    feeds[p.slice(0, at)] = readNpyFloat32(p.slice(at + 1));
  }
  const out = await s.run(feeds);
  for (const name of s.outputNames)
    writeNpy(path.join(outdir, name.replace(/[\/\\]/g, '_') + '.npy'), out[name]);
}
main().catch(e => { console.error('error: ' + e.message); process.exit(1); });
