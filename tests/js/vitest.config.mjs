// Black-box suite for the packed `retry-wasm` package.
// Meant to run from a consumer project (`.consumer/tests/vitest.config.mjs`)
// where `retry-wasm` resolves to the installed tarball.
import { fileURLToPath } from 'node:url'
import { dirname } from 'node:path'
import { defineConfig } from 'vitest/config'

const here = dirname(fileURLToPath(import.meta.url))

export default defineConfig({
  test: {
    dir: here,
    include: ['**/*.test.js'],
    exclude: ['**/node_modules/**'],
    environment: 'node',
    testTimeout: 10_000,
    hookTimeout: 10_000,
    // Several tests temporarily take over process-level error listeners;
    // keep each file in its own worker and its tests sequential.
    fileParallelism: true,
    sequence: { concurrent: false },
  },
})
