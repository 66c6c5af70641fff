// Reads the .npy files the testers write, for the ORT runners (ort_run.js,
// ../bench/ort_bench.js): one reader, so that both take the same kinds.
const fs = require('fs');
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

module.exports = {readNpy};
