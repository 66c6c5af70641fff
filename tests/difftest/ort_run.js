// Runs one model under ONNX Runtime (onnxruntime-node, CPU) and writes every
// output as OUTDIR/NAME.npy (float32), like `glowc run --output-dir` ('/' and
// '\\' in a name become '_').
// By default graph optimisations are off and one thread runs: the reference
// should be the plain operators. --optimize turns them all on, as a QDQ model
// needs for DQ -> op -> Q groups to become ORT's int8 kernels (QLinearConv,
// ...); --optimized=FILE then saves the model ORT runs (which kernels it chose).
// Usage: node ort_run.js MODEL.onnx OUTDIR [--threads=N] [--optimize]
//                        [--optimized=FILE] NAME=FILE.npy...
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

// Little-endian C-order .npy files of float32, int64 or bool (the kinds
// the testers write).
const KINDS = {'<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array],
               '|b1': ['bool', Uint8Array]};
function readNpy(file) {
  const buf = fs.readFileSync(file);
  const hlen = buf.readUInt16LE(8);
  const header = buf.subarray(10, 10 + hlen).toString('latin1');
  const descr = (header.match(/'descr': '([^']*)'/) || [])[1];
  if (!KINDS[descr] || /'fortran_order': True/.test(header))
    throw new Error(`${file}: not a C-order float32, int64 or bool .npy`);
  const [type, Arr] = KINDS[descr];
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(',').filter(s => s.trim()).map(Number);
  const data = buf.subarray(10 + hlen);
  const copy = data.buffer.slice(data.byteOffset, data.byteOffset + data.length);
  return new ort.Tensor(type, type === 'bool' ? new Uint8Array(copy) : new Arr(copy), shape);
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
  const out = await s.run(feeds);
  for (const name of s.outputNames)
    writeNpy(path.join(outdir, name.replace(/[\/\\]/g, '_') + '.npy'), out[name]);
}
main().catch(e => { console.error('error: ' + e.message); process.exit(1); });
