// Evaluated first in every realm (one QuickJS context), before any author code. It takes away
// what dukpy puts on the global object, installs the only `require` author code gets, defines the
// entry points Python calls (register, start, describe, invoke), and locks the realm down.
//
// Every call starts in a fresh scope (seed 000: steps share state only through ctx): the built-ins
// are frozen (lockDown) so no call can leave anything on a prototype, and every eval that runs
// author code ends in `fresh()`: the module instances dropped (the next call instantiates them
// again from their factories) and the globals the call added deleted. That check has the last
// word in the eval: it runs from the toJSON of the eval's result, which dukpy serialises after the
// job queue has drained, and what it serialises then is plain data (the author's value was copied
// to JSON when it settled), so no author code runs after it. Python keeps the realm only when the
// result says the check passed: after what the check cannot undo (a non-deletable global, a
// frozen, sealed, non-extensible or re-parented global object), or an eval that never got to it
// (it threw), Python replaces the realm before the next call. The check cannot wait for the next
// call: dukpy writes `dukpy` and `call_python` onto the global object before any of our code runs,
// which fails on a non-extensible global and calls a setter an earlier call planted there.
//
// Python evaluates this as `(<this file>)(call_python, bridgeNames, describeDepth)`. dukpy puts `call_python`
// back on the global object on every eval, so hiding it is hygiene, not the boundary: the
// boundary is the Python allow-list of exported names (see sandbox_child.Realm).
(function (host, bridgeNames, describeDepth) {
  'use strict';
  delete globalThis.call_python;
  delete globalThis.dukpy;

  const VIOLATION = 'turbobase.violation';
  const SDK = '@turbobase/extensions';
  const SDK_PROCESS = '@turbobase/extensions/process';
  const KIND = Symbol.for('turbobase.extension.kind');
  const hasOwn = Object.hasOwn;
  const { parse, stringify } = JSON;
  const tagOf = (value) => Object.prototype.toString.call(value);

  // Reported to Python before it is thrown, so an author's try/catch cannot hide it: the whole
  // call fails with SandboxViolation whatever the JavaScript does next.
  function violation(message) {
    host(VIOLATION, message);
    return new Error(message);
  }

  // Present (rather than absent) so feature detection takes the branch that fails loudly.
  // Indirect eval could declare global `let`/`const` bindings, which live outside the global
  // object and so outside what fresh() can clear; a finalization callback would run in a later
  // call with a value from an earlier one.
  const unavailable = {
    fetch: 'no network', XMLHttpRequest: 'no network', WebSocket: 'no network',
    EventSource: 'no network', importScripts: 'no network',
    setTimeout: 'no timers', setInterval: 'no timers', setImmediate: 'no timers',
    clearTimeout: 'no timers', clearInterval: 'no timers', clearImmediate: 'no timers',
    eval: 'code is loaded from the extension\'s files',
    FinalizationRegistry: 'nothing may outlive a call',
  };
  for (const name of Object.keys(unavailable)) {
    const stub = function () {
      throw violation(`${name} is not available in the sandbox (${unavailable[name]})`);
    };
    Object.defineProperty(globalThis, name, { value: stub, writable: true, configurable: true });
  }

  // The one host clock is Date.now(). QuickJS-ng's own `performance` reads the host's monotonic
  // clock (timeOrigin is the host's uptime); this one is Date.now() counted from the realm's start.
  const timeOrigin = Date.now();
  Object.defineProperty(globalThis, 'performance', {
    value: { timeOrigin, now: () => Date.now() - timeOrigin }, writable: true, configurable: true,
  });

  const factories = new Map();
  const modules = new Map();
  let entryId = null;

  // No overwrite: code that breaks out of its wrapper during registration can add a module
  // (which it could do by shipping a sibling anyway) but cannot replace the SDK.
  function register(id, factory) {
    if (entryId !== null || factories.has(id)) {
      throw violation(`module '${id}' cannot be registered here`);
    }
    factories.set(id, harden(factory));  // sloppy code reaches it as arguments.callee
  }

  const dirOf = (id) => (id.includes('/') ? id.slice(0, id.lastIndexOf('/')) : '');

  function resolve(fromId, specifier) {
    if (specifier === SDK || specifier === SDK_PROCESS) return specifier;
    const text = String(specifier);
    if (typeof specifier !== 'string' || !(text.startsWith('./') || text.startsWith('../'))) {
      throw violation(`require('${text}') is not allowed: an extension imports only ${SDK} ` +
        'and relative siblings inside its own directory');
    }
    const parts = fromId.startsWith('@') || !fromId.includes('/') ? [] : dirOf(fromId).split('/');
    for (const part of text.split('/')) {
      if (part === '' || part === '.') continue;
      if (part !== '..') parts.push(part);
      else if (parts.length === 0) throw violation(`'${text}' escapes the extension's directory`);
      else parts.pop();
    }
    const path = parts.join('/');
    const stem = path.replace(/\.[cm]?js$/, '');
    const candidates = [path, `${stem}.ts`, `${stem}.js`, `${path}/index.ts`, `${path}/index.js`];
    for (const candidate of candidates) {
      if (factories.has(candidate)) return candidate;
    }
    throw violation(`'${text}' (imported from ${fromId}) is not a folded sibling of this extension`);
  }

  function makeRequire(fromId) {
    return function require(specifier) {
      return load(resolve(fromId, specifier));
    };
  }

  function load(id) {
    const cached = modules.get(id);
    if (cached) return cached.exports;
    const module = { id, exports: {} };
    modules.set(id, module);
    try {
      factories.get(id).call(module.exports, module.exports, makeRequire(id), module, id, dirOf(id));
    } catch (error) {
      modules.delete(id);
      throw error;
    }
    return module.exports;
  }

  function defaultExport() {
    const exports = load(entryId);
    const isObject = exports !== null && (typeof exports === 'object' || typeof exports === 'function');
    return isObject && hasOwn(exports, 'default') ? exports.default : undefined;
  }

  // The JSON picture of a value that the Python validator reads without running JavaScript.
  // snapshot() recurses, and QuickJS's stack holds ~200 of its frames: past describeDepth
  // (sandbox_child.MAX_DESCRIBE_DEPTH) the picture is refused by name instead.
  const TOO_DEEP = Symbol('too deep');

  function snapshot(value, ancestors) {
    switch (typeof value) {
      case 'function':
        return { $fn: true, async: tagOf(value) === '[object AsyncFunction]' };
      case 'bigint':
      case 'symbol':
        return { $unsupported: typeof value };
      case 'object':
        break;
      default:
        return value;
    }
    if (value === null) return null;
    if (ancestors.has(value)) return { $cycle: true };
    if (ancestors.size >= describeDepth) throw TOO_DEEP;
    ancestors.add(value);
    let out;
    if (Array.isArray(value)) {
      out = Array.from(value, (item) => snapshot(item, ancestors) ?? null);
    } else {
      out = Object.create(null);  // so an author key '__proto__' stays a plain key
      for (const key of Object.keys(value)) {
        const item = snapshot(value[key], ancestors);
        if (item !== undefined) out[key] = item;
      }
    }
    ancestors.delete(value);
    return out;
  }

  function lookup(path) {
    let owner;
    let value = defaultExport();
    const walked = ['default'];
    for (const key of path) {
      if (value === null || (typeof value !== 'object' && typeof value !== 'function')) {
        throw new TypeError(`${walked.join('.')} is ${value === null ? 'null' : typeof value}, ` +
          `so it has no '${key}'`);
      }
      owner = value;
      value = value[key];
      walked.push(String(key));
    }
    return { owner, value, name: walked.join('.') };
  }

  function describe(path) {
    const { value } = lookup(path);
    const isObject = value !== null && typeof value === 'object';
    let picture;
    try {
      picture = snapshot(value, new Set());
    } catch (error) {
      if (error === TOO_DEEP) return lastWord({ tooDeep: true });
      throw error;
    }
    const kind = isObject && typeof value[KIND] === 'string' ? value[KIND] : null;
    return lastWord({ kind, value: picture });
  }

  // What an eval answers Python: `result` (plain data) with `clean`, whether fresh() could clear
  // what the eval left behind. dukpy calls toJSON after the job queue has drained (the author's
  // last chance to run), so nothing runs after the check; an eval that throws never gets here,
  // and Python replaces a realm whose last eval did not answer clean.
  function lastWord(result) {
    return { toJSON: () => ({ ...result, clean: fresh() }) };
  }

  // The author's value as plain JSON, copied when it settles: its toJSON methods and getters run
  // now, in the author's turn, not while dukpy serialises the eval's result after the check.
  function plain(value) {
    const text = stringify(value);
    return text === undefined ? undefined : parse(text);
  }

  function callBridge(name, args) {
    const reply = host(name, ...args);
    // The CPU budget ran out while Python answered: wait here for the timer's next tick,
    // which QuickJS turns into an interrupt the script cannot catch.
    if (reply !== null && typeof reply === 'object' && reply.halt === true) for (;;) { /* */ }
    if (reply !== null && typeof reply === 'object' && hasOwn(reply, 'error')) {
      throw new Error(String(reply.error));
    }
    return reply === null || reply === undefined ? undefined : reply.ok;
  }

  // ctx is JSON from Python plus the bridge: `log` is fire-and-forget, every other bridge
  // function (ctx.query first of all) answers a Promise, as the SDK types promise. In a batch
  // (invokeEach) `gate` closes the bridge once the call is no longer the one in hand; a use
  // after that (from a job the call queued) is refused and marks the call `late`.
  function makeContext(data, gate) {
    const ctx = { ...data };
    const bridge = (name, args) => {
      if (gate !== undefined && !gate.open) {
        gate.late = true;
        throw new Error(`ctx.${name} was used after the call's turn in a batch had ended`);
      }
      return callBridge(name, args);
    };
    for (const name of bridgeNames) {
      ctx[name] = name === 'log'
        ? (...parts) => { bridge('log', parts); }
        : (...args) => {
          try { return Promise.resolve(bridge(name, args)); }
          catch (error) { return Promise.reject(error); }
        };
    }
    return ctx;
  }

  function errorInfo(error) {
    if (error instanceof Error) {
      return { name: String(error.name), message: String(error.message),
        stack: typeof error.stack === 'string' ? error.stack : '' };
    }
    let text;
    try { text = JSON.stringify(error) ?? String(error); } catch (_) { text = String(error); }
    return { name: 'Error', message: `a non-Error value was thrown: ${text}`, stack: '' };
  }

  // The outcome object is what Python gets back: dukpy drains the job queue after the eval and
  // serialises the eval's result after that, so a Promise settled by then is already recorded.
  function invoke(path, args, ctxData) {
    return lastWord(outcomeOf(path, args, ctxData));
  }

  function outcomeOf(path, args, ctxData, gate) {
    const outcome = { state: 'pending' };
    const fail = (error) => { outcome.state = 'rejected'; outcome.error = errorInfo(error); };
    const settle = (value) => {
      try {
        outcome.value = plain(value);
        outcome.state = 'fulfilled';
      } catch (error) {
        fail(error);
      }
    };
    try {
      const target = lookup(path);
      if (typeof target.value !== 'function') throw new TypeError(`${target.name} is not a function`);
      const callArgs = ctxData === null || ctxData === undefined
        ? args : [makeContext(ctxData, gate), ...args];
      const result = Reflect.apply(target.value, target.owner, callArgs);
      const isThenable = result !== null && (typeof result === 'object' || typeof result === 'function')
        && typeof result.then === 'function';
      if (isThenable) Promise.resolve(result).then(settle, fail);
      else settle(result);
    } catch (error) {
      fail(error);
    }
    return outcome;
  }

  // Many rows through one function in one eval (a migration slice's builds): each call in its
  // own fresh scope, as invoke. dukpy runs the job queue only after the eval, so the jobs every
  // call queued run together after the last call: they must not reach a later call or its data.
  // A call after the first that did not settle at once is dropped (its continuation would run
  // beside the earlier calls' jobs); each call's bridge closes when the next call starts, and
  // every bridge closes (and the global is cleared) once more than one call has run, so a job
  // can neither steer nor read another row's call. The batch stops after a call that failed or
  // awaited; a call whose job used its closed bridge is dropped with every call after it (made
  // alone, its job has its bridge). Python makes the calls dropped or not reached alone.
  // Python gets `[clean, ...outcomes]` (the check's answer first, no deeper than invoke's).
  function invokeEach(path, ctxList) {
    const calls = [];
    for (const ctxData of ctxList) {
      if (calls.length > 0) {
        calls[calls.length - 1].gate.open = false;
        if (!fresh()) break;  // the next call would not start clean
      }
      const gate = { open: true, late: false };
      const outcome = outcomeOf(path, [], ctxData, gate);
      if (calls.length > 0 && outcome.state === 'pending') {
        gate.open = false;
        break;
      }
      calls.push({ outcome, gate });
      if (outcome.state !== 'fulfilled') break;
    }
    if (calls.length > 1) {
      for (const call of calls) call.gate.open = false;
      fresh();  // the jobs, run next, find no global the last call left
    }
    return { toJSON: () => [fresh(), ...onTime(calls)] };
  }

  function onTime(calls) {
    const late = calls.findIndex((call) => call.gate.late);
    return (late === -1 ? calls : calls.slice(0, late)).map((call) => call.outcome);
  }

  function start(id) {
    entryId = id;
    load(id);
    return lastWord({});
  }

  // Shared built-ins: frozen, with the properties ordinary code assigns on its own objects
  // (`this.name = 'MyError'`, `obj.toString = …`) turned into accessors that define the property
  // on the object assigned to, as the assignment would have without the freeze. Only on the
  // prototypes such code inherits from: each accessor is live heap, and dukpy collects garbage
  // after every eval, so every object kept costs every call.
  const OVERRIDABLE = ['constructor', 'name', 'message', 'toString', 'toLocaleString', 'valueOf',
    'hasOwnProperty'];
  const OVERRIDDEN_ON = [Object, Function, Array, Error, EvalError, RangeError, ReferenceError,
    SyntaxError, TypeError, URIError, AggregateError, InternalError].map((c) => c.prototype);

  function overridable(proto) {
    for (const name of OVERRIDABLE) {
      const desc = Object.getOwnPropertyDescriptor(proto, name);
      if (!desc || !hasOwn(desc, 'value') || !desc.configurable) continue;
      const { value } = desc;
      const accessor = {  // methods, not function expressions: no prototype object each
        get() { return value; },
        set(next) {
          if (this === proto) throw new TypeError(`Cannot assign to '${name}' of a shared built-in`);
          Object.defineProperty(this, name, { value: next, writable: true, enumerable: true,
            configurable: true });
        },
      };
      Object.freeze(accessor.get);
      Object.freeze(accessor.set);
      Object.defineProperty(proto, name, { get: accessor.get, set: accessor.set,
        enumerable: desc.enumerable, configurable: false });
    }
  }

  // Freeze everything reachable from root (properties, accessors, prototypes); the overridable
  // properties of every prototype are converted first, while they can still be.
  function harden(root) {
    const found = new Set();
    const pending = [root];
    while (pending.length) {
      const value = pending.pop();
      if (value === null || (typeof value !== 'object' && typeof value !== 'function')) continue;
      // A frozen object was hardened before (or is frozen by the spec, with nothing inside):
      // no set of them is kept, as it would be live heap that every eval's collection walks.
      if (value === globalThis || found.has(value) || Object.isFrozen(value)) continue;
      found.add(value);
      pending.push(Object.getPrototypeOf(value));
      for (const key of Reflect.ownKeys(value)) {
        const desc = Object.getOwnPropertyDescriptor(value, key);
        if (hasOwn(desc, 'value')) pending.push(desc.value);
        else pending.push(desc.get, desc.set);
      }
    }
    for (const value of found) Object.freeze(value);
    return root;
  }

  // Intrinsics no global names: reached by syntax or by calling a built-in.
  function hiddenIntrinsics() {
    const found = [
      function* () {}, async function () {}, async function* () {}, () => {},
      [][Symbol.iterator](), new Map()[Symbol.iterator](), new Set()[Symbol.iterator](),
      ''[Symbol.iterator](), /a/[Symbol.matchAll](''), Object.getPrototypeOf(Int8Array),
      (function () { return arguments; })(),
    ];
    try { found.push(Iterator.from({ next() { return { done: true }; } }), [].values().map((x) => x)); }
    catch (_) { /* an engine without iterator helpers */ }
    for (const make of [function* () {}, async function* () {}]) found.push(make());
    return found.map((item) => Object.getPrototypeOf(item));
  }

  let baseline = null;

  // Before anything is hardened (register() hardens the SDK's factory below).
  for (const proto of OVERRIDDEN_ON) overridable(proto);

  function lockDown() {
    for (const key of Reflect.ownKeys(globalThis)) {
      const desc = Object.getOwnPropertyDescriptor(globalThis, key);
      if (hasOwn(desc, 'value')) harden(desc.value);
    }
    for (const intrinsic of hiddenIntrinsics()) harden(intrinsic);
    for (const key of Reflect.ownKeys(globalThis)) {
      const desc = Object.getOwnPropertyDescriptor(globalThis, key);
      if (desc.configurable) {
        Object.defineProperty(globalThis, key, hasOwn(desc, 'value')
          ? { value: desc.value, writable: false, configurable: false }
          : { configurable: false });
      }
    }
    baseline = { keys: new Set(Reflect.ownKeys(globalThis)), proto: Object.getPrototypeOf(globalThis) };
  }

  // A fresh scope for the next call: the modules instantiated again, globals added since the
  // lock-down deleted. False when that is impossible: the realm has to be replaced. Nothing here
  // runs author code (deleting an accessor does not call it; the global object is ordinary).
  function fresh() {
    modules.clear();
    if (!Object.isExtensible(globalThis) || Object.getPrototypeOf(globalThis) !== baseline.proto) {
      return false;
    }
    for (const key of Reflect.ownKeys(globalThis)) {
      if (!baseline.keys.has(key) && !Reflect.deleteProperty(globalThis, key)) return false;
    }
    return true;
  }

  register(SDK_PROCESS, function (exports, require) {
    Object.defineProperty(exports, '__esModule', { value: true });
    exports.defineProcess = require(SDK).defineProcess;
  });
  Object.defineProperty(globalThis, 'require', { value: makeRequire('') });
  Object.defineProperty(globalThis, '__turbobase', {
    value: harden({ register, start, describe, invoke, invokeEach }),
  });
  lockDown();
})
