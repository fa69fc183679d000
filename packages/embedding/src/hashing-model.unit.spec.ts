import { testEmbeddingModel } from '@gm/testing';
import { HashingEmbeddingModel } from './hashing-model.ts';

testEmbeddingModel('hashing double (unit specs only)', async () => new HashingEmbeddingModel());
