// Preloaded into every memory case (node --import ./engine.mjs): keeps the
// WebAssembly instances made in this process, so lib.mjs reads the memory
// and the value table of the very instance 'retry-wasm' made, whichever of
// its entries made it (Node's is a CommonJS bundle whose glue no other
// module can import). Instances are made by `new WebAssembly.Instance` in
// the glue's initSync; a Proxy keeps `instanceof` and the prototype intact.
const made = [];
WebAssembly.Instance = new Proxy(WebAssembly.Instance, {
  construct(target, args, newTarget) {
    const instance = Reflect.construct(target, args, newTarget);
    made.push(instance);
    return instance;
  },
});
globalThis.__retryWasmInstances = made;
