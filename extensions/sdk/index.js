// Local stand-in so authors' tooling resolves the package; the sandbox serves the real module.
'use strict';
const brand = (kind) => (definition) => Object.defineProperty(definition, Symbol.for('turbobase.extension.kind'), { value: kind });
exports.defineProcess = brand('process');
exports.defineHook = brand('hook');
exports.defineConduit = brand('conduit');
