export * from './port.ts';
export * from './models.ts';
export * from './hashing-model.ts';
export * from './onnx-model.ts';
export * from './threaded-model.ts';
export * from './load-model.ts';
