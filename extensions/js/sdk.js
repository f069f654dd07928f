// The `@turbobase/extensions` module as the sandbox serves it: a CommonJS module body, registered
// by runtime.js before any author code. `define*` returns the author's object untouched (so the
// loader sees exactly what was written) and brands it with its kind on a non-enumerable symbol,
// which is how the loader tells a process from a hook or a conduit without trusting an `id` or
// a `kind` field the author typed.
'use strict';
Object.defineProperty(exports, '__esModule', { value: true });

const KIND = Symbol.for('turbobase.extension.kind');

function definer(kind, name) {
  return function (definition) {
    if (definition === null || typeof definition !== 'object' || Array.isArray(definition)) {
      throw new TypeError(name + '() expects an object literal');
    }
    Object.defineProperty(definition, KIND, { value: kind, enumerable: false });
    return definition;
  };
}

exports.defineProcess = definer('process', 'defineProcess');
exports.defineHook = definer('hook', 'defineHook');
// Conduits are refused at deploy (not here): the loader reports the kind and the deploy
// validator says, in a sentence, that conduits are not supported on this instance yet.
exports.defineConduit = definer('conduit', 'defineConduit');
exports.KIND = KIND;
